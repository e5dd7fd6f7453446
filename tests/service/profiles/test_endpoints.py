"""service/profiles/endpoints.py: the routes' HTTP contract: status codes, the profile's query parameters,
confirm and reject with or without a body, and problem+json for what a route refuses."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

import httpx

from tests.conftest import TenantKeys

OBS = {"domain": "laptop", "dimension": "preference", "key": "brand", "value": "ThinkPad", "session_id": "s-1"}


def base() -> str:
    return f"/v1/users/u-{secrets.token_hex(4)}"


async def observe(client: httpx.AsyncClient, url: str, tenant: TenantKeys, **fields: Any) -> dict[str, Any]:
    r = await client.post(f"{url}/observations", json={**OBS, **fields}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def test_one_and_a_batch_are_201_with_their_entries(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    url = base()
    entry = await observe(client, url, tenant)
    assert entry["evidence_ids"] and entry["tier"] == "current"
    r = await client.post(
        f"{url}/observations/batch", json={"observations": [OBS, {**OBS, "value": "Mac"}]}, headers=tenant.agent
    )
    assert r.status_code == 201
    assert [e["value"] for e in r.json()["items"]] == ["ThinkPad", "Mac"]
    assert r.json()["items"][0]["id"] == entry["id"]


async def test_a_bad_observation_of_a_batch_names_its_index(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    body = {"observations": [OBS, {**OBS, "dimension": "mood"}]}
    r = await client.post(f"{base()}/observations/batch", json=body, headers=tenant.agent)
    assert r.status_code == 422
    assert r.json()["type"] == "urn:ctxmem:problem:batch-item-invalid" and r.json()["index"] == 1


async def test_the_profile_takes_repeated_domains_a_session_and_tiers(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    url = base()
    await observe(client, url, tenant)
    await observe(client, url, tenant, domain="phone", value="Pixel")
    r = await client.get(f"{url}/profile", params=[("domain", "laptop"), ("tier", "current")], headers=tenant.agent)
    assert r.status_code == 200
    assert set(r.json()["tiers"]["current"]) == {"laptop"}
    assert r.json()["effective"]["domains"] == ["laptop"]
    r = await client.get(f"{url}/profile", params={"session_id": "s-1"}, headers=tenant.agent)
    assert r.json()["effective"]["session_id"] == "s-1"
    r = await client.get(f"{url}/profile", params={"tier": "forever"}, headers=tenant.agent)
    assert r.status_code == 422 and "'forever' is not one of" in r.json()["detail"]


async def test_confirm_needs_no_body_and_reject_takes_one(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    url = base()
    entry = await observe(client, url, tenant)
    r = await client.post(f"{url}/profile/{entry['id']}/confirm", headers=tenant.agent)
    assert r.status_code == 200 and (r.json()["tier"], r.json()["status"]) == ("long_term", "active")
    r = await client.post(
        f"{url}/profile/{entry['id']}/reject", json={"note": "changed their mind"}, headers=tenant.agent
    )
    assert r.status_code == 200 and r.json()["status"] == "rejected"
    r = await client.post(f"{url}/profile/{entry['id']}/reject", json={"reason": "x"}, headers=tenant.agent)
    assert r.status_code == 422 and "unknown field 'reason'" in r.json()["detail"]


async def test_the_evidence_trail_is_200_for_operators_and_404_for_unknown(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    url = base()
    entry = await observe(client, url, tenant)
    r = await client.get(f"{url}/profile/{entry['id']}", headers=tenant.operator)
    assert r.status_code == 200
    assert [o["id"] for o in r.json()["observations"]] == entry["evidence_ids"]
    r = await client.get(f"{url}/profile/{uuid.uuid4()}", headers=tenant.operator)
    assert r.status_code == 404 and r.json()["type"] == "urn:ctxmem:problem:entry-not-found"
    r = await client.get(f"{url}/profile/not-a-uuid", headers=tenant.operator)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["path", "entry_id"]
    r = await client.get(f"{url}/profile/{entry['id']}", headers=tenant.agent)
    assert r.status_code == 403 and "evidence:read" in r.json()["detail"]


async def test_confirm_and_reject_are_two_operations_in_the_openapi_document(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    confirm = doc["paths"]["/v1/users/{user_id}/profile/{entry_id}/confirm"]["post"]
    reject = doc["paths"]["/v1/users/{user_id}/profile/{entry_id}/reject"]["post"]
    assert confirm["operationId"] != reject["operationId"]
    assert "confirmation" in confirm["summary"] and "denial" in reject["summary"]
