"""SQL for a user as a whole: its row (made on first write), export streams and erasure."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, literal, select, text, union_all
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from service.db.locks import user_lock_sql
from service.db.models import (
    ContextItem,
    ConversationMessage,
    EndUser,
    Event,
    IdempotencyRecord,
    Observation,
    ProfileEntry,
)

# Tables holding a user's rows, in the order they must be erased (children before end_user).
# Later stores (profiles, observations, vectors' outbox) join this list.
USER_TABLES: list[Any] = [
    Observation,
    ProfileEntry,
    ConversationMessage,
    ContextItem,
    Event,
    IdempotencyRecord,
    EndUser,
]


_ENSURE_USER = text(
    "INSERT INTO end_user (tenant_id, user_id, created_at, updated_at) "
    "SELECT CAST(:t AS text), CAST(:u AS text), CAST(:now AS timestamptz), CAST(:now AS timestamptz) "
    f"FROM (SELECT {user_lock_sql('pg_advisory_xact_lock_shared', ':t', ':u')}) AS l "
    "ON CONFLICT (tenant_id, user_id) DO NOTHING"
)


async def ensure_user(session: AsyncSession, *, tenant_id: str, user_id: str, now: datetime) -> None:
    """The first statement of every write: the user's lock, shared (service/db/locks.py: a write waits for
    an erasure of its user in progress and is then wholly after it), and the user row.
    DO NOTHING, not DO UPDATE: an update would row-lock the user for the whole transaction and
    serialise every write of that user; slots are locked on their own (lock_slots)."""
    await session.execute(_ENSURE_USER, {"t": tenant_id, "u": user_id, "now": now})


_LOCK_USER = text(f"SELECT {user_lock_sql('pg_advisory_xact_lock', ':t', ':u')}")


async def lock_user(session: AsyncSession, *, tenant_id: str, user_id: str) -> None:
    """The user's lock, exclusively (service/db/locks.py): waits for the writes and outbox batches of the
    user in progress; later ones wait for this transaction (the worker skips the user)."""
    await session.execute(_LOCK_USER, {"t": tenant_id, "u": user_id})


async def user_exists(session: AsyncSession, *, tenant_id: str, user_id: str) -> bool:
    """Whether anything was ever written for this user id in this tenant (the end_user row)."""
    stmt = select(EndUser.user_id).where(EndUser.tenant_id == tenant_id, EndUser.user_id == user_id).limit(1)
    return (await session.execute(stmt)).first() is not None


async def count_rows(session: AsyncSession, *, tenant_id: str, user_id: str) -> dict[str, int]:
    """The user's rows per table of ``USER_TABLES``, in one statement (one snapshot): what ``erase_user``
    would delete now."""
    parts = [
        select(literal(m.__table__.name).label("name"), func.count().label("n"))
        .select_from(m.__table__)
        .where(m.__table__.c.tenant_id == tenant_id, m.__table__.c.user_id == user_id)
        for m in USER_TABLES
    ]
    found = {name: int(n) for name, n in (await session.execute(union_all(*parts))).all()}
    return {m.__table__.name: found[m.__table__.name] for m in USER_TABLES}


async def erase_user(
    session: AsyncSession, *, tenant_id: str, user_id: str, keep_idempotency_key: str | None
) -> dict[str, int]:
    counts: dict[str, int] = {}
    for model in USER_TABLES:
        table = model.__table__
        stmt = delete(table).where(table.c.tenant_id == tenant_id, table.c.user_id == user_id)
        if model is IdempotencyRecord and keep_idempotency_key is not None:
            # The erase request's own record survives, detached from the user, so it can be replayed.
            stmt = stmt.where(table.c.key != keep_idempotency_key)
        result = await session.execute(stmt)
        counts[table.name] = int(result.rowcount)  # type: ignore[attr-defined]
    return counts


async def stream_rows(conn: AsyncConnection, *, model: Any, tenant_id: str, user_id: str) -> AsyncIterator[Any]:
    table = model.__table__
    stmt = (
        select(table)
        .where(table.c.tenant_id == tenant_id, table.c.user_id == user_id)
        .order_by(*table.primary_key.columns)
    )
    result = await conn.stream(stmt.execution_options(yield_per=500))
    async for row in result:
        yield row
