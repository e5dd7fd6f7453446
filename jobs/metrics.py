"""Job gauges for /metrics, read from ``job_run`` when Prometheus scrapes: jobs run in whichever process
holds their lock (the scheduler, the CLI, an admin's API call), so the table is the one place that knows
them all. Each API process reports the same values; do not sum them."""

from __future__ import annotations

import asyncio
import logging

from prometheus_client import CollectorRegistry, Gauge

from schemas.jobs import JOB_NAMES
from service.db.engine import Database, session_scope
from service.jobs_api import repository as runs

log = logging.getLogger("ctxmem.scheduler")

# A scrape never waits on a slow or unreachable database for longer than this: the gauges keep their last
# values (and the HTTP series still answer), which is what an alert on "no recent run" needs.
REFRESH_TIMEOUT_SECONDS = 2.0


class JobGauges:
    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["job"]
        self.duration = Gauge(
            "ctxmem_job_last_duration_seconds", "How long the job's latest finished run took", labels, registry=registry
        )
        self.finished = Gauge(
            "ctxmem_job_last_finished_timestamp_seconds",
            "When the job's latest run finished (Unix time)",
            labels,
            registry=registry,
        )
        self.failed = Gauge(
            "ctxmem_job_last_failed", "1 when the job's latest finished run failed, else 0", labels, registry=registry
        )
        self.changed = Gauge(
            "ctxmem_job_last_rows_changed",
            "Rows the job's latest finished run changed in all",
            labels,
            registry=registry,
        )

    async def refresh(self, db: Database) -> None:
        """The latest finished run of every job; on a database error or timeout the gauges keep their values."""
        try:
            async with asyncio.timeout(REFRESH_TIMEOUT_SECONDS):
                async with session_scope(db) as session:
                    rows = await runs.latest_runs(session, names=list(JOB_NAMES))
        except Exception as exc:  # the database is down or slow: /metrics must still answer
            log.warning("job gauges not refreshed: %s: %s", type(exc).__name__, exc)
            return
        for r in rows:
            job = r["name"]
            self.duration.labels(job).set(r["seconds"])
            self.finished.labels(job).set(r["finished"])
            self.failed.labels(job).set(1.0 if r["status"] == "failed" else 0.0)
            self.changed.labels(job).set(r["changed"])
