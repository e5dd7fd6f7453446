"""Timeline: the user's events — every item, profile and observation change — newest first by default,
filtered and paged as ``GET /v1/users/{u}/events`` filters and pages them (the same service call)."""

from __future__ import annotations

from typing import Annotated, get_args

from fastapi import Query, Request
from fastapi.responses import HTMLResponse

from service.console import service as console
from service.console.rendering import console_router, render
from service.console.session import Operator, context
from service.deps import CursorQuery, LimitQuery, OrderQuery, UserIdPath
from service.timeline import service as timeline
from service.timeline.endpoints import Kind

router = console_router()

KINDS: tuple[str, ...] = get_args(Kind)
# What the page-size menu offers (up to CTXMEM_MAX_PAGE_SIZE), besides the size in use.
PAGE_SIZES = (10, 25, 50, 100, 200, 500)


@router.get("/users/{user_id}/timeline", response_class=HTMLResponse)
async def timeline_page(
    request: Request,
    user_id: UserIdPath,
    operator: Operator,
    kind: Annotated[list[Kind] | None, Query()] = None,
    order: OrderQuery = "desc",
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
) -> HTMLResponse:
    kinds = kind or []
    ctx = context(request, operator)
    await console.user_summary(ctx, user_id=user_id)  # a user this tenant never wrote is a 404, as elsewhere
    page = await timeline.timeline(ctx, user_id=user_id, kinds=kinds, order=order, limit=limit, cursor=cursor)
    # The filters as they were, for the form and for the next page's link (the cursor needs the same order).
    filters: dict[str, object] = {"kind": kinds, "order": order, **({"limit": limit} if limit else {})}
    limits = ctx.settings.limits
    size = limit or limits.default_page_size
    return render(
        request,
        "timeline.html",
        operator=operator,
        user_id=user_id,
        page=page,
        kinds=KINDS,
        selected=set(kinds),
        order=order,
        size=size,
        page_sizes=sorted({n for n in PAGE_SIZES if n <= limits.max_page_size} | {size}),
        filters=filters,
        first_page=cursor is None,
    )
