"""Every SQL statement of the profile domain."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, bindparam, insert, or_, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import Event, Observation, ProfileEntry

E = ProfileEntry.__table__  # type: ignore[attr-defined]
O = Observation.__table__  # type: ignore[attr-defined]  # noqa: E741

IDENTITY = ("domain_key", "dimension", "key", "value", "polarity")


async def create_missing_entries(session: AsyncSession, *, rows: Sequence[dict[str, Any]]) -> set[uuid.UUID]:
    """Insert entries that do not exist yet (by belief identity); returns the ids actually inserted."""
    if not rows:
        return set()
    stmt = pg_insert(E).values(list(rows)).on_conflict_do_nothing(constraint="uq_profile_entry_belief")
    result = await session.execute(stmt.returning(E.c.id))
    return set(result.scalars())


async def lock_entries(
    session: AsyncSession, *, tenant_id: str, user_id: str, identities: Sequence[tuple[str, ...]]
) -> list[Any]:
    """The entries with these identities, row-locked in id order (so concurrent writers cannot deadlock)."""
    stmt = (
        select(E)
        .where(E.c.tenant_id == tenant_id, E.c.user_id == user_id)
        .where(tuple_(*(E.c[c] for c in IDENTITY)).in_(list(identities)))
        .order_by(E.c.id)
        .with_for_update()
    )
    return list((await session.execute(stmt)).mappings())


async def insert_observations(session: AsyncSession, *, rows: Sequence[dict[str, Any]]) -> None:
    await session.execute(insert(O), list(rows))


async def observations_for(session: AsyncSession, *, tenant_id: str, entry_ids: Sequence[uuid.UUID]) -> list[Any]:
    stmt = (
        select(O).where(O.c.tenant_id == tenant_id, O.c.entry_id.in_(list(entry_ids))).order_by(O.c.observed_at, O.c.id)
    )
    return list((await session.execute(stmt)).mappings())


async def update_entries(session: AsyncSession, *, tenant_id: str, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        return
    columns = [c for c in rows[0] if c != "id"]
    stmt = (
        update(E)
        .where(E.c.tenant_id == tenant_id, E.c.id == bindparam("_id"))
        .values({c: bindparam(f"_{c}") for c in columns})
    )
    await session.execute(stmt, [{f"_{k}": v for k, v in r.items()} for r in rows])


async def user_entries(
    session: AsyncSession, *, tenant_id: str, user_id: str, tiers: Sequence[str] | None, domains: Sequence[str] | None
) -> list[Any]:
    conds = [E.c.tenant_id == tenant_id, E.c.user_id == user_id]
    if tiers:
        conds.append(E.c.tier.in_(list(tiers)))
    if domains:
        conds.append(or_(E.c.domain.is_(None), E.c.domain.in_(list(domains))))
    stmt = select(E).where(and_(*conds)).order_by(E.c.id)
    return list((await session.execute(stmt)).mappings())


async def entry(session: AsyncSession, *, tenant_id: str, user_id: str, entry_id: uuid.UUID) -> Any | None:
    stmt = select(E).where(E.c.tenant_id == tenant_id, E.c.user_id == user_id, E.c.id == entry_id)
    return (await session.execute(stmt)).mappings().one_or_none()


async def entry_events(session: AsyncSession, *, tenant_id: str, entity_ids: Sequence[str]) -> list[Any]:
    stmt = (
        select(Event)
        .where(Event.tenant_id == tenant_id, Event.entity_id.in_(list(entity_ids)))  # type: ignore[union-attr]
        .order_by(Event.id.desc())  # type: ignore[attr-defined]
    )
    return list((await session.execute(stmt)).scalars())
