"""service/conversations/repository.py against PostgreSQL: a live tail in order, a claim that archives a
message once whoever asks twice, and a pop that never takes an archived message. Writes go through the API
(so the user exists); the statements under test run in a transaction that is rolled back."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import httpx

from service.conversations import repository
from service.db.engine import Database
from tests.conftest import TenantKeys

AT = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


async def seed(client: httpx.AsyncClient, tenant: TenantKeys, user: str, n: int) -> None:
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(n)]
    r = await client.post(f"/v1/users/{user}/sessions/s/messages", json={"messages": messages}, headers=tenant.agent)
    assert r.status_code == 201, r.text


async def test_the_live_tail_is_the_newest_unarchived_oldest_first_and_a_claim_holds_once(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    user = f"r-{secrets.token_hex(4)}"
    await seed(client, tenant, user, 6)
    where = {"tenant_id": tenant.tenant_id, "user_id": user, "session_id": "s"}
    async with db.sessionmaker() as s:
        tail = await repository.live_tail(s, **where, limit=4)
        assert [m.seq for m in tail] == [3, 4, 5, 6]
        first = await repository.claim(s, tenant_id=tenant.tenant_id, ids=[m.id for m in tail[:2]], now=AT)
        again = await repository.claim(s, tenant_id=tenant.tenant_id, ids=[m.id for m in tail], now=AT)
        assert [m.seq for m in first] == [3, 4] and [m.seq for m in again] == [5, 6]  # each message once
        assert [m.seq for m in await repository.live_tail(s, **where, limit=10)] == [1, 2]
        assert await repository.last_seq(s, **where) == 6
        await s.rollback()


async def test_a_pop_takes_the_newest_message_only_while_it_is_unarchived(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    user = f"r-{secrets.token_hex(4)}"
    await seed(client, tenant, user, 3)
    where = {"tenant_id": tenant.tenant_id, "user_id": user, "session_id": "s"}
    async with db.sessionmaker() as s:
        popped = await repository.pop_last(s, **where)
        assert popped is not None and popped.seq == 3
        (newest,) = await repository.live_tail(s, **where, limit=1)
        await repository.claim(s, tenant_id=tenant.tenant_id, ids=[newest.id], now=AT)
        assert await repository.pop_last(s, **where) is None  # the newest is archived: nothing is taken
        assert await repository.last_seq(s, **where) == 2
        assert await repository.pop_last(s, tenant_id=tenant.tenant_id, user_id=user, session_id="none") is None
        await s.rollback()
