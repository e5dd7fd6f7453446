"""service/items/endpoints.py: the routes' HTTP contract: status codes, the query parameters a listing
takes, the ``batch`` path segment, idempotent replays, and problem+json for what a route refuses."""

from __future__ import annotations

import secrets

import httpx

from tests.conftest import TenantKeys


def base() -> str:
    return f"/v1/users/u-{secrets.token_hex(4)}/items"


async def test_write_one_is_201_and_reads_back_as_200(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    url = base()
    r = await client.post(url, json={"type": "fact", "content": "ships on Fridays"}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    written = r.json()
    assert written["resolution"] is not None and written["overrides"] is None
    r = await client.get(f"{url}/{written['id']}", headers=tenant.agent)
    assert r.status_code == 200
    assert r.json()["content"] == "ships on Fridays" and r.json()["resolution"] is None


async def test_a_batch_is_201_with_every_item_in_order(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    body = {"items": [{"type": "fact", "content": f"fact {i}"} for i in range(3)]}
    r = await client.post(f"{base()}/batch", json=body, headers=tenant.agent)
    assert r.status_code == 201
    assert [i["content"] for i in r.json()["items"]] == ["fact 0", "fact 1", "fact 2"]


async def test_a_bad_item_of_a_batch_is_a_422_naming_its_index(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    body = {"items": [{"type": "fact", "content": "ok"}, {"type": "fact", "content": "ok", "colour": "red"}]}
    r = await client.post(f"{base()}/batch", json=body, headers=tenant.agent)
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["type"] == "urn:ctxmem:problem:batch-item-invalid" and r.json()["index"] == 1


async def test_listing_filters_by_repeated_types_and_a_key(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    url = base()
    for body in (
        {"type": "fact", "content": "a fact"},
        {"type": "preference", "content": "tea", "key": "drink"},
        {"type": "constraint", "content": "no calls", "hard": True},
    ):
        assert (await client.post(url, json=body, headers=tenant.agent)).status_code == 201
    r = await client.get(url, params=[("type", "fact"), ("type", "preference"), ("order", "asc")], headers=tenant.agent)
    assert [i["type"] for i in r.json()["items"]] == ["fact", "preference"]
    r = await client.get(url, params={"key": "drink"}, headers=tenant.agent)
    assert [i["content"] for i in r.json()["items"]] == ["tea"]


async def test_unknown_query_values_are_422_listing_what_is_accepted(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    r = await client.get(base(), params={"type": "rumour"}, headers=tenant.agent)
    assert r.status_code == 422
    assert r.json()["detail"].startswith("type[0]: 'rumour' is not one of"), r.json()["detail"]
    assert "'fact'" in r.json()["detail"]
    r = await client.get(base(), params={"view": "mine"}, headers=tenant.agent)
    assert r.status_code == 422 and "'mine' is not one of" in r.json()["detail"]


async def test_a_malformed_item_id_is_422_and_batch_is_not_an_item_id(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    r = await client.get(f"{base()}/not-a-uuid", headers=tenant.agent)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["path", "item_id"]
    r = await client.delete(f"{base()}/batch", headers=tenant.agent)
    assert r.status_code == 405 and r.headers["allow"] == "OPTIONS, POST"


async def test_a_retried_write_with_the_same_key_replays_the_first_response(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    url = base()
    headers = {**tenant.agent, "Idempotency-Key": f"k-{secrets.token_hex(4)}"}
    body = {"type": "fact", "content": "written once"}
    first = await client.post(url, json=body, headers=headers)
    second = await client.post(url, json=body, headers=headers)
    assert (first.status_code, second.status_code) == (201, 201)
    assert second.headers["idempotent-replayed"] == "true" and second.json() == first.json()
    assert len((await client.get(url, headers=tenant.agent)).json()["items"]) == 1


async def test_delete_is_200_with_the_tombstone(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    url = base()
    item_id = (await client.post(url, json={"type": "fact", "content": "x"}, headers=tenant.agent)).json()["id"]
    r = await client.delete(f"{url}/{item_id}", headers=tenant.agent)
    assert r.status_code == 200 and r.json()["status"] == "deleted"
    r = await client.get(f"{url}/{item_id}", headers=tenant.agent)
    assert r.status_code == 200 and r.json()["status"] == "deleted"  # read whatever its status
    r = await client.delete(f"{url}/{item_id}", headers=tenant.operator)
    assert r.status_code == 403 and r.json()["type"] == "urn:ctxmem:problem:forbidden"
