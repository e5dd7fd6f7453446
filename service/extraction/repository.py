"""Every SQL statement of extraction: a session's waiting messages, marking them extracted, the sessions
due for the extract job, retiring an older extractor version's records, ended sessions' leftovers, and
the tenant's daily token count."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import ACTIVE_STATUSES, ContextItem, ConversationMessage, ExtractionUsage

M = ConversationMessage.__table__.c  # type: ignore[attr-defined]
I = ContextItem.__table__.c  # type: ignore[attr-defined]  # noqa: E741
U = ExtractionUsage.__table__  # type: ignore[attr-defined]

# One extraction of a session at a time (the job and the on-demand route may meet): a transaction-scoped
# advisory lock of the session, apart from the lock appends take, so that appends never wait for an
# extraction. Seed "cxex" (0x63786578) in decimal, as conversations/repository.py does for its own.
_EXTRACT_LOCK_SEED = 0x63786578
_LOCK_ARGS = (
    "hashtextextended(CAST(:tenant_id AS text) || chr(31) || CAST(:user_id AS text) "
    f"|| chr(31) || CAST(:session_id AS text), {_EXTRACT_LOCK_SEED})"
)
_LOCK = text(f"SELECT pg_advisory_xact_lock({_LOCK_ARGS})")
_TRY_LOCK = text(f"SELECT pg_try_advisory_xact_lock({_LOCK_ARGS})")


async def lock_session(session: AsyncSession, *, tenant_id: str, user_id: str, session_id: str, wait: bool) -> bool:
    """Take the session's extraction lock for this transaction; without ``wait``, only if it is free."""
    params = {"tenant_id": tenant_id, "user_id": user_id, "session_id": session_id}
    if wait:
        await session.execute(_LOCK, params)
        return True
    return bool((await session.execute(_TRY_LOCK, params)).scalar_one())


async def waiting(
    session: AsyncSession, *, tenant_id: str, user_id: str, session_id: str, limit: int, other_than: str | None
) -> list[ConversationMessage]:
    """The session's messages waiting for extraction, oldest first, at most ``limit``. With ``other_than``
    (an extractor version), the messages another version extracted wait too: a re-extraction."""
    waits = M.extracted_by.is_(None)
    if other_than is not None:
        waits = waits | (M.extracted_by != other_than)
    stmt = (
        select(ConversationMessage)
        .where(M.tenant_id == tenant_id, M.user_id == user_id, M.session_id == session_id, waits)
        .order_by(M.seq)
        .limit(limit)
    )
    return list((await session.execute(stmt)).scalars())


async def count_waiting(session: AsyncSession, *, tenant_id: str, user_id: str, session_id: str) -> int:
    stmt = select(func.count()).where(
        M.tenant_id == tenant_id, M.user_id == user_id, M.session_id == session_id, M.extracted_by.is_(None)
    )
    return int((await session.execute(stmt)).scalar_one())


async def mark_extracted(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID], version: str, now: datetime
) -> None:
    if ids:
        await session.execute(
            update(ConversationMessage)
            .where(M.tenant_id == tenant_id, M.id.in_(list(ids)))
            .values(extracted_by=version, extracted_at=now)
        )


async def drop_ended(session: AsyncSession, *, tenant_id: str, user_id: str, session_id: str) -> int:
    """Remove the messages of an ended session that are extracted now (the ones it kept only for that)."""
    stmt = delete(ConversationMessage).where(
        M.tenant_id == tenant_id,
        M.user_id == user_id,
        M.session_id == session_id,
        M.ended_at.is_not(None),
        M.extracted_by.is_not(None),
    )
    return int((await session.execute(stmt)).rowcount or 0)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class DueSession:
    tenant_id: str
    user_id: str
    session_id: str
    waiting: int


# The sessions whose buffer is due: enough messages wait, the newest has waited long enough, or the session
# ended. Read from the partial index of waiting messages. Oldest first, so a backlog drains in order.
_DUE = """
SELECT tenant_id, user_id, session_id, count(*) AS waiting
FROM conversation_message
WHERE extracted_by IS NULL AND (CAST(:tenant AS text) IS NULL OR tenant_id = CAST(:tenant AS text))
GROUP BY tenant_id, user_id, session_id
HAVING count(*) >= :size OR max(created_at) <= :idle_before OR bool_or(ended_at IS NOT NULL)
ORDER BY min(created_at), tenant_id, user_id, session_id
LIMIT :limit
"""


async def due_sessions(
    session: AsyncSession, *, tenant_id: str | None, size: int, idle_before: datetime, limit: int
) -> list[DueSession]:
    params = {"tenant": tenant_id, "size": size, "idle_before": idle_before, "limit": limit}
    rows = (await session.execute(text(_DUE), params)).all()
    return [DueSession(r.tenant_id, r.user_id, r.session_id, int(r.waiting)) for r in rows]


async def older_records(
    session: AsyncSession, *, tenant_id: str, user_id: str, message_ids: Sequence[uuid.UUID], version: str
) -> list[Any]:
    """The records in force that another extractor version learned from ``message_ids``, locked: what a
    re-extraction with ``version`` retires."""
    if not message_ids:
        return []
    ids = [str(m) for m in message_ids]
    stmt = (
        select(I.id, I.key, I.status, I.extracted_by)
        .where(
            I.tenant_id == tenant_id,
            I.user_id == user_id,
            I.extracted_by.is_not(None),
            I.extracted_by != version,
            I.status.in_(ACTIVE_STATUSES),
            I.evidence["message_id"].astext.in_(ids),
        )
        .with_for_update()
    )
    return list((await session.execute(stmt)).all())


async def retire(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID], reason: str, now: datetime
) -> None:
    if ids:
        await session.execute(
            update(ContextItem)
            .where(I.tenant_id == tenant_id, I.id.in_(list(ids)))
            .values(status="superseded", status_reason=reason, valid_to=now, updated_at=now)
        )


async def tokens_spent(session: AsyncSession, *, tenant_id: str, day: date) -> int:
    stmt = select(U.c.prompt_tokens + U.c.completion_tokens).where(U.c.tenant_id == tenant_id, U.c.day == day)
    return int((await session.execute(stmt)).scalar_one_or_none() or 0)


async def add_usage(
    session: AsyncSession, *, tenant_id: str, day: date, calls: int, prompt_tokens: int, completion_tokens: int
) -> None:
    stmt = insert(U).values(
        tenant_id=tenant_id, day=day, calls=calls, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[U.c.tenant_id, U.c.day],
        set_={
            "calls": U.c.calls + stmt.excluded.calls,
            "prompt_tokens": U.c.prompt_tokens + stmt.excluded.prompt_tokens,
            "completion_tokens": U.c.completion_tokens + stmt.excluded.completion_tokens,
        },
    )
    await session.execute(stmt)
