"""Bearer keys, roles (docs/design.md §4) and tenant isolation on every endpoint."""

from __future__ import annotations

import httpx
import pytest

from service.db.engine import Database
from tests.conftest import TenantKeys
from tests.helpers import tenant_rows

ITEM = {"type": "fact", "content": "secret of tenant A"}


async def _seed(client: httpx.AsyncClient, tenant: TenantKeys) -> str:
    r = await client.post("/v1/users/alice/items", json=ITEM, headers=tenant.agent)
    assert r.status_code == 201
    return str(r.json()["id"])


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer cmk_not-a-real-key"},
        {"Authorization": "Bearer " + "x" * 5000},
        {"Authorization": "bearer\tcmk_x"},
    ],
)
async def test_missing_or_bad_key_is_401(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    r = await client.get("/v1/users/alice/items", headers=headers)
    assert r.status_code == 401
    assert r.headers["content-type"] == "application/problem+json"
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["type"] == "urn:ctxmem:problem:unauthorized"


async def test_other_tenant_sees_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys, db: Database
) -> None:
    item_id = await _seed(client, tenant)
    before = await tenant_rows(db, tenant.tenant_id)
    # Another tenant's "alice" is a user it never wrote: its lists are empty (the same answer as for an id
    # that exists nowhere, so nothing is learnt), and our item is not found by id.
    for headers in (other_tenant.agent, other_tenant.operator, other_tenant.admin):
        calls = [
            ("GET", "/v1/users/alice/items", 200),
            ("GET", "/v1/users/alice/profile", 200),
            ("GET", "/v1/users/alice/events", 200),
            ("GET", f"/v1/users/alice/items/{item_id}", 404),
            ("GET", "/v1/users/alice/export", 200),
        ]
        for method, path, status in calls:
            r = await client.request(method, path, headers=headers)
            if r.status_code == 403:  # a role that may not call it at all learns nothing either
                continue
            assert r.status_code == status, (method, path, r.text)
            assert "secret" not in r.text
            nobody = await client.request(method, path.replace("alice", "no-such-user-anywhere"), headers=headers)
            if status == 200:
                ours, theirs = r.json(), nobody.json()
                for doc in (ours, theirs):
                    doc.pop("exported_at", None)  # the export's clock, not the user's data
                    doc.pop("user_id", None)
                assert ours == theirs
    r = await client.delete(f"/v1/users/alice/items/{item_id}", headers=other_tenant.agent)
    assert r.status_code == 404
    r = await client.delete("/v1/users/alice", headers=other_tenant.admin)
    assert r.status_code == 404
    # Writing to "alice" in the other tenant creates that tenant's own alice, not ours.
    r = await client.post("/v1/users/alice/items", json={"type": "fact", "content": "b"}, headers=other_tenant.agent)
    assert r.status_code == 201
    listed = (await client.get("/v1/users/alice/items", headers=other_tenant.agent)).json()["items"]
    assert [i["content"] for i in listed] == ["b"]
    # Another tenant's item id cannot be used as a related id either.
    r = await client.post(
        "/v1/users/alice/items",
        json={"type": "fact", "content": "c", "related_ids": [item_id]},
        headers=other_tenant.agent,
    )
    assert r.status_code == 422
    assert await tenant_rows(db, tenant.tenant_id) == before


async def test_roles(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    item_id = await _seed(client, tenant)
    # operator: reads and exports, never writes
    assert (await client.get("/v1/users/alice/items", headers=tenant.operator)).status_code == 200
    assert (await client.get(f"/v1/users/alice/items/{item_id}", headers=tenant.operator)).status_code == 200
    assert (await client.get("/v1/users/alice/export", headers=tenant.operator)).status_code == 200
    before = await tenant_rows(db, tenant.tenant_id)
    r = await client.post("/v1/users/alice/items", json=ITEM, headers=tenant.operator)
    assert r.status_code == 403 and r.json()["type"] == "urn:ctxmem:problem:forbidden"
    assert (
        await client.post("/v1/users/alice/items/batch", json={"items": [ITEM]}, headers=tenant.operator)
    ).status_code == 403
    assert (await client.delete(f"/v1/users/alice/items/{item_id}", headers=tenant.operator)).status_code == 403
    assert (await client.delete("/v1/users/alice", headers=tenant.operator)).status_code == 403
    # agent: no export, no erase, no system authority
    assert (await client.get("/v1/users/alice/export", headers=tenant.agent)).status_code == 403
    assert (await client.delete("/v1/users/alice", headers=tenant.agent)).status_code == 403
    for body in ({**ITEM, "source": "system"}, {**ITEM, "source": "system", "authority": "system"}):
        r = await client.post("/v1/users/alice/items", json=body, headers=tenant.agent)
        assert r.status_code == 403, r.text
        assert "system" in r.json()["detail"]
    assert await tenant_rows(db, tenant.tenant_id) == before
    # admin: may write system rules, and only admin may delete them
    r = await client.post(
        "/v1/users/alice/items",
        json={"type": "rule", "content": "Never share PII", "source": "system"},
        headers=tenant.admin,
    )
    assert r.status_code == 201 and r.json()["authority"] == "system"
    rule_id = r.json()["id"]
    assert (await client.delete(f"/v1/users/alice/items/{rule_id}", headers=tenant.agent)).status_code == 403
    assert (await client.delete(f"/v1/users/alice/items/{rule_id}", headers=tenant.admin)).status_code == 200


async def test_revoked_key_is_401(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    from service.auth import repository
    from service.auth.service import hash_secret
    from service.clock import Clock
    from service.db.engine import session_scope

    secret = tenant.agent["Authorization"].removeprefix("Bearer ")
    async with session_scope(db) as session:
        key = await repository.key_by_hash(session, hash_secret(secret))
        assert key is not None
        await repository.revoke_key(session, tenant.tenant_id, key.id, Clock().now())
    r = await client.get("/v1/users/alice/items", headers=tenant.agent)
    assert r.status_code == 401
