"""HTTP routes for a user's data as a whole."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import StreamingResponse

from schemas.users import EraseResult
from service.deps import ClockDep, DatabaseDep, IdempotencyDep, PrincipalDep, SessionDep, UserIdPath
from service.errors import ERRORS
from service.users import service

router = APIRouter(prefix="/v1/users/{user_id}", tags=["users"], responses=ERRORS)


@router.get(
    "/export",
    summary="Everything stored about a user, as streamed JSON",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/json": {}}}},
)
async def export_user(
    user_id: UserIdPath, session: SessionDep, principal: PrincipalDep, db: DatabaseDep, clock: ClockDep
) -> StreamingResponse:
    await service.check_export(session, principal, user_id)
    return StreamingResponse(
        service.export_stream(db, principal, user_id, clock.now()),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{user_id}.json"'},
    )


@router.delete("", response_model=EraseResult, summary="Erase every row of a user (admin)")
async def erase_user(
    user_id: UserIdPath, session: SessionDep, principal: PrincipalDep, clock: ClockDep, idem: IdempotencyDep
) -> Response:
    result = await service.erase_user(session, principal, user_id, clock.now(), idempotency_key=idem.key)
    idem.forget_user = user_id
    return await idem.respond(result, 200)
