"""service/windows/endpoints.py: the route's HTTP contract: 200 with the window, problem+json for a body or
budget it refuses, and an idempotent replay when asked for one."""

from __future__ import annotations

import secrets
from typing import Any

import asyncpg
import httpx
import pytest

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


async def test_a_window_reads_on_the_reads_pool_without_a_transaction(
    client: httpx.AsyncClient, tenant: TenantKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window's statements run on a connection of the reads pool (service/db/engine.py): generic plans
    from the connection's start and autocommit, so that connection is sent no BEGIN, SET LOCAL or COMMIT —
    nothing but the window's own statements; once a state is held, the cache check carries the lexical
    ranking's first statement."""
    target = url()
    items = [{"type": "fact", "content": f"the orders replica {i} lags at night", "source": "user"} for i in range(80)]
    r = await client.post(target.replace("/window", "/items/batch"), json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    sent: list[tuple[int, str]] = []
    execute, run = asyncpg.connection.Connection.execute, asyncpg.connection.Connection._execute

    async def recorded_execute(self: Any, query: str, *args: Any, **kw: Any) -> Any:
        sent.append((id(self), query))
        return await execute(self, query, *args, **kw)

    async def recorded_run(self: Any, query: str, *args: Any, **kw: Any) -> Any:
        sent.append((id(self), query))
        return await run(self, query, *args, **kw)

    monkeypatch.setattr(asyncpg.connection.Connection, "execute", recorded_execute)
    monkeypatch.setattr(asyncpg.connection.Connection, "_execute", recorded_run)
    for turn in range(2):  # the second is served from the window cache
        sent.clear()
        body = {"input": f"how far behind is the orders replica? ({turn})", "max_tokens": 300}
        w = await client.post(target, json=body, headers=tenant.agent)
        assert w.status_code == 200, w.text
        (reader,) = {conn for conn, query in sent if "AS lexemes" in query}  # the lexical ranking's
        on_reader = [query.split()[0].upper() for conn, query in sent if conn == reader]
        assert on_reader and not {"BEGIN", "BEGIN;", "SET", "COMMIT", "COMMIT;"} & set(on_reader), on_reader
        if turn:  # a state held: the query's terms are read with the cache check, in one statement
            terms = [query for conn, query in sent if conn == reader and "t.lexemes, t.lag" in query]
            assert len(terms) == 1 and "items_version" in terms[0], terms
