"""HTTP route of window assembly."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from schemas.windows import WindowRequest, WindowResponse
from service.deps import ContextDep, IdempotencyDep, ReadsDep, UserIdPath
from service.errors import ERRORS
from service.windows import reads as window_reads

router = APIRouter(prefix="/v1/users/{user_id}", tags=["window"], responses=ERRORS)


@router.post(
    "/window",
    response_model=WindowResponse,
    summary="Assemble the context for the agent's next model call under a token budget",
)
async def window(
    request: Request,
    user_id: UserIdPath,
    body: WindowRequest,
    ctx: ContextDep,
    idem: IdempotencyDep,
    reads: ReadsDep,
) -> Response:
    observe = request.app.state.window_metrics.observe  # service/windows/metrics.py
    result = await window_reads.window(ctx, user_id=user_id, req=body, reads=reads, observe=observe)
    return await idem.respond_data(result, 200)
