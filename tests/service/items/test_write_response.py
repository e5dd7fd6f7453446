"""The write routes serialise what they stored without building the response models (service.items.service
``Written``): the bytes must be those the models give, for every shape an item and its resolution can take,
and the derived levels' token counts must be those of counting every level (equal texts counted once)."""

# ruff: noqa: RUF001 - the Chinese sample text uses fullwidth punctuation on purpose.

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.ingest import generate_item
from schemas.items import ItemBatchResult
from scoring.compress import assemble_levels, derive_row_levels
from service.items import service
from service.items.service import Written, attach_levels, read_data
from service.tokenizer import build_tokenizer
from tests.conftest import TenantKeys


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Written]:
    """Every ``Written`` the routes serialise."""
    seen: list[Written] = []
    real = service.write_items

    async def spy(*args: Any, **kwargs: Any) -> Written:
        written = await real(*args, **kwargs)
        seen.append(written)
        return written

    monkeypatch.setattr(service, "write_items", spy)
    return seen


def _model_json(written: Written) -> bytes:
    return ItemBatchResult(items=written.read()).model_dump_json().encode()


def _varied_items() -> list[dict[str, Any]]:
    """Items of every shape: generated ones (bench.ingest's mix of prose, Chinese, JSON tool results, keys,
    values, scopes, variants, times) and the edges — a slot won, lost, reinforced and overridden inside the
    batch, integer confidence, huge integers and floats in values, partial and full variants."""
    rng = random.Random(17)
    anchor = datetime(2026, 9, 1, 12, tzinfo=UTC)
    items = [generate_item(rng, anchor) for _ in range(300)]
    items += [
        {"type": "preference", "content": "Prefers tea.", "key": "drink", "value": "tea", "source": "user"},
        {"type": "preference", "content": "Prefers coffee.", "key": "drink", "value": "coffee", "source": "model"},
        {"type": "preference", "content": "Prefers tea!", "key": "drink", "value": "tea", "source": "user"},
        {"type": "preference", "content": "Prefers water.", "key": "drink", "value": "water", "source": "user"},
        {
            "type": "preference",
            "content": "In this session: juice.",
            "key": "drink",
            "value": "juice",
            "scope": "session",
            "session_id": "s-1",
        },
        {"type": "fact", "content": "Exactly one.", "confidence": 1, "value": {"n": 10**30, "x": 0.1, "y": 1e-7}},
        {"type": "fact", "content": "Zero.", "confidence": 0, "value": [1, 2.5, None, True, "😀"]},
        {"type": "fact", "content": "Some variants. " * 20, "variants": {"summary": "Some."}},
        {
            "type": "fact",
            "content": "All variants. " * 20,
            "variants": {"condensed": "All variants, condensed.", "summary": "All.", "index": "all"},
        },
        {
            "type": "episode",
            "content": "用户住在上海，平时骑自行车上班。" * 12,
            "observed_at": "2026-08-01T10:00:00+02:00",
        },
    ]
    return items


async def test_a_batch_response_is_the_models_json_byte_for_byte(
    client: httpx.AsyncClient, tenant: TenantKeys, captured: list[Written]
) -> None:
    body = {"items": _varied_items()}
    r = await client.post(
        "/v1/users/shapes/items/batch", json=body, headers={**tenant.agent, "Idempotency-Key": "shapes-1"}
    )
    assert r.status_code == 201, r.text
    (written,) = captured
    assert r.content == _model_json(written)
    outcomes = {i["resolution"]["outcome"] for i in r.json()["items"]}
    assert {"new", "replaced", "rejected", "reinforced"} <= outcomes
    assert any(i["resolution"]["overrides"] for i in r.json()["items"])
    # The replay returns the stored bytes.
    again = await client.post(
        "/v1/users/shapes/items/batch", json=body, headers={**tenant.agent, "Idempotency-Key": "shapes-1"}
    )
    assert again.status_code == 201 and again.content == r.content


async def test_a_single_write_response_is_the_models_json_byte_for_byte(
    client: httpx.AsyncClient, tenant: TenantKeys, captured: list[Written]
) -> None:
    for i, item in enumerate(_varied_items()[-10:]):
        r = await client.post(
            "/v1/users/single/items", json=item, headers={**tenant.agent, "Idempotency-Key": f"single-{i}"}
        )
        assert r.status_code == 201, r.text
        (model,) = captured[-1].read()
        assert r.content == model.model_dump_json().encode()


def test_read_data_fills_what_the_model_adds() -> None:
    row: dict[str, Any] = {
        "id": uuid.uuid4(),
        "confidence": 1,
        "variants": {"summary": "s"},
        "tenant_id": "t",
        "level_texts": ["a"],
    }
    data = read_data(row, None)
    assert data["confidence"] == 1.0 and isinstance(data["confidence"], float)
    assert data["variants"] == {"condensed": None, "summary": "s", "index": None}
    assert "tenant_id" not in data and "level_texts" not in data
    assert data["resolution"] is None and data["overrides"] is None and data["at_level"] is None
    assert json.loads(json.dumps(list(data))) == list(data)


def test_level_counts_are_those_of_counting_every_level(tmp_path: Path) -> None:
    tokenizer = build_tokenizer("o200k_base", cache_dir=tmp_path)
    rng = random.Random(5)
    anchor = datetime(2026, 9, 1, 12, tzinfo=UTC)
    rows = []
    for _ in range(300):
        item = generate_item(rng, anchor)
        rows.append(
            {
                "id": uuid.uuid4(),
                "type": item["type"],
                "content": item["content"],
                "key": item.get("key"),
                "value": item.get("value"),
                "variants": item.get("variants"),
                "token_cost": tokenizer.count(item["content"]),
            }
        )
    rows.append({**rows[0], "id": uuid.uuid4(), "content": "short", "token_cost": tokenizer.count("short")})
    attach_levels(tokenizer, rows=rows)
    for row in rows:
        derived = derive_row_levels(row)
        texts, tokens = assemble_levels(
            row["content"], row["token_cost"], derived, [tokenizer.count(t) for t in derived]
        )
        assert (row["level_texts"], row["level_tokens"]) == (texts[1:], tokens[1:])
