"""HTTP routes of extraction: learn from messages sent in the body, or from what waits in a stored session."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response

from schemas.common import Problem
from schemas.extraction import ExtractionResult, ExtractRequest, SessionExtractRequest
from service.deps import ContextDep, IdempotencyDep, SessionIdPath, UserIdPath
from service.errors import ERRORS, PROBLEM_JSON
from service.extraction import service
from service.extraction.base import Extractor

# Besides the usual problems: 429 when the tenant's daily token cap is spent, 503 when the extractor cannot
# answer (both with Retry-After; the messages wait either way).
_OUTAGES: dict[int | str, dict[str, object]] = {
    code: {"model": Problem, "content": {PROBLEM_JSON: {}}} for code in (429, 503)
}
router = APIRouter(prefix="/v1/users/{user_id}", tags=["extraction"], responses={**ERRORS, **_OUTAGES})


def _extractor(request: Request) -> Extractor | None:
    extractor: Extractor | None = request.app.state.extractor
    return extractor


def _metrics(request: Request) -> Any:
    return getattr(request.app.state, "extraction_metrics", None)


@router.post(
    "/extract",
    response_model=ExtractionResult,
    summary="Learn from messages sent in the body (dry_run: say what would be learned, write nothing)",
)
async def extract_messages(
    user_id: UserIdPath, body: ExtractRequest, request: Request, ctx: ContextDep, idem: IdempotencyDep
) -> Response:
    result = await service.extract_messages(
        ctx, user_id=user_id, body=body, extractor=_extractor(request), metrics=_metrics(request)
    )
    return await idem.respond(result, 200)


@router.post(
    "/sessions/{session_id}/extract",
    response_model=ExtractionResult,
    summary="Extract what waits in a stored conversation now",
)
async def extract_session(
    user_id: UserIdPath,
    session_id: SessionIdPath,
    request: Request,
    ctx: ContextDep,
    idem: IdempotencyDep,
    body: Annotated[SessionExtractRequest | None, Body()] = None,
) -> Response:
    result = await service.extract_session(
        ctx,
        user_id=user_id,
        session_id=session_id,
        extractor=_extractor(request),
        reextract=body.reextract if body is not None else False,
        metrics=_metrics(request),
    )
    assert result is not None  # it waits for the session's lock
    return await idem.respond(result, 200)
