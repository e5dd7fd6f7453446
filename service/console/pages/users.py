"""Users: find a user by id prefix, with recent activity and counts; and a user's overview."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from service.console import service
from service.console.rendering import console_router, render
from service.console.session import Operator, context

router = console_router()


@router.get("/")
async def users_page(
    request: Request,
    operator: Operator,
    q: Annotated[str, Query(max_length=128, description="The start of a user id")] = "",
    after: Annotated[str | None, Query(max_length=128)] = None,
) -> Response:
    ctx = context(request, operator)
    page = await service.list_users(ctx, prefix=q.strip(), after=after, limit=None)
    return render(request, "users.html", operator=operator, q=q.strip(), after=after, page=page)
