"""schemas/profiles.py: what an observation body may say, and how its value is keyed."""

from __future__ import annotations

import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from schemas.profiles import ConfirmBody, ObservationBatchCreate, ObservationCreate, ProfileEntryRead

MINIMAL = {"dimension": "preference", "key": "brand", "value": "ThinkPad", "session_id": "s-1"}


def obs(**changes: Any) -> ObservationCreate:
    return ObservationCreate.model_validate({**MINIMAL, **changes})


def test_defaults_of_a_minimal_observation() -> None:
    o = obs()
    assert (o.domain, o.polarity, o.context, o.stance, o.source) == (None, "like", "default", "supports", "model")
    assert (o.explicit, o.confirmation, o.observed_at, o.note, o.weight) == (False, False, None, None, 1.0)


@given(st.text(alphabet="aeiouCé\u0301 ", min_size=1, max_size=50).filter(lambda s: s.strip()))
def test_value_is_stripped_and_nfc_so_equal_text_is_one_entry(text: str) -> None:
    nfd = obs(value=f"  {unicodedata.normalize('NFD', text)}  ").value
    nfc = obs(value=unicodedata.normalize("NFC", text)).value
    assert nfd == nfc == unicodedata.normalize("NFC", text.strip())


@pytest.mark.parametrize(
    "changes",
    [
        {"value": "x" * 201},
        {"value": "a\x00b"},
        {"dimension": "mood"},
        {"polarity": "love"},
        {"stance": "maybe"},
        {"source": "rumour"},
        {"weight": 0},
        {"weight": 1.5},
        {"weight": float("nan")},
        {"key": "has space"},
        {"session_id": ""},
        {"domain": "a/b"},
        {"observed_at": "2026-09-01T08:30:00"},
        {"observed_at": 0},
        {"note": "n" * 2001},
        {"colour": "red"},
    ],
)
def test_observation_refuses(changes: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        obs(**changes)


def test_a_blank_value_is_refused() -> None:
    with pytest.raises(ValidationError):
        obs(value="   ")


def test_observation_accepts_the_edges() -> None:
    o = obs(value="x" * 200, weight=1, note="n" * 2000, observed_at="2026-09-01T08:30:00+02:00", domain="laptop")
    assert o.observed_at == datetime(2026, 9, 1, 6, 30, tzinfo=UTC)
    assert len(o.value) == 200


def test_a_batch_needs_at_least_one_observation() -> None:
    with pytest.raises(ValidationError):
        ObservationBatchCreate.model_validate({"observations": []})
    assert len(ObservationBatchCreate.model_validate({"observations": [MINIMAL]}).observations) == 1


def test_confirm_body_defaults_to_the_operator_session() -> None:
    body = ConfirmBody.model_validate({})
    assert (body.session_id, body.context, body.note) == ("operator", "operator", None)
    with pytest.raises(ValidationError):
        ConfirmBody.model_validate({"session": "x"})


def test_examples_in_the_schema_are_valid_bodies() -> None:
    for model in (ObservationCreate, ObservationBatchCreate, ConfirmBody):
        for example in model.model_config["json_schema_extra"]["examples"]:  # type: ignore[index]
            model.model_validate(example)


def test_entry_read_has_no_evidence_ids_unless_given() -> None:
    now = datetime(2026, 9, 1, tzinfo=UTC)
    row = {
        "id": uuid.uuid4(),
        "user_id": "u",
        "domain": None,
        "dimension": "goal",
        "key": "k",
        "value": "v",
        "polarity": "like",
        "tier": "current",
        "status": "active",
        "score": 0.0,
        "breakdown": {},
        "explicit": False,
        "evidence_count": 1,
        "current_session_id": "s",
        "confirmed_at": None,
        "first_evidence_at": now,
        "last_evidence_at": now,
        "last_supported_at": None,
        "expires_at": None,
        "created_at": now,
        "updated_at": now,
    }
    assert ProfileEntryRead.model_validate(row).evidence_ids is None
    with pytest.raises(ValidationError):
        ProfileEntryRead.model_validate({**row, "tier": "forever"})
