"""service/db/locks.py: a user's advisory lock, exclusive for an erasure and shared for writes, keyed apart
from other users and from the one-key slot locks."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from service.db.engine import Database
from service.db.locks import USER_LOCK_SPACE, SessionLock, user_lock_sql


def test_the_sql_takes_the_two_key_form_in_the_user_lock_space() -> None:
    sql = user_lock_sql("pg_advisory_xact_lock", ":t", "e.user_id")
    assert sql == (
        f"pg_advisory_xact_lock({USER_LOCK_SPACE}, hashtext(CAST(:t AS text) || chr(31) || CAST(e.user_id AS text)))"
    )


async def try_lock(db: Database, function: str, tenant: str, user: str) -> bool:
    async with db.engine.connect() as conn:
        sql = f"SELECT {user_lock_sql(function, ':t', ':u')}"
        return bool((await conn.execute(text(sql), {"t": tenant, "u": user})).scalar_one())


async def test_an_erasure_lock_excludes_writes_of_that_user_only(db: Database) -> None:
    async with db.engine.connect() as holder:
        await holder.execute(
            text(f"SELECT {user_lock_sql('pg_advisory_xact_lock', ':t', ':u')}"), {"t": "lk", "u": "a"}
        )
        assert not await try_lock(db, "pg_try_advisory_xact_lock_shared", "lk", "a")
        assert await try_lock(db, "pg_try_advisory_xact_lock_shared", "lk", "b")
        assert await try_lock(db, "pg_try_advisory_xact_lock_shared", "lk2", "a")
        # ("lk", "a") and ("l", "ka") would be one key if tenant and user were joined without a separator
        assert await try_lock(db, "pg_try_advisory_xact_lock", "l", "ka")
        await holder.rollback()
    assert await try_lock(db, "pg_try_advisory_xact_lock", "lk", "a")  # released with the transaction


async def test_shared_locks_of_writes_do_not_wait_for_each_other(db: Database) -> None:
    async with db.engine.connect() as holder:
        await holder.execute(
            text(f"SELECT {user_lock_sql('pg_advisory_xact_lock_shared', ':t', ':u')}"), {"t": "lk", "u": "s"}
        )
        assert await try_lock(db, "pg_try_advisory_xact_lock_shared", "lk", "s")
        assert not await try_lock(db, "pg_try_advisory_xact_lock", "lk", "s")
        await holder.rollback()


async def test_a_session_lock_is_one_holders_until_its_session_ends(db: Database) -> None:
    """The outbox's leader lock: one holder at a time; when the holder's session ends (its process died),
    another takes it; a holder whose connection was cut finds out at its next check."""
    key = 0x7E57_0001
    first, second = SessionLock(db.url, key), SessionLock(db.url, key)
    try:
        assert await first.acquire() and first.held
        assert not await second.acquire() and not second.held
        assert await first.acquire()  # held already: still true, no second session
        # the holder's backend is terminated, as when its process dies
        async with db.engine.connect() as conn:
            ended = await conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = :k "
                    "AND granted"
                ),
                {"k": key},
            )
            assert ended.scalars().all() == [True]
        for _ in range(50):
            if await second.acquire():
                break
            await asyncio.sleep(0.1)
        assert second.held
        assert not await first.check() and not first.held  # the cut holder learns it lost the lock
        assert not await first.acquire()
    finally:
        await first.release()
        await second.release()
    assert await first.acquire()  # released: free again
    await first.release()
