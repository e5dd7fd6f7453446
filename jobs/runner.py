"""Running a job: once across replicas, as of a (possibly simulated) time, in batches, with a record.

A run takes a session-level PostgreSQL advisory lock named after the job on a connection of its own; if
another process holds it, the run is skipped. It then records a ``job_run`` row, applies the job one
batch per transaction (so a crash leaves whole batches behind and a rerun finishes the rest), and
closes the row with the counts per kind of change, or the error.
"""

from __future__ import annotations

import hashlib
import logging
import traceback
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text

from jobs import repository
from schemas.jobs import JOB_NAMES, JobName
from service import tracing
from service.clock import Clock
from service.context import RequestContext
from service.db.engine import Database, session_scope
from service.extraction import repository as extraction_repository
from service.extraction.extractors import build_extractor
from service.extraction.service import extract_session, job_principal
from service.ids import uuid7
from service.jobs_api import repository as runs
from service.settings import Settings
from service.tokenizer import build_tokenizer
from service.vectors.recall import VectorRecall, build_recall, outbox_worker
from service.vectors.repository import lag as outbox_lag
from service.vectors.repository import revive_dead

log = logging.getLogger("ctxmem.jobs")

Progress = Callable[[str, int, int], None]  # (kind, rows changed so far in this kind, estimated total)


@dataclass
class JobResult:
    run_id: uuid.UUID | None
    name: str
    status: str  # succeeded | failed | skipped
    as_of: datetime
    rows: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    reason: str | None = None  # why it was skipped
    record: dict[str, Any] | None = None  # the closed job_run row (None when skipped)


