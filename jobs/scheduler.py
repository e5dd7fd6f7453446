"""``ctxmem scheduler``: APScheduler 3.x firing the jobs on the schedules in settings.

Any number of replicas may run. Ticks are aligned to the wall clock (interval schedules count from the
Unix epoch, cron schedules are UTC), so every replica computes the same tick; the first to record that
tick in ``job_run`` runs it, the others skip — and the advisory lock keeps two runs of one job from
overlapping at all.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from jobs.runner import JobResult, run_job
from service.clock import Clock
from service.db.engine import Database
from service.settings import Settings

log = logging.getLogger("ctxmem.scheduler")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# On SIGTERM the runs in progress get this long to finish before they are cancelled (a cancelled run rolls
# back its batch and stays "running" until the next run marks it interrupted). Below the grace periods of
# deploy/ (compose's stop_grace_period 30 s, the scheduler pod's terminationGracePeriodSeconds 60 s).
STOP_GRACE_SECONDS = 25.0
_running: set[asyncio.Task[Any]] = set()


def tick_of(spec: str, now: datetime) -> datetime:
    """The scheduled instant a firing belongs to, identical on every replica."""
    kind, _, arg = spec.partition(":")
    if kind == "interval":
        seconds = int(arg)
        elapsed = int((now - EPOCH).total_seconds())
        return EPOCH + timedelta(seconds=elapsed - elapsed % seconds)
    return now.replace(second=0, microsecond=0)


def trigger_of(spec: str) -> IntervalTrigger | CronTrigger:
    kind, _, arg = spec.partition(":")
    if kind == "interval":
        return IntervalTrigger(seconds=int(arg), start_date=EPOCH, timezone=UTC)
    return CronTrigger.from_crontab(arg, timezone=UTC)


async def fire(name: str, spec: str, *, db: Database, settings: Settings, clock: Clock) -> JobResult:
    """One firing: the run of ``name`` for the tick ``clock`` is in, unless another replica took that tick."""
    tick = tick_of(spec, clock.now())
    task = asyncio.current_task()
    if task is not None:
        _running.add(task)
    try:
        result = await run_job(name, db=db, settings=settings, clock=clock, trigger="scheduler", tick=tick)
    finally:
        if task is not None:
            _running.discard(task)
    if result.status == "skipped":
        log.info("%s tick %s skipped: %s", name, tick.isoformat(), result.reason)
    else:
        log.info("%s tick %s %s: %s %s", name, tick.isoformat(), result.status, result.rows, result.error or "")
    return result


def build_scheduler(db: Database, settings: Settings, *, clock: Clock) -> AsyncIOScheduler:
    """An APScheduler with one job per schedule that is not ``off``, not started."""
    scheduler = AsyncIOScheduler(timezone=UTC)
    for name, spec in sorted(settings.jobs.schedules.items()):
        if spec == "off":
            continue
        scheduler.add_job(
            fire,
            trigger_of(spec),
            args=(name, spec),
            kwargs={"db": db, "settings": settings, "clock": clock},
            id=name,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=60,
        )
        log.info("scheduled %s: %s", name, spec)
    return scheduler


async def run_scheduler(
    db: Database, settings: Settings, *, clock: Clock | None = None, stop: asyncio.Event | None = None
) -> None:
    stop = stop or asyncio.Event()
    scheduler = build_scheduler(db, settings, clock=clock or Clock())
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    scheduler.start()
    print(f"ctxmem scheduler running: {', '.join(f'{n}={s}' for n, s in sorted(settings.jobs.schedules.items()))}")
    try:
        await stop.wait()
    finally:
        # No new firings; the runs in progress finish (APScheduler's shutdown does not wait for coroutines,
        # and leaving asyncio.run would cancel them mid-batch).
        scheduler.pause()
        if _running:
            log.info("waiting up to %.0f s for %d job run(s) to finish", STOP_GRACE_SECONDS, len(_running))
            await asyncio.wait(set(_running), timeout=STOP_GRACE_SECONDS)
        scheduler.shutdown(wait=False)
