"""schemas/common.py: the field types every request body is built from."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError

from schemas.common import (
    EARLIEST,
    LATEST,
    MAX_JSON_DEPTH,
    Confidence,
    DateTime,
    Identifier,
    JsonValue,
    Problem,
    ReadModel,
    SafeText,
    SlotKey,
    StrictModel,
    check_datetime_range,
    check_json,
    check_nonblank,
    check_rfc3339,
    check_text,
    to_nfc,
)


@pytest.mark.parametrize(("bad", "what"), [("a\x00b", "NUL bytes"), ("x\ud800", "unpaired surrogate")])
def test_check_text_refuses_what_postgresql_cannot_store(bad: str, what: str) -> None:
    with pytest.raises(ValueError, match=what):
        check_text(bad)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")))
def test_check_text_returns_any_storable_text_unchanged(value: str) -> None:
    assert check_text(value) is value


@given(st.text())
def test_to_nfc_is_idempotent_and_merges_nfd(value: str) -> None:
    nfc = to_nfc(value)
    assert to_nfc(nfc) == nfc
    assert to_nfc(unicodedata.normalize("NFD", value)) == nfc


def test_to_nfc_makes_cafe_one_string() -> None:
    assert to_nfc("Cafe\u0301") == "Café"


@pytest.mark.parametrize("blank", ["", " ", "\t\n ", "\u3000"])
def test_check_nonblank_refuses_whitespace_only(blank: str) -> None:
    with pytest.raises(ValueError, match="non-whitespace"):
        check_nonblank(blank)
    assert check_nonblank(" x ") == " x "


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_check_json_bounds_nesting_at_max_depth() -> None:
    assert check_json(nested(MAX_JSON_DEPTH)) == nested(MAX_JSON_DEPTH)
    with pytest.raises(ValueError, match=f"deeper than {MAX_JSON_DEPTH}"):
        check_json(nested(MAX_JSON_DEPTH + 1))


@pytest.mark.parametrize(
    "bad",
    [float("nan"), float("inf"), [1, float("-inf")], {"a": {"b": float("nan")}}, {"k\x00": 1}, ["\ud800"]],
)
def test_check_json_refuses_non_finite_numbers_and_bad_text_anywhere(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"finite|NUL|surrogate"):
        check_json(bad)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text("ab "),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("xyz", max_size=3), inner, max_size=3),
        max_leaves=20,
    )
)
def test_check_json_accepts_every_shallow_finite_document(value: Any) -> None:
    assert check_json(value) == value


@pytest.mark.parametrize("bad", [0, 1700000000, "1700000000", "yesterday", "2026-09-01", None])
def test_check_rfc3339_refuses_numbers_and_dates_without_time(bad: Any) -> None:
    with pytest.raises(ValueError, match="RFC 3339"):
        check_rfc3339(bad)


@pytest.mark.parametrize("good", ["2026-09-01T12:00:00Z", "2026-09-01t12:00:00+02:00", "2026-09-01 12:00:00Z"])
def test_check_rfc3339_lets_date_times_through(good: str) -> None:
    assert check_rfc3339(good) == good


def test_check_datetime_range_is_half_open() -> None:
    assert check_datetime_range(EARLIEST) == EARLIEST
    with pytest.raises(ValueError, match="between 1900"):
        check_datetime_range(EARLIEST - timedelta(microseconds=1))
    with pytest.raises(ValueError, match="between 1900"):
        check_datetime_range(LATEST)
    just_before = LATEST - timedelta(microseconds=1)
    assert check_datetime_range(just_before) == just_before


def test_check_datetime_range_does_not_overflow_at_datetime_min() -> None:
    # 0001-01-01T00:00:00+14:00 is before datetime.min in UTC: refused, not an OverflowError.
    with pytest.raises(ValueError, match="between 1900"):
        check_datetime_range(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))))


def test_datetime_field_needs_a_time_zone_and_rfc3339() -> None:
    adapter: TypeAdapter[datetime] = TypeAdapter(DateTime)
    assert adapter.validate_python("2026-09-01T12:00:00Z") == datetime(2026, 9, 1, 12, tzinfo=UTC)
    for bad in ("2026-09-01T12:00:00", 0, "1899-12-31T23:59:59Z"):
        with pytest.raises(ValidationError):
            adapter.validate_python(bad)


@pytest.mark.parametrize(
    ("annotation", "good", "bad"),
    [
        (Identifier, ["a", "alice@example.com", "s-7.x:y_z", "a" * 128], ["", "a b", "a/b", "a" * 129, "é"]),
        (SlotKey, ["brand", "a/b", "k" * 200], ["", "a b", "k" * 201]),
        (Confidence, [0, 0.5, 1], [-0.01, 1.01, float("nan")]),
        (SafeText, ["", "ok"], ["a\x00"]),
    ],
)
def test_field_types_accept_and_refuse(annotation: Any, good: list[Any], bad: list[Any]) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    for value in good:
        assert adapter.validate_python(value) == value
    for value in bad:
        with pytest.raises(ValidationError):
            adapter.validate_python(value)


def test_json_value_field_runs_the_check() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(JsonValue)
    assert adapter.validate_python({"a": [1, 2.5]}) == {"a": [1, 2.5]}
    with pytest.raises(ValidationError, match="finite"):
        adapter.validate_python({"a": float("nan")})


def test_strict_model_refuses_unknown_fields_read_model_reads_attributes() -> None:
    class Body(StrictModel):
        name: str

    with pytest.raises(ValidationError, match="extra"):
        Body.model_validate({"name": "x", "nmae": "typo"})

    class Row(ReadModel):
        name: str

    class Obj:
        name = "from an attribute"

    assert Row.model_validate(Obj()).name == "from an attribute"


def test_problem_keeps_extra_members() -> None:
    p = Problem.model_validate({"type": "t", "title": "T", "status": 422, "detail": "d", "errors": [1]})
    assert p.instance is None
    dumped = p.model_dump()
    assert dumped["errors"] == [1]
    assert isinstance(p, BaseModel)
