"""Every write records its event in the same transaction: who, what, when, why, before/after."""

from __future__ import annotations

import httpx
from sqlalchemy import text

from service.db.engine import Database
from tests.conftest import TenantKeys


async def _events(db: Database, tenant_id: str) -> list[dict[str, object]]:
    async with db.engine.connect() as conn:
        rows = await conn.execute(text("SELECT * FROM event WHERE tenant_id = :t ORDER BY id"), {"t": tenant_id})
        return [dict(r._mapping) for r in rows]


async def test_every_change_is_an_event(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    setup = await _events(db, tenant.tenant_id)
    assert [e["action"] for e in setup] == ["tenant.created"] + ["key.created"] * 3

    one = await client.post(
        "/v1/users/ev/items", json={"type": "fact", "content": "a", "key": "k"}, headers=tenant.agent
    )
    batch = await client.post(
        "/v1/users/ev/items/batch",
        json={"items": [{"type": "fact", "content": "b"}] * 3},
        headers=tenant.agent,
    )
    item_id = one.json()["id"]
    await client.delete(f"/v1/users/ev/items/{item_id}", headers=tenant.agent)
    # failed writes leave no event
    await client.post("/v1/users/ev/items", json={"type": "nope", "content": "c"}, headers=tenant.agent)
    await client.post(
        "/v1/users/ev/items", json={"type": "rule", "content": "r", "source": "system"}, headers=tenant.agent
    )

    events = (await _events(db, tenant.tenant_id))[len(setup) :]
    assert [e["action"] for e in events] == ["item.created"] * 4 + ["item.deleted"]
    created = events[0]
    assert created["entity_id"] == item_id and created["user_id"] == "ev"
    assert str(created["actor"]).startswith("key:") and created["actor_role"] == "agent"
    assert created["after"] == {
        "type": "fact",
        "key": "k",
        "scope": "user",
        "status": "available",
        "superseded_by": None,
        "authority": "inferred",
        "token_cost": 1,
    }
    assert [e["entity_id"] for e in events[1:4]] == [i["id"] for i in batch.json()["items"]]
    assert events[1]["reason"] == "batch write"
    deleted = events[4]
    assert deleted["before"] == {"status": "available"} and deleted["after"] == {"status": "deleted"}
    assert deleted["reason"] == "deleted by request"
