"""Every SQL statement of the context-item domain."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Text, and_, bindparam, func, literal_column, or_, select, text, update
from sqlalchemy import cast as sa_cast
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import ColumnElement, Select

from scoring.window import HANDLE_CHARS
from service.db.bulk import copy_rows
from service.db.models import ACTIVE_STATUSES, ContextItem

T = ContextItem.__table__  # type: ignore[attr-defined]
C = T.c


async def insert_items(session: AsyncSession, *, rows: Sequence[dict[str, Any]]) -> None:
    # One COPY, not the ORM bulk insert: that drops None-valued keys row by row and emits one INSERT per run
    # of rows with equal key sets, so a batch of sparse items becomes nearly one statement per item.
    await copy_rows(session, T, rows)


async def existing_ids(
    session: AsyncSession, *, tenant_id: str, user_id: str, ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    if not ids:
        return set()
    stmt = select(C.id).where(C.tenant_id == tenant_id, C.user_id == user_id, C.id.in_(list(ids)))
    return set((await session.execute(stmt)).scalars())


async def get_item(
    session: AsyncSession, *, tenant_id: str, user_id: str, item_id: uuid.UUID, for_update: bool = False
) -> ContextItem | None:
    stmt = select(ContextItem).where(
        ContextItem.tenant_id == tenant_id, ContextItem.user_id == user_id, ContextItem.id == item_id
    )
    if for_update:
        stmt = stmt.with_for_update()
    return (await session.execute(stmt)).scalar_one_or_none()


def id_end() -> ColumnElement[str]:
    """The last ``HANDLE_CHARS`` characters of an item's id as text (hex digits: an id's last group has 12),
    as ``ix_context_item_handle`` indexes them (``service.db.models.HANDLE_INDEX``, migration 0019): the
    same expression, its length a constant, or the index does not serve the lookup."""
    return func.right(sa_cast(ContextItem.id, Text), literal_column(str(HANDLE_CHARS)))


def handle_query(*, tenant_id: str, user_id: str, handle: str, limit: int) -> Select[tuple[ContextItem]]:
    """The statement of :func:`find_by_handle`."""
    stmt = select(ContextItem).where(
        ContextItem.tenant_id == tenant_id, ContextItem.user_id == user_id, id_end() == handle[-HANDLE_CHARS:]
    )
    if len(handle) > HANDLE_CHARS:
        stmt = stmt.where(sa_cast(ContextItem.id, Text).endswith(handle, autoescape=True))
    return stmt.order_by(ContextItem.id).limit(limit)


async def find_by_handle(
    session: AsyncSession, *, tenant_id: str, user_id: str, handle: str, limit: int
) -> list[ContextItem]:
    """Up to ``limit`` of the user's items whose id ends with ``handle`` (at least ``HANDLE_CHARS`` lowercase
    hex digits and dashes, as ``scoring.window.as_handle`` gives it), by id: the index over the ids' ends
    (``ix_context_item_handle``) finds those ending in its last ``HANDLE_CHARS`` characters, and a longer
    handle is then matched whole."""
    stmt = handle_query(tenant_id=tenant_id, user_id=user_id, handle=handle, limit=limit)
    # Planned for its values: a generic plan (the reads pool runs nothing else, and PostgreSQL may settle on one
    # after five runs) estimates about one row for any (tenant, user) of a table of many tenants and may then
    # read every item of a large user through ix_context_item_window, filtering on the id's end.
    was = (await session.execute(_CUSTOM_PLANS)).scalar_one()
    try:
        return list((await session.execute(stmt)).scalars())
    finally:
        await session.execute(_PLANS_BACK, {"mode": was})


_CUSTOM_PLANS = text(
    "SELECT current_setting('plan_cache_mode') AS was, set_config('plan_cache_mode', 'force_custom_plan', false)"
)
_PLANS_BACK = text("SELECT set_config('plan_cache_mode', :mode, false)")


async def tombstone(
    session: AsyncSession, *, tenant_id: str, item_id: uuid.UUID, now: datetime, reason: str | None
) -> None:
    await session.execute(
        update(ContextItem)
        .where(ContextItem.tenant_id == tenant_id, ContextItem.id == item_id)
        .values(status="deleted", deleted_at=now, updated_at=now, status_reason=reason or "deleted by request")
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


def extracted_filter(wanted: str | None) -> list[ColumnElement[bool]]:
    """The ``extracted_by`` listing filter: ``any`` learned item, ``none`` (written by clients), an
    extractor's name (every version of it) or one version (``rules/1``)."""
    if wanted is None:
        return []
    if wanted == "any":
        return [C.extracted_by.is_not(None)]
    if wanted == "none":
        return [C.extracted_by.is_(None)]
    if "/" in wanted:
        return [C.extracted_by == wanted]
    return [C.extracted_by.startswith(wanted + "/", autoescape=True)]


