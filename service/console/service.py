"""The console's own reads (what no API route answers): the users of the tenant with their activity, and a
user's conflicted slots with their history. Pages call these and the domains' services alike, with the
operator's context."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from schemas.items import ItemRead
from schemas.users import EventRead
from service.auth.principal import Permission
from service.console import repository
from service.context import RequestContext
from service.db.models import ACTIVE_STATUSES
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


# A user with more conflicted slots than this shows the first ones, in key order, and says so.
MAX_SLOTS = 200


@dataclass(frozen=True)
class SlotHistory:
    """One conflicted slot: its items in write order, the one in force now (None: every item retired), and the
    events that decided between them, oldest first."""

    key: str
    scope: str
    scope_ref: str
    items: list[ItemRead]
    winner: ItemRead | None
    events: list[EventRead]


@dataclass(frozen=True)
class Conflicts:
    slots: list[SlotHistory]
    truncated: bool


async def conflicted_slots(ctx: RequestContext, *, user_id: str) -> Conflicts:
    """Every slot of the user that more than one item competed for, with who won, by which rule, and when
    (the items' events: created with their resolution, superseded, reinforced, expired)."""
    ctx.principal.require(Permission.EVIDENCE_READ)
    tenant_id = ctx.principal.tenant_id
    rows = await repository.conflicted_slot_items(
        ctx.session, tenant_id=tenant_id, user_id=user_id, limit=MAX_SLOTS + 1
    )
    by_slot: dict[tuple[str, str, str], list[ItemRead]] = {}
    for r in rows:
        by_slot.setdefault((r["key"], r["scope"], r["scope_ref"]), []).append(ItemRead.model_validate(dict(r)))
    truncated = len(by_slot) > MAX_SLOTS
    slots = list(by_slot.items())[:MAX_SLOTS]
    ids = [item.id for _, items in slots for item in items]
    events = await repository.item_events(ctx.session, tenant_id=tenant_id, user_id=user_id, item_ids=ids)
    by_item: dict[str, list[EventRead]] = {}
    for e in events:
        by_item.setdefault(str(e.entity_id), []).append(EventRead.model_validate(e))
    out = []
    for (key, scope, scope_ref), items in slots:
        history = sorted((e for i in items for e in by_item.get(str(i.id), [])), key=lambda e: e.id)
        winner = next((i for i in reversed(items) if i.status in ACTIVE_STATUSES), None)
        out.append(SlotHistory(key, scope, scope_ref, items, winner, history))
    return Conflicts(out, truncated)
