"""SQL of the operator console: its sessions (``console_session``) and the set-based reads of its pages."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import ApiKey, ConsoleSession, Event, active_sql

S = ConsoleSession.__table__  # type: ignore[attr-defined]
K = ApiKey.__table__  # type: ignore[attr-defined]
E = Event.__table__  # type: ignore[attr-defined]


async def insert_session(session: AsyncSession, *, row: dict[str, Any]) -> None:
    await session.execute(S.insert().values(**row))


async def touch_session(session: AsyncSession, *, token_hash: str, now: datetime, idle_since: datetime) -> Any | None:
    """The live session of ``token_hash`` with its key, its ``last_seen_at`` moved to ``now``: live means seen
    after ``idle_since`` and signed in with a key that is not revoked. None otherwise."""
    stmt = (
        update(S)
        .where(
            S.c.token_hash == token_hash, S.c.last_seen_at > idle_since, K.c.id == S.c.key_id, K.c.revoked_at.is_(None)
        )
        .values(last_seen_at=now)
        .returning(S.c.id, S.c.csrf_token, S.c.flash, K.c.id.label("key_id"), K.c.tenant_id, K.c.role, K.c.prefix)
    )
    return (await session.execute(stmt)).mappings().one_or_none()


async def set_flash(session: AsyncSession, *, session_id: uuid.UUID, message: str | None) -> None:
    await session.execute(update(S).where(S.c.id == session_id).values(flash=message))


async def delete_session(session: AsyncSession, *, token_hash: str) -> None:
    await session.execute(delete(S).where(S.c.token_hash == token_hash))


async def delete_idle_sessions(session: AsyncSession, *, key_id: uuid.UUID, idle_since: datetime) -> None:
    """The key's sessions that went idle: swept when the key signs in again, so they do not pile up."""
    await session.execute(delete(S).where(S.c.key_id == key_id, S.c.last_seen_at <= idle_since))


async def delete_key_sessions(session: AsyncSession, *, key_id: uuid.UUID) -> None:
    """Every session of a key (it was revoked): they end now, not at their next request."""
    await session.execute(delete(S).where(S.c.key_id == key_id))


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# One statement for a page of users: each user's newest event (through the timeline's index, newest id
# first) and its counts, each a lateral probe of that user's rows only.
_USERS = f"""
SELECT u.user_id, u.created_at, ev.last_event_at,
       COALESCE(it.items, 0) AS items, COALESCE(it.items_total, 0) AS items_total,
       COALESCE(pe.entries, 0) AS entries, COALESCE(ob.observations, 0) AS observations
FROM end_user u
LEFT JOIN LATERAL (
    SELECT e.created_at AS last_event_at FROM event e
    WHERE e.tenant_id = u.tenant_id AND e.user_id = u.user_id ORDER BY e.id DESC LIMIT 1
) ev ON true
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE {active_sql("i")}) AS items,
           count(*) FILTER (WHERE i.status <> 'deleted') AS items_total
    FROM context_item i WHERE i.tenant_id = u.tenant_id AND i.user_id = u.user_id
) it ON true
LEFT JOIN LATERAL (
    SELECT count(*) AS entries FROM profile_entry p WHERE p.tenant_id = u.tenant_id AND p.user_id = u.user_id
) pe ON true
LEFT JOIN LATERAL (
    SELECT count(*) AS observations FROM observation o WHERE o.tenant_id = u.tenant_id AND o.user_id = u.user_id
) ob ON true
WHERE u.tenant_id = :tenant_id AND u.user_id LIKE :prefix ESCAPE '\\' AND (:after = '' OR u.user_id > :after)
      AND (:exact = '' OR u.user_id = :exact)
ORDER BY u.user_id
LIMIT :limit
"""


async def users(
    session: AsyncSession, *, tenant_id: str, prefix: str, after: str, exact: str = "", limit: int
) -> list[Any]:
    """Users of ``tenant_id`` whose id starts with ``prefix`` (or is ``exact``), after ``after`` in id order,
    with their last event time and their counts: items in force and not deleted, profile entries,
    observations."""
    params = {"tenant_id": tenant_id, "prefix": _like_prefix(prefix), "after": after, "exact": exact, "limit": limit}
    return list((await session.execute(text(_USERS), params)).mappings())


# Slots (key, scope instance) that more than one of the user's items has held or contested, the first
# :limit of them in key order, through the slot index.
_CONFLICTED = text("""
SELECT i.* FROM context_item i
JOIN (
    SELECT key, scope, scope_ref FROM context_item
    WHERE tenant_id = :tenant_id AND user_id = :user_id AND key IS NOT NULL
    GROUP BY key, scope, scope_ref HAVING count(*) > 1
    ORDER BY key, scope, scope_ref LIMIT :limit
) s ON (i.key, i.scope, i.scope_ref) = (s.key, s.scope, s.scope_ref)
WHERE i.tenant_id = :tenant_id AND i.user_id = :user_id
ORDER BY i.key, i.scope, i.scope_ref, i.id
""")


async def conflicted_slot_items(session: AsyncSession, *, tenant_id: str, user_id: str, limit: int) -> list[Any]:
    params = {"tenant_id": tenant_id, "user_id": user_id, "limit": limit}
    return list((await session.execute(_CONFLICTED, params)).mappings())


async def item_events(session: AsyncSession, *, tenant_id: str, user_id: str, item_ids: list[uuid.UUID]) -> list[Any]:
    """The events about these items of the user, oldest first."""
    if not item_ids:
        return []
    stmt = (
        select(Event)
        .where(
            E.c.tenant_id == tenant_id,
            E.c.user_id == user_id,
            E.c.entity_type == "context_item",
            E.c.entity_id.in_([str(i) for i in item_ids]),
        )
        .order_by(E.c.id)
    )
    return list((await session.execute(stmt)).scalars())
