"""SQL of a user's event timeline."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import Event

T = Event.__table__  # type: ignore[attr-defined]


async def user_events(
    session: AsyncSession,
    *,
    tenant_id: str,
    user_id: str,
    kinds: Sequence[str],
    after_id: uuid.UUID | None,
    descending: bool,
    limit: int,
) -> list[Event]:
    stmt = select(Event).where(T.c.tenant_id == tenant_id, T.c.user_id == user_id)
    if kinds:
        stmt = stmt.where(or_(*(T.c.action.startswith(f"{k}.", autoescape=True) for k in kinds)))
    if after_id is not None:
        stmt = stmt.where(T.c.id < after_id if descending else T.c.id > after_id)
    stmt = stmt.order_by(T.c.id.desc() if descending else T.c.id.asc()).limit(limit)
    return list((await session.execute(stmt)).scalars())
