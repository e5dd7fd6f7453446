"""service/users/endpoints.py: export streams JSON as an attachment named by the user; erasure is 200 with
the result, 404 for a user never written, replayable with an Idempotency-Key that keeps no user id."""

from __future__ import annotations

import secrets

import httpx
from sqlalchemy import text

from service.db.engine import Database
from tests.conftest import TenantKeys


async def written_user(client: httpx.AsyncClient, tenant: TenantKeys) -> str:
    uid = f"u-{secrets.token_hex(4)}"
    r = await client.post(f"/v1/users/{uid}/items", json={"type": "fact", "content": "x"}, headers=tenant.agent)
    assert r.status_code == 201
    return uid


async def test_export_is_a_json_attachment_named_by_the_user(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    uid = await written_user(client, tenant)
    r = await client.get(f"/v1/users/{uid}/export", headers=tenant.operator)
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.headers["content-disposition"] == f'attachment; filename="{uid}.json"'
    assert r.json()["user_id"] == uid and len(r.json()["items"]) == 1


async def test_export_by_an_agent_is_403_problem_json_not_a_broken_stream(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    r = await client.get("/v1/users/u/export", headers=tenant.agent)
    assert r.status_code == 403
    assert r.headers["content-type"] == "application/problem+json"
    assert "ctxmem keys create --role" in r.json()["detail"]


async def test_erasure_is_200_then_404(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    uid = await written_user(client, tenant)
    r = await client.delete(f"/v1/users/{uid}", headers=tenant.admin)
    assert r.status_code == 200 and r.json()["erased"] is True
    assert r.json()["rows"]["context_item"] == 1
    r = await client.delete(f"/v1/users/{uid}", headers=tenant.admin)
    assert r.status_code == 404 and r.json()["type"] == "urn:ctxmem:problem:user-not-found"


async def test_a_retried_erasure_replays_and_its_record_forgets_the_user(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    uid = await written_user(client, tenant)
    key = f"erase-{secrets.token_hex(4)}"
    headers = {**tenant.admin, "Idempotency-Key": key}
    first = await client.delete(f"/v1/users/{uid}", headers=headers)
    again = await client.delete(f"/v1/users/{uid}", headers=headers)
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.headers["idempotent-replayed"] == "true" and again.json() == first.json()
    async with db.engine.connect() as conn:
        record = (
            await conn.execute(
                text("SELECT user_id, path FROM idempotency_record WHERE tenant_id = :t AND key = :k"),
                {"t": tenant.tenant_id, "k": key},
            )
        ).one()
    assert record == (None, "/v1/users/{user_id}")
