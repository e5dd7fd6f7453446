"""Jobs: the recent runs (rows changed, errors, durations) and, for admins, a form to run a job now — the
service calls behind ``GET /v1/jobs/runs`` and ``POST /v1/jobs/{name}/run``, with their permissions: both
need an admin key (runs include the scheduler's, over all tenants), so an operator gets a 403 page."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from schemas.jobs import JOB_NAMES, JobName
from service.auth.principal import Permission
from service.console.rendering import console_router, render
from service.console.session import CheckedOperator, Operator, context, flash
from service.deps import JobRunnerDep
from service.errors import NotFound, ServiceError, ValidationFailed
from service.jobs_api import service as jobs

router = console_router()

JOBS_URL = "/console/jobs"


def _job(name: str, *, error: type[ServiceError]) -> JobName:
    """``name`` as a job's name, or ``error`` saying which names there are."""
    if name not in JOB_NAMES:
        raise error(f"there is no job {name[:64]!r}; the jobs are {', '.join(JOB_NAMES)}")
    return cast(JobName, name)


@router.get("/jobs", response_class=HTMLResponse)
async def jobs_page(
    request: Request,
    operator: Operator,
    name: Annotated[str, Query(max_length=64)] = "",
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> HTMLResponse:
    # The filter form's "All jobs" sends an empty name.
    job = _job(name, error=ValidationFailed) if name else None
    page = await jobs.list_runs(context(request, operator), name=job, limit=limit)
    return render(
        request,
        "jobs.html",
        operator=operator,
        runs=page.items,
        job_names=JOB_NAMES,
        name=job,
        limit=limit,
        can_run=operator.principal.can(Permission.JOBS_RUN),
    )


@router.post("/jobs/{name}/run")
async def run_job(
    request: Request, operator: CheckedOperator, runner: JobRunnerDep, name: Annotated[str, Path(max_length=64)]
) -> RedirectResponse:
    job = _job(name, error=NotFound)
    run = await jobs.run_job(context(request, operator), runner=runner, db=request.app.state.db, name=job)
    rows = ", ".join(f"{k} {v}" for k, v in sorted(run.rows.items())) or "no rows changed"
    outcome = f"{run.name}: {run.status} ({rows})" + (f" — {run.error}" if run.error else "")
    await flash(operator, outcome)
    return RedirectResponse(JOBS_URL, status_code=303)
