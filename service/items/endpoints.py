"""HTTP routes of context items: thin wrappers over service.items.service."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response
from starlette.convertors import StringConvertor, register_url_convertor

from schemas.common import Domain, Identifier, SlotKey
from schemas.items import (
    ItemBatchCreate,
    ItemBatchResult,
    ItemCreate,
    ItemPage,
    ItemRead,
    ItemStatus,
    ItemType,
    Scope,
)
from service.deps import (
    ContextDep,
    CursorQuery,
    IdempotencyDep,
    ItemHandlePath,
    ItemIdPath,
    LimitQuery,
    OrderQuery,
    UserIdPath,
)
from service.errors import ERRORS
from service.items import service
from service.items.service import ItemQuery

router = APIRouter(prefix="/v1/users/{user_id}/items", tags=["items"], responses=ERRORS)


class _ItemIdSegment(StringConvertor):
    """An item's path segment is anything but ``batch``, so that ``GET /items/batch`` finds the batch route
    (405: it is POST only) instead of the item route with an id that is not a UUID (422)."""

    regex = r"(?!batch$)[^/]+"


register_url_convertor("item_id", _ItemIdSegment())


@router.post("", status_code=201, response_model=ItemRead, summary="Write one context item")
async def create_item(
    user_id: UserIdPath,
    body: ItemCreate,
    ctx: ContextDep,
    idem: IdempotencyDep,
) -> Response:
    written = await service.write_items(ctx, user_id=user_id, items=[body], batch=False)
    return await idem.respond_bytes(written.read_json(0), 201)


@router.post("/batch", status_code=201, response_model=ItemBatchResult, summary="Write up to 1,000 items at once")
async def create_batch(
    user_id: UserIdPath,
    body: ItemBatchCreate,
    ctx: ContextDep,
    idem: IdempotencyDep,
) -> Response:
    written = await service.write_items(ctx, user_id=user_id, items=body.items, batch=True)
    return await idem.respond_bytes(written.batch_json(), 201)


@router.get("", response_model=ItemPage, summary="List a user's items")
async def list_items(
    user_id: UserIdPath,
    ctx: ContextDep,
    type: Annotated[
        list[ItemType] | None, Query(description="Repeatable: only items of these types", examples=[["fact"]])
    ] = None,
    scope: Annotated[
        list[Scope] | None, Query(description="Repeatable: only items of these scopes", examples=[["session"]])
    ] = None,
    status: Annotated[
        list[ItemStatus] | None,
        Query(description="Repeatable; taken literally; overrides the include_* flags", examples=[["available"]]),
    ] = None,
    key: Annotated[SlotKey | None, Query(description="Only this slot's items", examples=["team.size"])] = None,
    domain: Annotated[Domain | None, Query(description="Only items of this domain", examples=["work"])] = None,
    session_id: Annotated[Identifier | None, Query(description="Only this session's items", examples=["s-42"])] = None,
    task_id: Annotated[Identifier | None, Query(description="Only this task's items", examples=["t-trip"])] = None,
    stage_id: Annotated[Identifier | None, Query(description="Only this stage's items", examples=["booking"])] = None,
    step_id: Annotated[Identifier | None, Query(description="Only this step's items", examples=["step-3"])] = None,
    view: Annotated[
        Literal["all", "effective"],
        Query(
            description="all: filter literally. effective: what applies inside the given session/task/stage/step"
            " (active only; per key the narrowest scope wins and lists what it overrides)",
            examples=["effective"],
        ),
    ] = "all",
    include_superseded: Annotated[
        bool, Query(description="Also list items a newer or stronger one replaced", examples=[True])
    ] = False,
    include_expired: Annotated[bool, Query(description="Also list items past expires_at", examples=[True])] = False,
    include_deleted: Annotated[
        bool, Query(description="Also list tombstoned items (until they are purged)", examples=[True])
    ] = False,
    extracted_by: Annotated[
        str | None,
        Query(
            description="Only items learned from conversations: 'any' (all of them), an extractor ('rules', "
            "'llm') or one version of it ('rules/1'); 'none' lists only items written by clients",
            pattern=r"^[A-Za-z0-9._:/@-]{1,200}$",
            examples=["rules"],
        ),
    ] = None,
    order: OrderQuery = "desc",
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
) -> ItemPage:
    query = ItemQuery(
        types=list(type or []),
        scopes=list(scope or []),
        statuses=list(status or []),
        key=key,
        domain=domain,
        session_id=session_id,
        task_id=task_id,
        stage_id=stage_id,
        step_id=step_id,
        view=view,
        include_superseded=include_superseded,
        include_expired=include_expired,
        include_deleted=include_deleted,
        extracted_by=extracted_by,
        order=order,
        limit=limit,
        cursor=cursor,
    )
    return await service.list_items(ctx, user_id=user_id, query=query)


@router.get("/{item_id:item_id}", response_model=ItemRead, summary="Read one item, whatever its status")
async def get_item(
    user_id: UserIdPath,
    item_id: ItemHandlePath,
    ctx: ContextDep,
    level: Annotated[
        int | None,
        Query(
            ge=0,
            le=4,
            description="Also return the item's text at this compression level (at_level): 0 original, "
            "1 condensed, 2 summary, 3 key fields, 4 index line",
            examples=[0],
        ),
    ] = None,
) -> ItemRead:
    return await service.get_item(ctx, user_id=user_id, item_id=item_id, level=level)


@router.delete("/{item_id:item_id}", response_model=ItemRead, summary="Tombstone an item (kept for audit until purged)")
async def delete_item(
    user_id: UserIdPath,
    item_id: ItemIdPath,
    ctx: ContextDep,
    idem: IdempotencyDep,
) -> Response:
    item = await service.delete_item(ctx, user_id=user_id, item_id=item_id)
    return await idem.respond(item, 200)
