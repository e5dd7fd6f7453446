"""A user's timeline: every event about their items and profile, newest first by default."""

from __future__ import annotations

from collections.abc import Sequence

from schemas.users import EventPage, EventRead
from service.auth.principal import Permission
from service.context import RequestContext
from service.pagination import decode_cursor, encode_cursor, page_size
from service.timeline import repository


async def timeline(
    ctx: RequestContext,
    *,
    user_id: str,
    kinds: Sequence[str],
    order: str,
    limit: int | None,
    cursor: str | None,
) -> EventPage:
    session, principal, settings = ctx.session, ctx.principal, ctx.settings
    principal.require(Permission.EVIDENCE_READ)
    size = page_size(limit, settings)
    after = decode_cursor(cursor, order) if cursor else None
    rows = await repository.user_events(
        session,
        tenant_id=principal.tenant_id,
        user_id=user_id,
        kinds=kinds,
        after_id=after,
        descending=order == "desc",
        limit=size + 1,
    )
    page = rows[:size]
    next_cursor = encode_cursor(page[-1].id, order) if len(rows) > size and page else None
    return EventPage(items=[EventRead.model_validate(r) for r in page], next_cursor=next_cursor)
