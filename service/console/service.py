"""The console's own reads (what no API route answers): the users of the tenant with their activity, and a
user's conflicted slots with their history. Pages call these and the domains' services alike, with the
operator's context."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from service.auth.service import Permission
from service.console import repository
from service.context import RequestContext
from service.errors import UserNotFound
from service.pagination import page_size


@dataclass(frozen=True)
class UserRow:
    user_id: str
    created_at: datetime
    last_event_at: datetime | None
    items: int
    items_total: int
    entries: int
    observations: int


@dataclass(frozen=True)
class UserPage:
    users: list[UserRow]
    next_after: str | None


def _user(row: Any) -> UserRow:
    return UserRow(**dict(row))


async def list_users(ctx: RequestContext, *, prefix: str, after: str | None, limit: int | None) -> UserPage:
    """The tenant's users whose id starts with ``prefix``, in id order, a page at a time (``after``: the last
    id of the previous page)."""
    ctx.principal.require(Permission.EVIDENCE_READ)
    size = page_size(limit, ctx.settings)
    rows = await repository.users(
        ctx.session, tenant_id=ctx.principal.tenant_id, prefix=prefix, after=after or "", limit=size + 1
    )
    page = [_user(r) for r in rows[:size]]
    return UserPage(users=page, next_after=page[-1].user_id if len(rows) > size and page else None)


async def user_summary(ctx: RequestContext, *, user_id: str) -> UserRow:
    """One user's activity and counts; ``UserNotFound`` for an id this tenant never wrote."""
    ctx.principal.require(Permission.EVIDENCE_READ)
    rows = await repository.users(
        ctx.session, tenant_id=ctx.principal.tenant_id, prefix="", after="", exact=user_id, limit=1
    )
    if not rows:
        raise UserNotFound(f"no user {user_id!r} in this tenant")
    return _user(rows[0])
