"""HTTP routes of the jobs: run one now (admin, scoped to the key's tenant), list runs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from jobs import repository
from jobs.runner import run_job
from schemas.jobs import JOB_NAMES, JobName, JobRunPage, JobRunRead, JobRunRequest
from service.auth.service import Permission
from service.clock import FixedClock
from service.deps import ClockDep, DatabaseDep, PrincipalDep, SessionDep, SettingsDep
from service.errors import Conflict
from service.items.endpoints import ERRORS

_NAMES = f"{', '.join(JOB_NAMES[:-1])} or {JOB_NAMES[-1]}"

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=ERRORS)


class JobBusy(Conflict):
    slug, title = "job-running", "This job is running in another process"


@router.post("/{name}/run", response_model=JobRunRead, summary="Run a job now for this tenant (admin)")
async def run(
    request: Request,
    name: Annotated[
        JobName,
        Path(description=f"{_NAMES} (see docs/concepts.md, jobs)", examples=["decay"]),
    ],
    principal: PrincipalDep,
    db: DatabaseDep,
    settings: SettingsDep,
    clock: ClockDep,
    session: SessionDep,
    body: JobRunRequest | None = None,
) -> JobRunRead:
    principal.require(Permission.JOBS_RUN)
    run_clock = FixedClock(body.now) if body and body.now else clock
    result = await run_job(
        name,
        db=db,
        settings=settings,
        clock=run_clock,
        tenant_id=principal.tenant_id,
        trigger="api",
        vectors=request.app.state.vectors,
    )
    if result.run_id is None:
        raise JobBusy(result.reason or "another process is running this job")
    runs = await repository.list_runs(session, tenant_id=principal.tenant_id, name=name, limit=50)
    row = next(r for r in runs if r["id"] == result.run_id)
    return JobRunRead.model_validate(dict(row))


@router.get("/runs", response_model=JobRunPage, summary="Recent job runs: this tenant's and the global ones")
async def runs(
    principal: PrincipalDep,
    session: SessionDep,
    name: Annotated[JobName | None, Query(description="Only this job's runs", examples=["promote"])] = None,
    limit: Annotated[int, Query(ge=1, le=500, description="How many runs, newest first", examples=[20])] = 50,
) -> JobRunPage:
    principal.require(Permission.JOBS_RUN)
    rows = await repository.list_runs(session, tenant_id=principal.tenant_id, name=name, limit=limit)
    return JobRunPage(items=[JobRunRead.model_validate(dict(r)) for r in rows])
