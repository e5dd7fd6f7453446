"""Per-key rate limits (issue #12, part 3): 429 problem+json with Retry-After, per key, refilled by the
clock, checked before any database work."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from service.app import create_app
from service.clock import FixedClock
from service.db.engine import Database, create_database
from service.settings import Settings
from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def limited(settings: Settings) -> Settings:
    return settings.replace(rate_limit_per_second=0.5, rate_limit_burst=3)


async def test_over_the_limit_is_429_per_key_until_the_bucket_refills(
    settings: Settings, db: Database, vectors: VectorRecall, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    clock = FixedClock(T0)
    app = create_app(limited(settings), database=db, vectors=vectors, clock=clock)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test") as client:
        item = {"type": "fact", "content": "c"}
        for _ in range(3):
            assert (await client.post("/v1/users/rl/items", json=item, headers=tenant.agent)).status_code == 201
        r = await client.post("/v1/users/rl/items", json=item, headers=tenant.agent)
        assert r.status_code == 429, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.headers["retry-after"] == "2"  # one token at 0.5 a second
        body = r.json()
        assert body["type"] == "urn:ctxmem:problem:rate-limited" and "retry in 2 s" in body["detail"]
        # another key has its own bucket
        assert (await client.get("/v1/users/rl/items", headers=tenant.operator)).status_code == 200
        r = await client.get("/v1/users/rl/items", headers=other_tenant.agent)
        assert r.status_code in (200, 404) and not r.json().get("items")
        # the refused request wrote nothing
        listed = (await client.get("/v1/users/rl/items", headers=tenant.operator)).json()["items"]
        assert len(listed) == 3
        clock.at = T0 + timedelta(seconds=1)
        assert (await client.get("/v1/users/rl/items", headers=tenant.agent)).status_code == 429
        clock.at = T0 + timedelta(seconds=2)
        assert (await client.get("/v1/users/rl/items", headers=tenant.agent)).status_code == 200
        assert (await client.get("/v1/users/rl/items", headers=tenant.agent)).status_code == 429


async def test_the_limit_is_checked_before_any_database_work(settings: Settings) -> None:
    # A database nobody listens on: what gets through the limit meets the outage (503), what does not is
    # refused by the limit without trying it (429).
    dead = limited(settings).replace(database_url="postgresql://ctxmem@127.0.0.1:9/nothing")
    db = create_database(dead.database.url, dead)
    app = create_app(dead, database=db, clock=FixedClock(T0))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test") as c:
            key = {"Authorization": "Bearer cmk_" + "x" * 43}
            statuses = [(await c.get("/v1/users/u/items", headers=key)).status_code for _ in range(5)]
            assert statuses == [503, 503, 503, 429, 429]
            # requests without a key are limited by client address
            assert [(await c.get("/readyz")).status_code for _ in range(4)] == [503, 503, 503, 429]
    finally:
        await db.dispose()


async def test_zero_turns_the_limit_off(settings: Settings, db: Database, tenant: TenantKeys) -> None:
    off = settings.replace(rate_limit_per_second=0.0, rate_limit_burst=1)
    app = create_app(off, database=db, clock=FixedClock(T0))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test") as client:
        for _ in range(5):
            assert (await client.get("/v1/users/nobody/items", headers=tenant.agent)).status_code in (200, 404)
