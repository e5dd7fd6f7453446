"""Liveness and readiness. /healthz never touches the database (a database blip must not restart pods)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from service.health import service

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Liveness: the process serves requests")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Readiness: database reachable and migrated")
async def readyz(request: Request) -> JSONResponse:
    state = request.app.state
    result = await service.readiness(
        db=state.db,
        head=state.migration_head,
        known=state.migration_revisions,
        vectors=state.vectors,
        tokenizer=state.tokenizer,
        outbox_gauges=state.outbox_gauges,
    )
    return JSONResponse(
        {"status": "ready" if result.ready else "not-ready", "checks": result.checks},
        status_code=200 if result.ready else 503,
    )