def lock_key(name: str) -> int:
    digest = hashlib.sha256(f"ctxmem-job:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@dataclass(frozen=True)
class JobContext:
    db: Database
    settings: Settings
    now: datetime
    tenant_id: str | None
    run_id: uuid.UUID
    name: str
    progress: Progress | None
    vectors: VectorRecall | None = None

    def params(self, **extra: Any) -> dict[str, Any]:
        return {
            "now": self.now,
            "tenant": self.tenant_id,
            "run": str(self.run_id),
            "actor": f"job:{self.name}",
            "batch": self.settings.jobs.batch_size,
            **extra,
        }


async def _tenants(ctx: JobContext, sql: str, params: dict[str, Any]) -> dict[str, int]:
    """The tenants a run sweeps, with the rows each has to change (a ``COUNT_*`` statement, read once): the
    run's own tenant, whatever its count, when it has one; else every tenant with rows to change. A run
    over every tenant sweeps them one after the other, each batch with its tenant pinned, so that a sharded
    database takes a batch's row locks on one shard (docs/citus.md); a tenant with nothing to change costs
    only its share of the count. (A tenant whose first row to change appears after the count waits for the
    next run, as rows written after a keyset walk has passed them always did.)"""
    async with session_scope(ctx.db) as session:
        counts = await repository.per_tenant(session, sql, params)
    if ctx.tenant_id is not None:
        return {ctx.tenant_id: counts.get(ctx.tenant_id, 0)}
    return counts


async def _batches(
    ctx: JobContext, kind: str, sql: str, params: dict[str, Any], total: int, tenants: Iterable[str]
) -> int:
    """Apply a keyset-paginated statement batch by batch, one transaction each, tenant by tenant."""
    done = 0
    tenants = list(tenants)
    if not tenants and ctx.progress is not None:
        ctx.progress(kind, 0, total)  # nothing to do anywhere: said once, as a batch that changed nothing did
    for tenant_id in tenants:
        p = {**params, "tenant": tenant_id}
        after = uuid.UUID(int=0)
        while True:
            async with session_scope(ctx.db) as session:
                changed, picked, last = await repository.run_keyset(session, sql, p, after)
            done += changed
            if ctx.progress is not None:
                ctx.progress(kind, done, total)
            if last is None or picked < ctx.settings.jobs.batch_size:
                break
            after = last
    return done


async def _sweep(
    ctx: JobContext, kind: str, sql: str, params: dict[str, Any], tenants: Iterable[str | None] = (None,)
) -> int:
    """Apply a plain batched statement until it changes fewer rows than a batch, tenant by tenant (or once,
    for the housekeeping tables that are not a tenant's rows: ``tenants`` left as is)."""
    done = 0
    for tenant_id in tenants:
        p = params if tenant_id is None else {**params, "tenant": tenant_id}
        while True:
            async with session_scope(ctx.db) as session:
                changed = await repository.run_statement(session, sql, p)
            done += changed
            if changed < ctx.settings.jobs.batch_size:
                break
    return done


async def job_expire(ctx: JobContext) -> dict[str, int]:
    """Items and profile entries past ``expires_at`` → ``expired`` (kept for audit, out of windows)."""
    p = ctx.params()
    items_due = await _tenants(ctx, repository.COUNT_EXPIRE_ITEMS, p)
    entries_due = await _tenants(ctx, repository.COUNT_EXPIRE_ENTRIES, p)
    total = sum(items_due.values()) + sum(entries_due.values())
    items = await _batches(ctx, "items_expired", repository.EXPIRE_ITEMS, p, total, items_due)
    entries = await _batches(ctx, "entries_expired", repository.EXPIRE_ENTRIES, p, total, entries_due)
    return {"items_expired": items, "entries_expired": entries}


async def job_decay(ctx: JobContext) -> dict[str, int]:
    """Entries silent for their decay period go one level down; only the stale domain decays."""
    s = ctx.settings
    p = ctx.params(
        **repository.decay_params(
            overrides=s.profiles.decay_days_overrides,
            default_days=s.profiles.decay_days,
            factor=s.profiles.decay_score_factor,
        )
    )
    due = await _tenants(ctx, repository.COUNT_DECAY, p)
    return {"entries_decayed": await _batches(ctx, "entries_decayed", repository.DECAY, p, sum(due.values()), due)}


async def job_promote(ctx: JobContext) -> dict[str, int]:
    """Candidates that are ``promotable`` (scoring/fourc.py) as of now → ``long_term``."""
    s = ctx.settings
    sql = repository.promote_sql(
        s.profiles.fourc.weights(),
        threshold=s.profiles.long_term_threshold,
        min_sessions=s.profiles.candidate_min_sessions,
    )
    p = ctx.params()
    candidates = await _tenants(ctx, repository.COUNT_PROMOTE, p)
    total = sum(candidates.values())
    promoted = examined = 0
    if not candidates and ctx.progress is not None:
        ctx.progress("candidates_examined", 0, total)
    for tenant_id in candidates:
        pt = {**p, "tenant": tenant_id}
        after = uuid.UUID(int=0)
        while True:
            async with session_scope(ctx.db) as session:
                n, seen, last = await repository.promote_batch(session, sql, pt, after)
            promoted += n
            examined += seen
            if ctx.progress is not None:
                ctx.progress("candidates_examined", examined, total)
            if last is None or seen < ctx.settings.jobs.batch_size:
                break
            after = last
    return {"entries_promoted": promoted, "candidates_examined": examined}


async def job_purge(ctx: JobContext) -> dict[str, int]:
    """Hard-delete what is past retention: tombstoned items, stored idempotent responses, old job runs,
    console sessions idle past their expiry.
    (Erasing a user deletes everything at once; nothing of an erased user is left to purge.)"""
    s = ctx.settings
    p = ctx.params(days=s.jobs.purge_deleted_after_days)
    items_due = await _tenants(ctx, repository.COUNT_PURGE, p)
    items = await _batches(ctx, "items_purged", repository.PURGE_ITEMS, p, sum(items_due.values()), items_due)
    ip = ctx.params(hours=s.jobs.idempotency_retention_hours)
    stored = await _tenants(ctx, repository.COUNT_PURGE_IDEMPOTENCY, ip)
    idem = await _sweep(ctx, "idempotency_purged", repository.PURGE_IDEMPOTENCY, ip, stored)
    # job_run and console_session are not a tenant's rows (reference tables on a sharded database).
    runs = await _sweep(ctx, "job_runs_purged", repository.PURGE_RUNS, ctx.params(days=s.jobs.run_retention_days))
    idle = ctx.params(minutes=s.console.idle_minutes)
    consoles = await _sweep(ctx, "console_sessions_purged", repository.PURGE_CONSOLE_SESSIONS, idle)
    return {
        "items_purged": items,
        "idempotency_purged": idem,
        "job_runs_purged": runs,
        "console_sessions_purged": consoles,
    }


async def job_reindex(ctx: JobContext) -> dict[str, int]:
    """Apply the vector outbox now (what the API process's worker does continuously), after giving the
    changes set aside as dead letters another chance. Uses the calling process's index, or builds one
    from settings (the CLI; with the embedded index, stop the API first: one process owns its files)."""
    recall = ctx.vectors or await build_recall(ctx.db, ctx.settings)
    worker = recall.worker if recall is not None else outbox_worker(ctx.db, ctx.settings)
    try:
        async with session_scope(ctx.db) as session:
            revived = await revive_dead(session, now=worker.clock.now())  # changes set aside get another chance
            total = (await outbox_lag(session, now=worker.clock.now())).pending
        applied = 0
        while True:
            n = await worker.drain_once()
            if n < 0:
                raise RuntimeError("the vector index rejected a batch; it stays queued with backoff")
            if n == 0:
                break
            applied += n
            if ctx.progress is not None:
                ctx.progress("vectors_applied", applied, total)
        return {"vectors_applied": applied, "dead_letters_retried": revived}
    finally:
        if ctx.vectors is None and recall is not None:
            await recall.index.close()
            await recall.embedder.close()


async def job_extract(ctx: JobContext) -> dict[str, int]:
    """Extract the sessions whose buffer is due (docs/extraction.md): enough messages wait, the newest has
    waited ``extract_idle_seconds``, or the session ended. One session per transaction; a session another
    process is extracting is left to it; when the extractor cannot answer (an outage, a tenant's daily
    cap), that tenant's sessions wait for the next run."""
    s = ctx.settings
    extractor = build_extractor(s)
    rows = {"sessions_extracted": 0, "messages_extracted": 0, "records_written": 0, "records_rejected": 0}
    rows["sessions_waiting"] = 0
    if extractor is None:
        return rows
    tokenizer = build_tokenizer(s.tokens.tokenizer, cache_dir=s.resolved_tokenizer_cache_dir)
    idle_before = ctx.now - timedelta(seconds=s.extraction.idle_seconds)
    stalled: set[str] = set()
    try:
        async with session_scope(ctx.db) as session:
            due = await extraction_repository.due_sessions(
                session,
                tenant_id=ctx.tenant_id,
                size=s.extraction.batch_messages,
                idle_before=idle_before,
                limit=s.jobs.batch_size,
            )
        for n, d in enumerate(due, 1):
            if d.tenant_id in stalled:
                rows["sessions_waiting"] += 1
                continue
            async with session_scope(ctx.db) as session:
                rctx = RequestContext(session, job_principal(d.tenant_id), s, tokenizer, ctx.now)
                result = await extract_session(
                    rctx, user_id=d.user_id, session_id=d.session_id, extractor=extractor, wait=False
                )
            if result is None:  # another process is extracting it
                continue
            if result.unavailable is not None:
                log.warning("extract: tenant %s waits: %s", d.tenant_id, result.unavailable)
                stalled.add(d.tenant_id)
                rows["sessions_waiting"] += 1
            if not result.messages:
                continue
            rows["sessions_extracted"] += 1
            rows["messages_extracted"] += result.messages
            rows["records_written"] += sum(1 for r in result.records if r.outcome != "reinforced")
            rows["records_rejected"] += len(result.rejected)
            if ctx.progress is not None:
                ctx.progress("sessions_extracted", n, len(due))
    finally:
        await extractor.close()
    return rows


JOBS: dict[JobName, Callable[[JobContext], Awaitable[dict[str, int]]]] = {
    "reindex": job_reindex,
    "expire": job_expire,
    "promote": job_promote,
    "decay": job_decay,
    "purge": job_purge,
    "extract": job_extract,
}


async def run_job(
    name: str,
    *,
    db: Database,
    settings: Settings,
    clock: Clock,
    tenant_id: str | None = None,
    trigger: str = "cli",
    tick: datetime | None = None,
    progress: Progress | None = None,
    vectors: VectorRecall | None = None,
) -> JobResult:
    if name not in JOBS:
        raise ValueError(f"unknown job {name!r}; jobs: {', '.join(JOB_NAMES)}")
    now = clock.now()
    # One span per run when tracing is on (service/tracing.py): the request's child, or the process's own.
    with tracing.job_span(name, settings, trigger=trigger, tenant_id=tenant_id) as span:
        async with db.engine.connect() as lock_conn:
            got = (await lock_conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": lock_key(name)})).scalar_one()
            await lock_conn.commit()
            if not got:
                result = JobResult(None, name, "skipped", now, reason="another process is running this job")
            else:
                try:
                    result = await _run_locked(name, db, settings, now, tenant_id, trigger, tick, progress, vectors)
                finally:
                    await lock_conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": lock_key(name)})
                    await lock_conn.commit()
        tracing.record_job(span, status=result.status, rows=result.rows, error=result.error)
    return result


async def _run_locked(
    name: str,
    db: Database,
    settings: Settings,
    now: datetime,
    tenant_id: str | None,
    trigger: str,
    tick: datetime | None,
    progress: Progress | None,
    vectors: VectorRecall | None,
) -> JobResult:
    run_id = uuid7()
    started = Clock().now()
    async with session_scope(db) as session:
        await runs.interrupt_stale(session, name, started)
        row = {
            "id": run_id,
            "name": name,
            "tenant": tenant_id,
            "trigger": trigger,
            "tick": tick,
            "as_of": now,
            "started_at": started,
        }
        if not await runs.start_run(session, row):
            return JobResult(None, name, "skipped", now, reason=f"tick {tick} already ran on another replica")
    ctx = JobContext(db, settings, now, tenant_id, run_id, name, progress, vectors)
    try:
        rows = await JOBS[name](ctx)
    except Exception as exc:
        error = "".join(traceback.format_exception_only(exc)).strip()
        async with session_scope(db) as session:
            record = await runs.finish_run(session, run_id, status="failed", rows={}, error=error, now=Clock().now())
        return JobResult(run_id, name, "failed", now, error=error, record=record)
    async with session_scope(db) as session:
        record = await runs.finish_run(session, run_id, status="succeeded", rows=rows, error=None, now=Clock().now())
    return JobResult(run_id, name, "succeeded", now, rows=rows, record=record)
