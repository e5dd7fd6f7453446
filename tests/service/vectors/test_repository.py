"""The outbox's SQL (service/vectors/repository.py) on its own, against PostgreSQL: each test works in one
transaction it rolls back, and looks only at its own tenant's rows (other tests share the outbox)."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.engine import Database
from service.db.locks import user_lock_sql
from service.vectors import repository
from tests.conftest import TenantKeys

AT = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
async def session(db: Database) -> AsyncIterator[AsyncSession]:
    async with db.sessionmaker() as s:
        yield s
        await s.rollback()


@pytest.fixture
def tenant_id() -> str:
    return f"t-{secrets.token_hex(6)}"


async def rows(session: AsyncSession, tenant_id: str) -> list[Any]:
    return list(
        (
            await session.execute(
                text(
                    "SELECT user_id, item_id, op, created_at, next_attempt_at, attempts, last_error, dead_at "
                    "FROM vector_outbox WHERE tenant_id = :t ORDER BY id"
                ),
                {"t": tenant_id},
            )
        ).all()
    )


async def mine(session: AsyncSession, tenant_id: str, *, now: datetime) -> list[Any]:
    return [r for r in await repository.claim_due(session, now=now, limit=100_000) if r.tenant_id == tenant_id]


async def test_enqueue_keeps_the_order_given_and_stamps_now(session: AsyncSession, tenant_id: str) -> None:
    ids = [uuid.uuid4() for _ in range(5)]
    await repository.enqueue_sync(session, tenant_id, "u", ids, AT)
    await repository.enqueue_sync(session, tenant_id, "u", [], AT)  # nothing to do
    got = await rows(session, tenant_id)
    assert [r.item_id for r in got] == ids  # id order is the order given, not the uuids' order
    assert {(r.op, r.created_at, r.next_attempt_at, r.attempts) for r in got} == {("sync", AT, AT, 0)}


async def test_a_user_delete_replaces_that_users_pending_changes(session: AsyncSession, tenant_id: str) -> None:
    kept = uuid.uuid4()
    await repository.enqueue_sync(session, tenant_id, "gone", [uuid.uuid4(), uuid.uuid4()], AT)
    await repository.enqueue_sync(session, tenant_id, "stays", [kept], AT)
    later = AT + timedelta(seconds=1)
    await repository.enqueue_user_delete(session, tenant_id, "gone", later)
    assert [(r.user_id, r.op, r.item_id, r.next_attempt_at) for r in await rows(session, tenant_id)] == [
        ("stays", "sync", kept, AT),
        ("gone", "delete_user", None, later),
    ]


async def test_claim_takes_what_is_due_at_now_in_order(session: AsyncSession, tenant_id: str) -> None:
    first, second = uuid.uuid4(), uuid.uuid4()
    await repository.enqueue_sync(session, tenant_id, "u", [first], AT)
    await repository.enqueue_sync(session, tenant_id, "u", [second], AT + timedelta(seconds=10))
    assert await mine(session, tenant_id, now=AT - timedelta(microseconds=1)) == []
    assert [r.item_id for r in await mine(session, tenant_id, now=AT)] == [first]
    assert [r.item_id for r in await mine(session, tenant_id, now=AT + timedelta(seconds=10))] == [first, second]


async def test_a_claim_serves_the_longest_waiting_tenant_first(session: AsyncSession) -> None:
    """Claimed tenant by tenant (each claim pinned to its tenant: docs/citus.md): the tenant of the oldest
    change due first, as many of its due changes as the batch has room for, in id order; then the next."""
    # Due only from 2000 on, so that at that time these are the only changes due.
    written = datetime(2000, 1, 1, tzinfo=UTC)
    a, b = f"t-{secrets.token_hex(6)}", f"t-{secrets.token_hex(6)}"
    order = [(a, "u"), (b, "v"), (a, "u"), (a, "w"), (b, "v"), (a, "u")]
    ids = [uuid.uuid4() for _ in order]
    for (tenant_id, user_id), item_id in zip(order, ids, strict=True):
        await repository.enqueue_sync(session, tenant_id, user_id, [item_id], written)
    assert await repository.due_tenants(session, now=written, limit=3) == [a, b]
    assert [r.item_id for r in await repository.claim_due(session, now=written, limit=3)] == [ids[0], ids[2], ids[3]]
    # all four of a's (the oldest), then one of b's
    assert [r.item_id for r in await repository.claim_due(session, now=written, limit=5)] == [*ids[:4], ids[5]]
    assert [r.item_id for r in await repository.claim_due(session, now=written, limit=100)] == ids
    assert [r.item_id for r in await repository.claim_tenant(session, b, now=written, limit=100)] == [ids[1], ids[4]]


async def test_a_claim_passes_over_what_another_worker_holds(db: Database) -> None:
    written = datetime(2000, 1, 1, tzinfo=UTC)
    a, b = f"t-{secrets.token_hex(6)}", f"t-{secrets.token_hex(6)}"
    order = [a, b, a, a, b]
    ids = [uuid.uuid4() for _ in order]
    async with db.sessionmaker() as setup:
        for tenant_id, item_id in zip(order, ids, strict=True):
            await repository.enqueue_sync(setup, tenant_id, "u", [item_id], written)
        await setup.commit()
    try:
        async with db.sessionmaker() as other, db.sessionmaker() as mine:
            held = await repository.claim_due(other, now=written, limit=2)  # another worker's batch: a's first two
            assert [r.item_id for r in held] == [ids[0], ids[2]]
            # a's third, then b's first: the held ones are passed over
            got = await repository.claim_due(mine, now=written, limit=2)
            assert [r.item_id for r in got] == [ids[1], ids[3]]
            await mine.rollback()
            got = await repository.claim_due(mine, now=written, limit=10)
            assert [r.item_id for r in got] == [ids[1], ids[3], ids[4]]
            await other.rollback()
            await mine.rollback()
    finally:
        async with db.sessionmaker() as cleanup:
            await cleanup.execute(text("DELETE FROM vector_outbox WHERE tenant_id IN (:a, :b)"), {"a": a, "b": b})
            await cleanup.commit()


async def test_reschedule_and_retire(session: AsyncSession, tenant_id: str) -> None:
    await repository.enqueue_sync(session, tenant_id, "u", [uuid.uuid4(), uuid.uuid4(), uuid.uuid4()], AT)
    retry, dead, done = await mine(session, tenant_id, now=AT)
    later = AT + timedelta(seconds=4)
    await repository.reschedule(
        session, tenant_id=tenant_id, change_id=retry.id, attempts=2, error="E: x", retry_at=later, dead_at=None
    )
    await repository.reschedule(
        session, tenant_id=tenant_id, change_id=dead.id, attempts=8, error="E: y", retry_at=later, dead_at=AT
    )
    await repository.delete_changes(session, [tenant_id], [done.id])
    assert [(r.attempts, r.last_error, r.next_attempt_at, r.dead_at) for r in await rows(session, tenant_id)] == [
        (2, "E: x", later, None),
        (8, "E: y", later, AT),
    ]
    assert await mine(session, tenant_id, now=later - timedelta(seconds=1)) == []
    assert [r.id for r in await mine(session, tenant_id, now=later)] == [retry.id]  # the dead one never again


async def test_lag_counts_pending_and_dead_and_revive_brings_the_dead_back(
    session: AsyncSession, tenant_id: str
) -> None:
    # Far in the past, so that these are the oldest changes whatever other tests left in the outbox.
    written = datetime(2000, 1, 1, tzinfo=UTC)
    an_hour_later = written + timedelta(hours=1)
    before = await repository.lag(session, now=an_hour_later)
    await repository.enqueue_sync(session, tenant_id, "u", [uuid.uuid4(), uuid.uuid4()], written)
    _, dead = await mine(session, tenant_id, now=written)
    await repository.reschedule(
        session, tenant_id=tenant_id, change_id=dead.id, attempts=8, error="E", retry_at=AT, dead_at=AT
    )
    during = await repository.lag(session, now=an_hour_later)
    assert (during.pending - before.pending, during.dead - before.dead) == (1, 1)
    assert during.oldest_seconds == 3600  # the pending change is an hour old by the clock passed in
    assert (await repository.lag(session, now=written - timedelta(seconds=5))).oldest_seconds == 0  # never negative
    revived_at = an_hour_later + timedelta(minutes=1)
    assert await repository.revive_dead(session, now=revived_at) == before.dead + 1
    revived = [r for r in await rows(session, tenant_id) if r.attempts == 0]
    assert len(revived) == 2 and all(r.dead_at is None for r in revived)
    assert {r.next_attempt_at for r in revived} == {written, revived_at}  # due again at the time passed in


async def test_lock_users_shared_names_the_users_being_erased(db: Database, session: AsyncSession) -> None:
    async with db.engine.connect() as eraser:
        await eraser.execute(text(f"SELECT {user_lock_sql('pg_advisory_xact_lock', ':t', ':u')}"),
                             {"t": "t1", "u": "erased"})  # fmt: skip
        erasing = await repository.lock_users_shared(
            session, [("t1", "erased"), ("t1", "other"), ("t2", "erased"), ("t1", "other")]
        )
        assert erasing == {("t1", "erased")}
        await eraser.rollback()
    # once the erasure is over, its user's lock can be taken shared too
    assert await repository.lock_users_shared(session, [("t1", "erased")]) == set()


async def search_rows(session: AsyncSession, tenant_id: str, user_id: str) -> set[uuid.UUID]:
    result = await session.execute(
        text("SELECT item_id FROM item_search WHERE tenant_id = :t AND user_id = :u"), {"t": tenant_id, "u": user_id}
    )
    return {r[0] for r in result}


async def test_the_lexical_index_follows_the_items_status(
    client: httpx.AsyncClient, tenant: TenantKeys, session: AsyncSession
) -> None:
    r = await client.post("/v1/users/s/items/batch", json={"items": [
        {"type": "fact", "content": "herons fish at dawn"}, {"type": "fact", "content": "owls hunt at night"}]},
        headers=tenant.agent)  # fmt: skip
    heron, owl = (uuid.UUID(i["id"]) for i in r.json()["items"])
    t = tenant.tenant_id
    await session.execute(text("DELETE FROM item_search WHERE tenant_id = :t"), {"t": t})
    await repository.sync_search(session, [t, t], [heron, owl])
    assert await search_rows(session, t, "s") == {heron, owl}
    tsv = (await session.execute(text("SELECT tsv::text FROM item_search WHERE item_id = :i"), {"i": heron})).scalar()
    assert "heron" in tsv
    await session.execute(text("UPDATE context_item SET status = 'deleted' WHERE id = :i"), {"i": owl})
    await repository.sync_search(session, [t, t], [heron, owl])
    assert await search_rows(session, t, "s") == {heron}
    await repository.erase_search(session, t, "s")
    assert await search_rows(session, t, "s") == set()
