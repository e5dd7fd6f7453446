"""Per-user advisory locks: an erasure holds its user's exclusively; writes and the vector-outbox worker
hold it shared.

An erasure deletes rows the worker locks too (outbox rows, then ``context_item`` through the lexical
index's foreign key, in the worker's order) and the worker's order is not the erasure's, so the two
deadlocked (issue #12 B: about 1 erasure in 40 right after a write). With this lock taken first, an
erasure waits for the writes and worker batches already touching the user, and they for it: the worker
tries the lock without waiting and skips a user being erased (whose outbox rows the erasure removes).
The two-key form keeps these locks apart from the slot locks (``hashtextextended``, one bigint key); a
hash collision only makes two users wait for each other.
"""

from __future__ import annotations

from typing import Any

USER_LOCK_SPACE = 0x63786D75  # "cxmu": first key of every user lock


def user_lock_sql(function: str, tenant_sql: str, user_sql: str) -> str:
    """A call of ``function`` (``pg_advisory_xact_lock``, ``..._shared``, ``pg_try_...``) on the user lock
    of the tenant and user given as SQL expressions (bind parameters or columns)."""
    return f"{function}({USER_LOCK_SPACE}, hashtext(CAST({tenant_sql} AS text) || chr(31) || CAST({user_sql} AS text)))"


# The one process (of all API processes on a database) that runs the vector outbox worker holds this lock.
OUTBOX_LEADER_LOCK = 0x63786F62  # "cxob"


class SessionLock:
    """A session-level advisory lock on a connection of its own (not the pool's), held as long as the
    connection lives: when the holding process dies, PostgreSQL ends its session and frees the lock, and
    another process's ``acquire()`` takes it."""

    def __init__(self, url: str, key: int, *, timeout: float = 5.0) -> None:
        self.url = url
        self.key = key
        self.timeout = timeout
        self._conn: Any = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    async def acquire(self) -> bool:
        """Try once, without waiting; True if this process holds the lock now."""
        if self._conn is not None:
            return True
        import asyncpg

        from service.db.engine import plain_url

        conn = await asyncpg.connect(
            plain_url(self.url), timeout=self.timeout, server_settings={"application_name": "ctxmem-leader"}
        )
        try:
            got = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", self.key))
        except BaseException:
            await conn.close()
            raise
        if not got:
            await conn.close()
            return False
        self._conn = conn
        return True

    async def check(self) -> bool:
        """Whether the lock is still held (its connection answers); if not, it is dropped."""
        if self._conn is None:
            return False
        try:
            await self._conn.fetchval("SELECT 1", timeout=self.timeout)
        except Exception:
            await self.release()
            return False
        return True

    async def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close(timeout=self.timeout)
            except Exception:
                conn.terminate()
