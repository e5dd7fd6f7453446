"""Users: find a user by id prefix, with recent activity and counts; and a user's overview (profile by tier
and domain with 4C bars, items by type, conflicted slots with their history)."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Query, Request, Response

from schemas.common import ID_PATTERN
from schemas.items import ItemRead
from service.console import service
from service.console.charts import FourCBar, fourc_bar
from service.console.rendering import console_router, render
from service.console.session import Operator, context
from service.db.models import ITEM_TYPES, TIERS
from service.deps import CursorQuery, UserIdPath
from service.items import service as items
from service.profiles import service as profiles

router = console_router()

USER_ID = re.compile(ID_PATTERN)
TIER_LABELS = {"current": "Current", "candidate": "Candidate", "long_term": "Long-term"}


@router.get("/")
async def users_page(
    request: Request,
    operator: Operator,
    q: Annotated[str, Query(max_length=128, description="The start of a user id")] = "",
    after: Annotated[str | None, Query(max_length=128, pattern=ID_PATTERN)] = None,
) -> Response:
    ctx, q = context(request, operator), q.strip()
    if q and not USER_ID.match(q):
        # Not a 500 and not an error page: the search form again, saying what an id can hold.
        error = "User ids hold only letters, digits and . _ : @ - — nothing else can match."
        empty = service.UserPage(users=[], next_after=None)
        return render(
            request, "users.html", operator=operator, status_code=422, q=q, after=None, page=empty, error=error
        )
    page = await service.list_users(ctx, prefix=q, after=after, limit=None)
    return render(request, "users.html", operator=operator, q=q, after=after, page=page, error=None)


def _all_items(cursor: str | None) -> items.ItemQuery:
    """Every item of the user but tombstones, newest first: what is in force and what lost or ran out."""
    return items.ItemQuery(
        types=[],
        scopes=[],
        statuses=[],
        key=None,
        domain=None,
        session_id=None,
        task_id=None,
        stage_id=None,
        step_id=None,
        view="all",
        include_superseded=True,
        include_expired=True,
        include_deleted=False,
        order="desc",
        limit=None,
        cursor=cursor,
    )


@router.get("/users/{user_id}")
async def user_page(request: Request, user_id: UserIdPath, operator: Operator, cursor: CursorQuery = None) -> Response:
    ctx = context(request, operator)
    summary = await service.user_summary(ctx, user_id=user_id)
    profile = await profiles.get_profile(ctx, user_id=user_id, domains=None, session_id=None, tiers=None)
    page = await items.list_items(ctx, user_id=user_id, query=_all_items(cursor))
    conflicts = await service.conflicted_slots(ctx, user_id=user_id)
    weights, threshold = ctx.settings.profiles.fourc.weights(), ctx.settings.profiles.long_term_threshold
    bars: dict[str, FourCBar] = {}
    for domains in profile.tiers.values():
        for entries in domains.values():
            for e in entries:
                bars[str(e.id)] = fourc_bar(e.breakdown, weights=weights, threshold=threshold)
    by_type: dict[str, list[ItemRead]] = {}
    for item in page.items:
        by_type.setdefault(item.type, []).append(item)
    return render(
        request,
        "user.html",
        operator=operator,
        user=summary,
        tiers=[(t, TIER_LABELS.get(t, t), profile.tiers.get(t, {})) for t in TIERS],
        bars=bars,
        items_by_type=[(t, by_type[t]) for t in ITEM_TYPES if t in by_type],
        next_cursor=page.next_cursor,
        cursor=cursor,
        conflicts=conflicts,
        threshold=threshold,
    )
