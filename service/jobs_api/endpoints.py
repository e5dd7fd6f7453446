"""HTTP routes of the jobs: run one now (admin, scoped to the key's tenant), list runs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from schemas.jobs import JOB_NAMES, JobName, JobRunPage, JobRunRead, JobRunRequest
from service.deps import ContextDep, DatabaseDep, JobRunnerDep
from service.errors import ERRORS
from service.jobs_api import service

_NAMES = f"{', '.join(JOB_NAMES[:-1])} or {JOB_NAMES[-1]}"

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=ERRORS)


@router.post("/{name}/run", response_model=JobRunRead, summary="Run a job now for this tenant (admin)")
async def run(
    name: Annotated[JobName, Path(description=f"{_NAMES} (see docs/concepts.md, jobs)", examples=["decay"])],
    ctx: ContextDep,
    db: DatabaseDep,
    runner: JobRunnerDep,
    body: JobRunRequest | None = None,
) -> JobRunRead:
    return await service.run_job(ctx, runner=runner, db=db, name=name, now=body.now if body else None)


@router.get("/runs", response_model=JobRunPage, summary="Recent job runs: this tenant's and the global ones")
async def runs(
    ctx: ContextDep,
    name: Annotated[JobName | None, Query(description="Only this job's runs", examples=["promote"])] = None,
    limit: Annotated[int, Query(ge=1, le=500, description="How many runs, newest first", examples=[20])] = 50,
) -> JobRunPage:
    return await service.list_runs(ctx, name=name, limit=limit)
