"""Every SQL statement of the ``job_run`` table: the record a run opens and closes (jobs/runner.py), the runs
an admin lists, the latest run of each job (the gauges of /metrics)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession


async def start_run(session: AsyncSession, row: Mapping[str, Any]) -> bool:
    """Record a run; False when a scheduler tick of this job was already taken by another replica."""
    result = await session.execute(
        text(
            "INSERT INTO job_run (id, name, tenant_id, trigger, tick, as_of, started_at, status, rows) "
            "VALUES (:id, :name, :tenant, :trigger, :tick, :as_of, :started_at, 'running', '{}'::jsonb) "
            "ON CONFLICT DO NOTHING RETURNING id"
        ),
        dict(row),
    )
    return result.scalar_one_or_none() is not None


async def interrupt_stale(session: AsyncSession, name: str, now: datetime) -> int:
    """Runs still 'running' while we hold the job's lock died mid-way (crash, kill): say so."""
    result = await session.execute(
        text(
            "UPDATE job_run SET status = 'interrupted', finished_at = :now, "
            "error = 'the process running it stopped before it finished; later runs pick up the rest' "
            "WHERE name = :name AND status = 'running' RETURNING id"
        ),
        {"name": name, "now": now},
    )
    return len(result.all())


async def finish_run(
    session: AsyncSession, run_id: uuid.UUID, *, status: str, rows: Mapping[str, int], error: str | None, now: datetime
) -> dict[str, Any]:
    """Close the run's record and return it as stored (what ``GET /v1/jobs/runs`` lists)."""
    result = await session.execute(
        text(
            "UPDATE job_run SET status = :status, rows = CAST(:rows AS jsonb), error = :error, finished_at = :now "
            "WHERE id = :id RETURNING *"
        ),
        {"id": run_id, "status": status, "rows": json.dumps(dict(rows)), "error": error, "now": now},
    )
    return dict(result.mappings().one())


async def list_runs(session: AsyncSession, *, tenant_id: str | None, name: str | None, limit: int) -> list[Any]:
    sql = "SELECT * FROM job_run WHERE (tenant_id IS NULL OR tenant_id = :tenant)"
    params: dict[str, Any] = {"tenant": tenant_id, "limit": limit}
    if tenant_id is None:
        sql = "SELECT * FROM job_run WHERE TRUE"
    if name:
        sql += " AND name = :name"
        params["name"] = name
    sql += " ORDER BY started_at DESC, id DESC LIMIT :limit"
    return list((await session.execute(text(sql), params)).mappings())


# The latest finished run of each job (any tenant's or the global one), with the rows it changed in all:
# for the job gauges of /metrics (jobs/metrics.py). One probe of ix_job_run_name_started per job name.
LATEST_RUNS = """
SELECT j.name, r.status, EXTRACT(EPOCH FROM r.finished_at - r.started_at)::float8 AS seconds,
       EXTRACT(EPOCH FROM r.finished_at)::float8 AS finished,
       (SELECT coalesce(sum(v.value::numeric), 0)::float8 FROM jsonb_each_text(coalesce(r.rows, '{}'::jsonb)) AS v
        WHERE v.value ~ '^-?[0-9]+$') AS changed
FROM unnest(CAST(:names AS text[])) AS j(name)
CROSS JOIN LATERAL (
    SELECT status, started_at, finished_at, rows FROM job_run
    WHERE name = j.name AND finished_at IS NOT NULL ORDER BY started_at DESC LIMIT 1
) AS r
"""


async def latest_runs(session: AsyncSession, *, names: list[str]) -> list[Any]:
    return list((await session.execute(text(LATEST_RUNS), {"names": names})).mappings())
