"""Idempotency-Key: byte-for-byte replay, reuse with another body, and real concurrent races."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from service.db.engine import Database
from tests.conftest import TenantKeys
from tests.helpers import tenant_rows

BODY = {"type": "fact", "content": "budget is 300", "key": "budget", "value": 300}


async def test_replay_returns_first_response_and_writes_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    headers = {**tenant.agent, "Idempotency-Key": "req-1"}
    first = await client.post("/v1/users/u1/items", json=BODY, headers=headers)
    assert first.status_code == 201
    after_first = await tenant_rows(db, tenant.tenant_id)
    for _ in range(3):
        again = await client.post("/v1/users/u1/items", json=BODY, headers=headers)
        assert again.status_code == 201
        assert again.content == first.content  # byte for byte, same id and timestamps
        assert again.headers["Idempotent-Replayed"] == "true"
    assert await tenant_rows(db, tenant.tenant_id) == after_first


async def test_same_key_different_body_is_422(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    headers = {**tenant.agent, "Idempotency-Key": "req-2"}
    assert (await client.post("/v1/users/u1/items", json=BODY, headers=headers)).status_code == 201
    before = await tenant_rows(db, tenant.tenant_id)
    r = await client.post("/v1/users/u1/items", json=dict(BODY, value=500), headers=headers)
    assert r.status_code == 422
    assert r.json()["type"] == "urn:ctxmem:problem:idempotency-key-reused"
    # ... and on another path
    r = await client.post("/v1/users/u2/items", json=BODY, headers=headers)
    assert r.status_code == 422
    assert await tenant_rows(db, tenant.tenant_id) == before


async def test_keys_are_scoped_per_tenant(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    a = await client.post("/v1/users/u1/items", json=BODY, headers={**tenant.agent, "Idempotency-Key": "shared"})
    b = await client.post("/v1/users/u1/items", json=BODY, headers={**other_tenant.agent, "Idempotency-Key": "shared"})
    assert a.status_code == b.status_code == 201
    assert a.json()["id"] != b.json()["id"]


async def test_failed_request_is_not_stored(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    headers = {**tenant.agent, "Idempotency-Key": "req-3"}
    bad = await client.post("/v1/users/u1/items", json=dict(BODY, observed_at="2099-01-01T00:00:00Z"), headers=headers)
    assert bad.status_code == 422
    good = await client.post("/v1/users/u1/items", json=dict(BODY, observed_at="2099-01-01T00:00:00Z"), headers=headers)
    assert good.status_code == 422  # still fails the same way: nothing was stored, the rule ran again


@pytest.mark.parametrize("bad_key", ["", "x" * 256, "tab\tkey", "ключ"])
async def test_malformed_key_is_422(client: httpx.AsyncClient, tenant: TenantKeys, bad_key: str) -> None:
    r = await client.post(
        "/v1/users/u1/items",
        json=BODY,
        headers={**tenant.agent, "Idempotency-Key": bad_key.encode("utf-8")},  # type: ignore[dict-item]
    )
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"


async def test_delete_and_batch_are_idempotent(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    batch = {"items": [BODY, dict(BODY, content="second")]}
    h = {**tenant.agent, "Idempotency-Key": "batch-1"}
    first = await client.post("/v1/users/u1/items/batch", json=batch, headers=h)
    again = await client.post("/v1/users/u1/items/batch", json=batch, headers=h)
    assert first.status_code == again.status_code == 201 and first.content == again.content
    item_id = first.json()["items"][0]["id"]
    dh = {**tenant.agent, "Idempotency-Key": "del-1"}
    d1 = await client.delete(f"/v1/users/u1/items/{item_id}", headers=dh)
    rows = await tenant_rows(db, tenant.tenant_id)
    d2 = await client.delete(f"/v1/users/u1/items/{item_id}", headers=dh)
    assert d1.status_code == d2.status_code == 200 and d1.content == d2.content
    assert await tenant_rows(db, tenant.tenant_id) == rows


async def test_concurrent_requests_with_one_key_write_once(app, tenant: TenantKeys, db: Database) -> None:  # type: ignore[no-untyped-def]
    """Ten clients race with one key; each request runs on its own pooled connection (separate PostgreSQL
    sessions), so the claim insert really contends inside the database."""
    key = f"race-{uuid.uuid4()}"
    before = await tenant_rows(db, tenant.tenant_id)
    transport = httpx.ASGITransport(app=app)

    async def one() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport, base_url="http://ctxmem.test") as c:
            return await c.post(
                "/v1/users/race/items/batch",
                json={"items": [dict(BODY, content=f"item {i}") for i in range(200)]},
                headers={**tenant.agent, "Idempotency-Key": key},
            )

    responses = await asyncio.gather(*(one() for _ in range(10)))
    assert {r.status_code for r in responses} == {201}
    assert len({r.content for r in responses}) == 1
    after = await tenant_rows(db, tenant.tenant_id)
    assert after["context_item"] - before["context_item"] == 200
    assert after["idempotency_record"] - before["idempotency_record"] == 1
    assert sum(r.headers.get("Idempotent-Replayed") == "true" for r in responses) == 9
