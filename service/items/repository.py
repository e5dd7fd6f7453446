"""Every SQL statement of the context-item domain."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, insert, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import ColumnElement

from service.db.models import ContextItem, EndUser

C = ContextItem.__table__.c  # type: ignore[attr-defined]


async def ensure_user(session: AsyncSession, tenant_id: str, user_id: str, now: datetime) -> None:
    stmt = pg_insert(EndUser).values(tenant_id=tenant_id, user_id=user_id, created_at=now, updated_at=now)
    stmt = stmt.on_conflict_do_update(
        index_elements=[EndUser.tenant_id, EndUser.user_id], set_={"updated_at": now}
    )
    await session.execute(stmt)


async def user_exists(session: AsyncSession, tenant_id: str, user_id: str) -> bool:
    stmt = (
        select(func.count())
        .select_from(EndUser)
        .where(EndUser.tenant_id == tenant_id, EndUser.user_id == user_id)
    )
    return bool((await session.execute(stmt)).scalar_one())


async def insert_items(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    await session.execute(insert(ContextItem), list(rows))


async def existing_ids(
    session: AsyncSession, tenant_id: str, user_id: str, ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    if not ids:
        return set()
    stmt = select(C.id).where(C.tenant_id == tenant_id, C.user_id == user_id, C.id.in_(list(ids)))
    return set((await session.execute(stmt)).scalars())


async def get_item(
    session: AsyncSession, tenant_id: str, user_id: str, item_id: uuid.UUID, *, for_update: bool = False
) -> ContextItem | None:
    stmt = select(ContextItem).where(
        ContextItem.tenant_id == tenant_id, ContextItem.user_id == user_id, ContextItem.id == item_id
    )
    if for_update:
        stmt = stmt.with_for_update()
    return (await session.execute(stmt)).scalar_one_or_none()


async def tombstone(session: AsyncSession, item_id: uuid.UUID, now: datetime, reason: str | None) -> None:
    await session.execute(
        update(ContextItem)
        .where(ContextItem.id == item_id)
        .values(
            status="deleted", deleted_at=now, updated_at=now, status_reason=reason or "deleted by request"
        )
    )


def visibility_filter(
    *,
    now: datetime,
    statuses: Sequence[str] | None,
    include_superseded: bool,
    include_expired: bool,
    include_deleted: bool,
) -> list[ColumnElement[bool]]:
    """Superseded, expired (by status or by time) and deleted items are hidden unless asked for.
    An explicit ``status`` filter is taken literally."""
    if statuses:
        return [C.status.in_(list(statuses))]
    hidden = []
    if not include_superseded:
        hidden.append("superseded")
    if not include_deleted:
        hidden.append("deleted")
    if not include_expired:
        hidden.append("expired")
    conds: list[ColumnElement[bool]] = []
    if hidden:
        conds.append(C.status.not_in(hidden))
    if not include_expired:
        conds.append(or_(C.expires_at.is_(None), C.expires_at > now))
    return conds


async def list_items(
    session: AsyncSession,
    *,
    tenant_id: str,
    user_id: str,
    filters: dict[str, Sequence[str] | str | None],
    visibility: list[ColumnElement[bool]],
    after_id: uuid.UUID | None,
    descending: bool,
    limit: int,
) -> list[ContextItem]:
    conds: list[ColumnElement[bool]] = [C.tenant_id == tenant_id, C.user_id == user_id, *visibility]
    for column, wanted in filters.items():
        if wanted is None or (not isinstance(wanted, str) and not wanted):
            continue
        col = C[column]
        conds.append(col == wanted if isinstance(wanted, str) else col.in_(list(wanted)))
    if after_id is not None:
        conds.append(C.id < after_id if descending else C.id > after_id)
    order = C.id.desc() if descending else C.id.asc()
    stmt = select(ContextItem).where(and_(*conds)).order_by(order).limit(limit)
    return list((await session.execute(stmt)).scalars())
