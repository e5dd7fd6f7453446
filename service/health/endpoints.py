"""Liveness and readiness. /healthz never touches the database (a database blip must not restart pods)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

from service.db.engine import Database, session_scope
from service.vectors.repository import lag

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Liveness: the process serves requests")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Readiness: database reachable and migrated")
async def readyz(request: Request) -> JSONResponse:
    db: Database = request.app.state.db
    head: str = request.app.state.migration_head
    known: set[str] = request.app.state.migration_revisions
    checks: dict[str, Any] = {}
    ready = True
    try:
        async with db.engine.connect() as conn:
            revision = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar_one_or_none()
        checks["database"] = "ok"
    except Exception as exc:  # any failure to reach the database means "not ready", with the reason
        checks["database"] = f"unreachable: {type(exc).__name__}"
        revision = None
        ready = False
    if ready:
        # Ready at head, and also when the database is *ahead* of this code (a newer revision we do not
        # know): during a rolling update the old pods keep serving an expand-only migration.
        behind = revision is None or (revision != head and revision in known)
        checks["migrations"] = {
            "database": revision,
            "code_head": head,
            "status": "behind" if behind else "ok",
        }
        ready = not behind
    vectors = request.app.state.vectors
    if vectors is None:
        checks["vectors"] = {"backend": "off"}
    else:
        state: dict[str, Any] = {"backend": vectors.index.name, "embedder": vectors.embedder.name}
        try:
            state["points"] = await vectors.index.count()
            state["index"] = "ok"
        except Exception as exc:  # the window degrades to PostgreSQL-only ranking; not a reason to stop serving
            state["index"] = f"unavailable: {type(exc).__name__}"
        if ready:
            try:
                async with session_scope(db) as session:
                    behind = await lag(session)
                state["outbox_pending"], state["outbox_oldest_seconds"] = (
                    behind.pending,
                    round(behind.oldest_seconds, 3),
                )
                state["outbox_dead"] = behind.dead
                request.app.state.outbox_gauges.update(behind)
            except Exception as exc:
                state["outbox"] = f"unreadable: {type(exc).__name__}"
        checks["vectors"] = state
    checks["tokenizer"] = {
        "name": request.app.state.tokenizer.name,
        "exact": request.app.state.tokenizer.exact,
    }
    return JSONResponse(
        {"status": "ready" if ready else "not-ready", "checks": checks}, status_code=200 if ready else 503
    )
