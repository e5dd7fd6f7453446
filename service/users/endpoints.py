"""HTTP routes for a user's data as a whole."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import StreamingResponse

from schemas.users import EraseResult
from service.deps import ContextDep, DatabaseDep, IdempotencyDep, UserIdPath
from service.errors import ERRORS
from service.users import service

router = APIRouter(prefix="/v1/users/{user_id}", tags=["users"], responses=ERRORS)


@router.get(
    "/export",
    summary="Everything stored about a user, as streamed JSON",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/json": {}}}},
)
async def export_user(user_id: UserIdPath, ctx: ContextDep, db: DatabaseDep) -> StreamingResponse:
    return StreamingResponse(
        await service.export_user(ctx, db=db, user_id=user_id),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{user_id}.json"'},
    )


@router.delete("", response_model=EraseResult, summary="Erase every row of a user (admin)")
async def erase_user(user_id: UserIdPath, ctx: ContextDep, idem: IdempotencyDep) -> Response:
    result = await service.erase_user(ctx, user_id=user_id, idem=idem)
    return await idem.respond(result, 200)
