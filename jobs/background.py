"""The extract job run by the API process itself, so that a service started alone (``ctxmem serve``, the
embedded default) learns from stored conversations without a ``ctxmem scheduler`` beside it.

Every ``CTXMEM_EXTRACT_SERVER_SECONDS`` the process asks whether any session's buffer is due (one indexed
read) and, only then, runs the job — which takes the job's advisory lock, so any number of API processes
and schedulers extract each session once, and records a ``job_run`` like every run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from jobs.runner import run_job
from service.clock import Clock
from service.db.engine import Database, session_scope
from service.extraction import repository
from service.outage import reason
from service.settings import Settings

log = logging.getLogger("ctxmem.extraction")


async def anything_due(db: Database, settings: Settings, clock: Clock) -> bool:
    idle_before = clock.now() - timedelta(seconds=settings.extraction.idle_seconds)
    async with session_scope(db) as session:
        due = await repository.due_sessions(
            session, tenant_id=None, size=settings.extraction.batch_messages, idle_before=idle_before, limit=1
        )
    return bool(due)


async def extract_in_background(stop: asyncio.Event, *, db: Database, settings: Settings, clock: Clock) -> None:
    """Until ``stop`` is set: every ``extraction.server_seconds``, the extract job if a session is due. A
    failed check or run (the database away, the extractor down) is logged and tried again next time."""
    every = settings.extraction.server_seconds
    if every <= 0 or settings.extraction.extractor == "off":
        return
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=every)
        if stop.is_set():
            return
        try:
            if await anything_due(db, settings, clock):
                result = await run_job("extract", db=db, settings=settings, clock=clock, trigger="server")
                if result.status == "failed":
                    log.warning("extract run failed: %s", result.error)
        except Exception as exc:  # the next round tries again; nothing is lost, messages wait
            log.warning("extract in the server: %s", reason(exc))
