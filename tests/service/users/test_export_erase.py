"""A user's data as a whole: streamed export, then erasure that leaves zero rows."""

from __future__ import annotations

import json
import uuid

import httpx
from sqlalchemy import text

from service.db.engine import Database
from tests.conftest import TenantKeys
from tests.helpers import USER_TABLES, count_rows


async def test_export_then_erase_leaves_zero_rows(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    items = [{"type": "fact", "content": f"fact {i} 数据", "value": {"i": i}} for i in range(25)]
    r = await client.post(
        "/v1/users/carol/items/batch",
        json={"items": items},
        headers={**tenant.agent, "Idempotency-Key": "b1"},
    )
    assert r.status_code == 201
    ids = [i["id"] for i in r.json()["items"]]
    await client.delete(f"/v1/users/carol/items/{ids[0]}", headers=tenant.agent)
    # a neighbour who must survive
    await client.post("/v1/users/dave/items", json={"type": "fact", "content": "dave"}, headers=tenant.agent)

    r = await client.get("/v1/users/carol/export", headers=tenant.operator)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    doc = json.loads(r.content)
    assert doc["user_id"] == "carol" and doc["tenant_id"] == tenant.tenant_id
    assert sorted(i["id"] for i in doc["items"]) == sorted(ids)
    assert {i["status"] for i in doc["items"]} == {"available", "deleted"}
    assert [i["value"] for i in doc["items"] if i["status"] == "available"] == [{"i": i} for i in range(1, 25)]
    actions = [e["action"] for e in doc["events"]]
    assert actions.count("item.created") == 25 and actions.count("item.deleted") == 1

    r = await client.delete("/v1/users/carol", headers={**tenant.admin, "Idempotency-Key": "erase-1"})
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["erased"] is True
    assert result["rows"]["context_item"] == 25 and result["rows"]["end_user"] == 1
    for table in USER_TABLES:
        assert await count_rows(db, tenant.tenant_id, table, "carol") == 0, table
    # nothing in the whole database still carries the user's content or id
    async with db.engine.connect() as conn:
        leaked = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM event WHERE tenant_id = :t"
                    " AND (after::text LIKE '%carol%' OR entity_id = 'carol')"
                ),
                {"t": tenant.tenant_id},
            )
        ).scalar_one()
        erasure = (
            await conn.execute(
                text("SELECT user_id, entity_id, after FROM event WHERE tenant_id = :t AND action = 'user.erased'"),
                {"t": tenant.tenant_id},
            )
        ).one()
    assert leaked == 0
    assert erasure.user_id is None and erasure.entity_id == result["user_fingerprint"]
    assert erasure.after == {"rows": result["rows"]}
    # the neighbour is untouched
    assert await count_rows(db, tenant.tenant_id, "context_item", "dave") == 1
    # the erased user is gone (reads answer as for a user never written); replaying the erase returns the
    # first answer, and erasing again finds no one
    listed = await client.get("/v1/users/carol/items", headers=tenant.agent)
    assert listed.status_code == 200 and listed.json() == {"items": [], "next_cursor": None}
    exported = (await client.get("/v1/users/carol/export", headers=tenant.operator)).json()
    assert all(exported[s] == [] for s in ("items", "profile_entries", "observations", "events"))
    again = await client.delete("/v1/users/carol", headers={**tenant.admin, "Idempotency-Key": "erase-1"})
    assert again.status_code == 200 and again.content == r.content
    assert (await client.delete("/v1/users/carol", headers=tenant.admin)).status_code == 404


async def test_export_of_large_user_streams(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    for n in range(3):
        batch = [{"type": "episode", "content": f"turn {n}-{i} " + "x" * 400} for i in range(1000)]
        r = await client.post("/v1/users/big/items/batch", json={"items": batch}, headers=tenant.agent)
        assert r.status_code == 201
    r = await client.get("/v1/users/big/export", headers=tenant.admin)
    assert r.status_code == 200
    assert len(json.loads(r.content)["items"]) == 3000
    # The body is produced row by row from a server-side cursor (httpx's ASGI transport buffers the
    # response, so the generator itself is checked for streaming).
    from service.auth.principal import Principal
    from service.clock import Clock
    from service.users.service import export_stream

    principal = Principal(tenant_id=tenant.tenant_id, key_id=uuid.uuid4(), role="admin")
    chunks = [c async for c in export_stream(db, principal=principal, user_id="big", now=Clock().now())]
    assert len(chunks) > 3000
    assert max(len(c) for c in chunks) < 5000
    assert len(json.loads(b"".join(chunks))["items"]) == 3000