async def lock_slots(session: AsyncSession, *, slot_names: Sequence[str]) -> None:
    """Transaction-scoped advisory locks, one per slot, taken in sorted order so that two writers
    locking overlapping slots cannot deadlock. A hash collision only serialises two unrelated slots."""
    if not slot_names:
        return
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(s, 0)) FROM unnest(CAST(:slots AS text[])) AS s"),
        {"slots": sorted(set(slot_names))},
    )


async def active_for_keys(
    session: AsyncSession, *, tenant_id: str, user_id: str, keys: Sequence[str], lock: bool
) -> list[Any]:
    """Active keyed items of the user with any of ``keys`` (all scopes), locked when asked."""
    if not keys:
        return []
    stmt = (
        select(T)
        .where(
            C.tenant_id == tenant_id,
            C.user_id == user_id,
            C.key.in_(sorted(set(keys))),
            C.status.in_(ACTIVE_STATUSES),
        )
        .order_by(C.id)
    )
    if lock:
        stmt = stmt.with_for_update()
    return list((await session.execute(stmt)).mappings())


async def items_by_ids(
    session: AsyncSession, *, tenant_id: str, user_id: str, ids: Sequence[uuid.UUID], lock: bool
) -> list[Any]:
    if not ids:
        return []
    stmt = select(T).where(C.tenant_id == tenant_id, C.user_id == user_id, C.id.in_(sorted(set(ids)))).order_by(C.id)
    if lock:
        stmt = stmt.with_for_update()
    return list((await session.execute(stmt)).mappings())


async def apply_updates(session: AsyncSession, *, tenant_id: str, updates: Sequence[dict[str, Any]]) -> None:
    """Update existing items of ``tenant_id`` by id; every dict carries ``id`` and the same set of columns per
    group."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for u in updates:
        groups.setdefault(tuple(sorted(k for k in u if k != "id")), []).append(u)
    for columns, rows in groups.items():
        stmt = (
            update(T)
            .where(C.tenant_id == tenant_id, C.id == bindparam("_id"))
            .values({col: bindparam(f"_{col}") for col in columns})
        )
        await session.execute(stmt, [{f"_{k}": v for k, v in row.items()} for row in rows])


async def effective_candidates(
    session: AsyncSession,
    *,
    tenant_id: str,
    user_id: str,
    now: datetime,
    refs: dict[str, str | None],
    filters: dict[str, Sequence[str] | str | None],
) -> list[ContextItem]:
    """Active, unexpired items that could apply in a context: user/global scope, plus the scopes whose
    instance id is given in ``refs`` (scope → id)."""
    scope_conds: list[ColumnElement[bool]] = [C.scope.in_(("user", "global"))]
    for scope, ref in refs.items():
        if ref:
            scope_conds.append(and_(C.scope == scope, C.scope_ref == ref))
    conds: list[ColumnElement[bool]] = [
        C.tenant_id == tenant_id,
        C.user_id == user_id,
        C.status.in_(ACTIVE_STATUSES),
        or_(C.expires_at.is_(None), C.expires_at > now),
        or_(*scope_conds),
    ]
    for column, wanted in filters.items():
        if wanted is None or (not isinstance(wanted, str) and not wanted):
            continue
        col = C[column]
        conds.append(col == wanted if isinstance(wanted, str) else col.in_(list(wanted)))
    stmt = select(ContextItem).where(and_(*conds)).order_by(C.id)
    return list((await session.execute(stmt)).scalars())
