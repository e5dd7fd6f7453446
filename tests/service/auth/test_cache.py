"""service/auth/cache.py: checked keys reused per process, forgotten at once when revoked, and never
served while the revocation listener is down."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from service.auth import repository
from service.auth.cache import KeyCache, listen_for_revocations
from service.auth.principal import Principal
from service.auth.service import authenticate, create_key
from service.db.engine import Database, session_scope
from service.errors import Unauthorized
from service.ids import uuid7

NOW = datetime(2026, 9, 1, tzinfo=UTC)
P = Principal(tenant_id="t", key_id=uuid7(), role="agent")


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_entries_expire_after_the_ttl_and_nothing_is_served_unless_live() -> None:
    clock = Ticks()
    cache = KeyCache(30.0, clock=clock)
    cache.put("h", P)
    assert cache.get("h") is None  # not live: neither kept nor served
    cache.live = True
    cache.put("h", P)
    assert cache.get("h") is P
    clock.now += 29.9
    assert cache.get("h") is P
    clock.now += 0.2
    assert cache.get("h") is None
    cache.put("h", P)
    cache.stop_serving()
    cache.live = True
    assert cache.get("h") is None  # emptied when the listener went down


def test_a_zero_ttl_keeps_nothing_and_the_size_is_bounded() -> None:
    off = KeyCache(0.0)
    off.live = True
    off.put("h", P)
    assert off.get("h") is None
    small = KeyCache(30.0, max_entries=2)
    small.live = True
    for h in ("a", "b", "c"):
        small.put(h, P)
    assert [small.get(h) for h in ("a", "b", "c")] == [None, P, P]


@pytest.fixture
async def listening(db: Database) -> AsyncIterator[KeyCache]:
    cache = KeyCache(300.0)
    stop = asyncio.Event()
    task = asyncio.create_task(listen_for_revocations(db.url, cache, stop, poll=0.05))
    for _ in range(200):
        if cache.live:
            break
        await asyncio.sleep(0.02)
    assert cache.live
    yield cache
    stop.set()
    await task
    assert not cache.live


async def _key(db: Database) -> tuple[str, str]:
    tenant = f"t-{secrets.token_hex(4)}"
    async with session_scope(db) as s:
        issued = await create_key(s, tenant_id=tenant, role="agent", name=None, now=NOW, actor="test")
    return tenant, issued.secret


async def test_a_cached_key_skips_the_database_until_revoked_then_is_refused(db: Database, listening: KeyCache) -> None:
    _, secret = await _key(db)
    async with db.sessionmaker() as s:
        first = await authenticate(s, f"Bearer {secret}", listening)
    # Revoked behind the service's back (no notification): the cached principal is still served — this is
    # what the cache saves, and why the TTL bounds it.
    async with session_scope(db) as s:
        await s.execute(text("UPDATE api_key SET revoked_at = now() WHERE id = :id"), {"id": first.key_id})
    async with db.sessionmaker() as s:
        assert await authenticate(s, f"Bearer {secret}", listening) == first
        with pytest.raises(Unauthorized):
            await authenticate(s, f"Bearer {secret}")  # without the cache: read, refused

    other_tenant, other = await _key(db)
    async with db.sessionmaker() as s:
        principal = await authenticate(s, f"Bearer {other}", listening)
    async with session_scope(db) as s:
        await repository.revoke_key(s, other_tenant, principal.key_id, NOW)
    for _ in range(200):  # delivered at commit
        async with db.sessionmaker() as s:
            try:
                await authenticate(s, f"Bearer {other}", listening)
            except Unauthorized:
                break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("a revoked key was still accepted two seconds after its revocation committed")


async def test_an_unknown_key_is_never_cached(db: Database, listening: KeyCache) -> None:
    async with db.sessionmaker() as s:
        with pytest.raises(Unauthorized):
            await authenticate(s, "Bearer cmk_" + "x" * 43, listening)
    assert listening.get("anything") is None


async def test_the_cache_stops_serving_when_the_listener_cannot_connect() -> None:
    cache = KeyCache(300.0)
    cache.live = True  # as if it had been listening before the database went away
    cache.put("h", P)
    stop = asyncio.Event()
    task = asyncio.create_task(listen_for_revocations("postgresql://nobody@127.0.0.1:1/none", cache, stop))
    await asyncio.sleep(0.3)
    assert not cache.live
    cache.live = True
    assert cache.get("h") is None  # emptied, not just paused
    stop.set()
    await asyncio.wait_for(task, timeout=5)
