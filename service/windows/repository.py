"""The window's reads: one query for the user's applicable items, one for their profile entries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import ContextItem, ProfileEntry

C = ContextItem.__table__.c  # type: ignore[attr-defined]
P = ProfileEntry.__table__.c  # type: ignore[attr-defined]

ITEM_COLUMNS = (
    C.id,
    C.type,
    C.content,
    C.key,
    C.value,
    C.domain,
    C.source,
    C.authority,
    C.scope,
    C.scope_ref,
    C.session_id,
    C.task_id,
    C.stage_id,
    C.step_id,
    C.hard,
    C.status,
    C.confidence,
    C.observed_at,
    C.expires_at,
    C.updated_at,
    C.token_cost,
    C.level_texts,
    C.level_tokens,
    C.related_ids,
    C.variants,
)


async def window_items(
    session: AsyncSession,
    *,
    tenant_id: str,
    user_id: str,
    refs: dict[str, str | None],
    domains: Sequence[str] | None,
) -> list[Any]:
    """Active items (expired ones too: the service reports stale tool results) of the user and global
    scopes and of the given session/task/stage/step instances, in the given domains or none."""
    scope_conds = [C.scope.in_(("user", "global"))]
    for scope, ref in refs.items():
        if ref:
            scope_conds.append(and_(C.scope == scope, C.scope_ref == ref))
    conds = [
        C.tenant_id == tenant_id,
        C.user_id == user_id,
        C.status.in_(("available", "verified", "missing")),
        or_(*scope_conds),
    ]
    if domains:
        conds.append(or_(C.domain.is_(None), C.domain.in_(list(domains))))
    stmt = select(*ITEM_COLUMNS).where(and_(*conds)).order_by(C.id)
    return list((await session.execute(stmt)).all())


async def window_entries(session: AsyncSession, *, tenant_id: str, user_id: str) -> list[Any]:
    stmt = select(ProfileEntry.__table__).where(P.tenant_id == tenant_id, P.user_id == user_id).order_by(P.id)  # type: ignore[attr-defined]
    return list((await session.execute(stmt)).mappings())
