"""service/windows/endpoints.py: the route's HTTP contract: 200 with the window, problem+json for a body or
budget it refuses, and an idempotent replay when asked for one."""

from __future__ import annotations

import secrets

import httpx

from tests.conftest import TenantKeys


def url() -> str:
    return f"/v1/users/u-{secrets.token_hex(4)}/window"


async def test_a_window_is_200_with_its_parts(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post(url(), json={"input": "hello", "max_tokens": 200}, headers=tenant.agent)
    assert r.status_code == 200, r.text
    body = r.json()
    assert {"mode", "text", "sections", "messages", "tokens", "state_version", "prefix_hash"} <= set(body)
    assert "hello" in body["text"]
    assert body["tokens"]["budget"] == 200


async def test_a_body_without_a_budget_is_422_saying_how_to_give_one(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    r = await client.post(url(), json={"input": "hello"}, headers=tenant.agent)
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"
    assert "send max_tokens" in r.json()["detail"]


async def test_a_budget_too_small_is_422_with_what_it_needs(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post(url(), json={"input": "a long question " * 20, "max_tokens": 3}, headers=tenant.agent)
    assert r.status_code == 422
    body = r.json()
    assert body["type"] == "urn:ctxmem:problem:budget-too-small"
    assert body["budget"] == 3 and body["required"] > 3


async def test_a_window_with_an_idempotency_key_replays(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    headers = {**tenant.agent, "Idempotency-Key": f"w-{secrets.token_hex(4)}"}
    target, body = url(), {"input": "hello", "max_tokens": 200}
    first = await client.post(target, json=body, headers=headers)
    again = await client.post(target, json=body, headers=headers)
    assert again.headers["idempotent-replayed"] == "true" and again.content == first.content
    other = await client.post(target, json={**body, "max_tokens": 201}, headers=headers)
    assert other.status_code == 422 and other.json()["type"] == "urn:ctxmem:problem:idempotency-key-reused"


async def test_no_key_is_401(client: httpx.AsyncClient) -> None:
    r = await client.post(url(), json={"input": "hello", "max_tokens": 200})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
