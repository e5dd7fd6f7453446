"""The jobs as a request runs them: one job now for the caller's tenant, and the recent runs it may see.

Running a job is the job runner's work (jobs/runner.py); a request reaches it through the ``JobRunner`` the
app factory hands out (``service.deps.JobRunnerDep``), so nothing under ``service/`` imports ``jobs/``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from schemas.jobs import JobName, JobRunPage, JobRunRead
from service.auth.principal import Permission
from service.clock import Clock, FixedClock
from service.context import RequestContext
from service.db.engine import Database
from service.errors import JobBusy
from service.jobs_api import repository
from service.settings import Settings
from service.vectors.recall import VectorRecall


class JobOutcome(Protocol):
    @property
    def record(self) -> dict[str, Any] | None:
        """The run's ``job_run`` row as it closed it; None when the run was skipped."""

    @property
    def reason(self) -> str | None:
        """Why it was skipped."""


class JobRunner(Protocol):
    """``jobs.runner.run_job``: one run of a job, once across replicas, as of the clock's time."""

    async def __call__(
        self,
        name: str,
        *,
        db: Database,
        settings: Settings,
        clock: Clock,
        tenant_id: str | None,
        trigger: str,
        vectors: VectorRecall | None,
    ) -> JobOutcome: ...


async def run_job(
    ctx: RequestContext, *, runner: JobRunner, db: Database, name: JobName, now: datetime | None = None
) -> JobRunRead:
    """Run ``name`` for the caller's tenant as of ``now`` (default: the request's time). The runner works in
    transactions of its own on ``db`` and hands back the run's record as it closed it, so the answer is
    that run's row, whatever other runs start meanwhile."""
    ctx.principal.require(Permission.JOBS_RUN)
    result = await runner(
        name,
        db=db,
        settings=ctx.settings,
        clock=FixedClock(now or ctx.now),
        tenant_id=ctx.principal.tenant_id,
        trigger="api",
        vectors=ctx.vectors,
    )
    if result.record is None:
        raise JobBusy(result.reason or "another process is running this job")
    return JobRunRead.model_validate(result.record)


async def list_runs(ctx: RequestContext, *, name: JobName | None = None, limit: int) -> JobRunPage:
    """The newest runs first: the tenant's own and the global ones (scheduler, CLI)."""
    ctx.principal.require(Permission.JOBS_RUN)
    rows = await repository.list_runs(ctx.session, tenant_id=ctx.principal.tenant_id, name=name, limit=limit)
    return JobRunPage(items=[JobRunRead.model_validate(dict(r)) for r in rows])
