"""The jobs as a request runs them: one job now for the caller's tenant, and the recent runs it may see."""

from __future__ import annotations

from datetime import datetime

from jobs import repository, runner
from schemas.jobs import JobName, JobRunPage, JobRunRead
from service.auth.service import Permission
from service.clock import FixedClock
from service.context import RequestContext
from service.db.engine import Database
from service.errors import JobBusy


async def run_job(ctx: RequestContext, *, db: Database, name: JobName, now: datetime | None = None) -> JobRunRead:
    """Run ``name`` for the caller's tenant as of ``now`` (default: the request's time). The runner works in
    transactions of its own on ``db`` and hands back the run's record as it closed it, so the answer is
    that run's row, whatever other runs start meanwhile."""
    ctx.principal.require(Permission.JOBS_RUN)
    result = await runner.run_job(
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
