"""HTTP route of the user timeline."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from schemas.users import EventPage
from service.deps import ContextDep, CursorQuery, LimitQuery, OrderQuery, UserIdPath
from service.errors import ERRORS
from service.timeline import service

router = APIRouter(prefix="/v1/users/{user_id}", tags=["events"], responses=ERRORS)

Kind = Literal["item", "profile", "observation"]


@router.get("/events", response_model=EventPage, summary="The user's timeline of item and profile events")
async def list_events(
    user_id: UserIdPath,
    ctx: ContextDep,
    kind: Annotated[
        list[Kind] | None, Query(description="Repeatable: item, profile, observation", examples=[["profile"]])
    ] = None,
    order: OrderQuery = "desc",
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
) -> EventPage:
    return await service.timeline(ctx, user_id=user_id, kinds=kind or [], order=order, limit=limit, cursor=cursor)
