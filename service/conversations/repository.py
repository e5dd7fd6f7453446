"""Every SQL statement of conversations: append in order, read a session's live tail or a page of it,
claim messages for an archive, end a session."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import ConversationMessage

M = ConversationMessage
T = M.__table__  # type: ignore[attr-defined]
C = T.c

# Appends to one session are serialised on a transaction-scoped advisory lock of the session (the user's
# own lock is only held shared by writes): each append reads the session's last seq and numbers after it.
# The hash's seed is "cxco" (0x6378636f) written in decimal: hexadecimal integer literals are PostgreSQL 16+.
_SESSION_LOCK_SEED = 0x6378636F
_SESSION_LOCK = text(
    "SELECT pg_advisory_xact_lock(hashtextextended(CAST(:tenant_id AS text) || chr(31) || CAST(:user_id AS text) "
    f"|| chr(31) || CAST(:session_id AS text), {_SESSION_LOCK_SEED}))"
)


async def lock_session(session: AsyncSession, *, tenant_id: str, user_id: str, session_id: str) -> None:
    await session.execute(_SESSION_LOCK, {"tenant_id": tenant_id, "user_id": user_id, "session_id": session_id})


async def last_seq(session: AsyncSession, *, tenant_id: str, user_id: str, session_id: str) -> int:
    stmt = select(func.coalesce(func.max(C.seq), 0)).where(
        C.tenant_id == tenant_id, C.user_id == user_id, C.session_id == session_id
    )
    return int((await session.execute(stmt)).scalar_one())


async def insert(session: AsyncSession, *, rows: Sequence[dict[str, Any]]) -> None:
    await session.execute(T.insert(), list(rows))


async def live_tail(
    session: AsyncSession, *, tenant_id: str, user_id: str, session_id: str, limit: int
) -> list[ConversationMessage]:
    """The session's newest ``limit`` messages no window has archived yet, oldest first."""
    stmt = (
        select(M)
        .where(
            C.tenant_id == tenant_id,
            C.user_id == user_id,
            C.session_id == session_id,
            C.archived_at.is_(None),
        )
        .order_by(C.seq.desc())
        .limit(limit)
    )
    rows = list((await session.execute(stmt)).scalars())
    rows.reverse()
    return rows


async def page(
    session: AsyncSession,
    *,
    tenant_id: str,
    user_id: str,
    session_id: str,
    after: uuid.UUID | None,
    limit: int,
) -> list[ConversationMessage]:
    stmt = select(M).where(C.tenant_id == tenant_id, C.user_id == user_id, C.session_id == session_id)
    if after is not None:
        stmt = stmt.where(C.id > after)
    return list((await session.execute(stmt.order_by(C.id).limit(limit))).scalars())


async def claim(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID], now: datetime
) -> list[ConversationMessage]:
    """Mark the given messages archived now, those no other transaction archived first; oldest first."""
    if not ids:
        return []
    stmt = (
        update(M)
        .where(C.tenant_id == tenant_id, C.id.in_(list(ids)), C.archived_at.is_(None))
        .values(archived_at=now)
        .returning(M)
    )
    rows = list((await session.execute(stmt)).scalars())
    return sorted(rows, key=lambda r: r.seq)


async def set_archive(session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID], item_id: uuid.UUID) -> None:
    await session.execute(
        update(M).where(C.tenant_id == tenant_id, C.id.in_(list(ids))).values(archived_item_id=item_id)
    )


async def delete_session(
    session: AsyncSession, *, tenant_id: str, user_id: str, session_id: str, keep_waiting: bool, now: datetime
) -> int:
    """Remove the session's messages; with ``keep_waiting``, those still waiting for extraction are marked
    ended instead and removed once extracted (service/extraction/). Returns the messages removed or marked."""
    of_session = (C.tenant_id == tenant_id, C.user_id == user_id, C.session_id == session_id)
    if not keep_waiting:
        return int((await session.execute(delete(M).where(*of_session))).rowcount or 0)  # type: ignore[attr-defined]
    removed = await session.execute(delete(M).where(*of_session, C.extracted_by.is_not(None)))
    kept = await session.execute(
        update(M).where(*of_session, C.extracted_by.is_(None), C.ended_at.is_(None)).values(ended_at=now)
    )
    return int(removed.rowcount or 0) + int(kept.rowcount or 0)  # type: ignore[attr-defined]


async def pop_last(
    session: AsyncSession, *, tenant_id: str, user_id: str, session_id: str
) -> ConversationMessage | None:
    """Remove the session's newest message, unless a window archived it (then nothing is removed)."""
    newest = (
        select(C.id)
        .where(C.tenant_id == tenant_id, C.user_id == user_id, C.session_id == session_id)
        .order_by(C.seq.desc())
        .limit(1)
        .scalar_subquery()
    )
    stmt = delete(M).where(C.tenant_id == tenant_id, C.id == newest, C.archived_at.is_(None)).returning(M)
    return (await session.execute(stmt)).scalars().one_or_none()
