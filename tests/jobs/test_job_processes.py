"""Jobs across real processes: scheduler replicas run a tick once; a killed run is finished by a rerun."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import pytest

ROOT = Path(__file__).resolve().parents[2]


def env_for(database_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXMEM_")}
    env.update(
        CTXMEM_DATABASE_URL=database_url,
        CTXMEM_DATA_DIR=str(data_dir),
        PYTHONPATH=str(ROOT),
        CTXMEM_AUTO_MIGRATE="false",
        **extra,
    )
    return env


async def test_two_scheduler_replicas_run_each_tick_once(database_url: str, tmp_path: Path, db) -> None:  # type: ignore[no-untyped-def]
    schedules = '{"expire": "interval:2", "promote": "off", "decay": "off", "purge": "off"}'
    env = env_for(database_url, tmp_path, CTXMEM_JOB_SCHEDULES=schedules)
    conn = await asyncpg.connect(database_url)
    started = await conn.fetchval("SELECT now()")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "service.cli", "scheduler"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]
    try:
        await asyncio.sleep(9)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            assert p.wait(timeout=30) == 0
    rows = await conn.fetch(
        "SELECT tick, count(*) AS n FROM job_run WHERE name = 'expire' AND trigger = 'scheduler' AND started_at >= $1"
        " GROUP BY tick ORDER BY tick",
        started,
    )
    await conn.close()
    assert len(rows) >= 3  # ticks every 2 s over ~9 s
    assert all(r["n"] == 1 for r in rows)


async def test_killed_run_is_finished_by_a_rerun(database_url: str, tmp_path: Path, db, tenant) -> None:  # type: ignore[no-untyped-def]
    conn = await asyncpg.connect(database_url)
    await conn.execute(
        "INSERT INTO end_user (tenant_id, user_id, created_at, updated_at) VALUES ($1, 'kill', now(), now())",
        tenant.tenant_id,
    )
    await conn.execute(
        """
        INSERT INTO context_item (id, tenant_id, user_id, type, content, source, authority, scope, hard, kind,
                                  status, confidence, observed_at, created_at, updated_at, expires_at, token_cost,
                                  token_model)
        SELECT ctxmem_uuid7(), $1, 'kill', 'tool_result', 'reading ' || g, 'tool', 'tool', 'user', false, 'fact',
               'available', 0.9, now(), now(), now(), now() + interval '1 minute', 2, 'o200k_base'
        FROM generate_series(1, 3000) g
        """,
        tenant.tenant_id,
    )
    env = env_for(database_url, tmp_path, CTXMEM_JOB_BATCH_SIZE="50")
    cmd = [
        sys.executable,
        "-m",
        "service.cli",
        "jobs",
        "run",
        "expire",
        "--now",
        "2099-01-01T00:00:00Z",
        "--tenant",
        tenant.tenant_id,
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    done = 0
    while time.monotonic() < deadline:
        done = await conn.fetchval(
            "SELECT count(*) FROM context_item WHERE tenant_id = $1 AND status = 'expired'", tenant.tenant_id
        )
        if done >= 200:
            break
        await asyncio.sleep(0.02)
    proc.kill()
    proc.wait()
    partial = await conn.fetchval(
        "SELECT count(*) FROM context_item WHERE tenant_id = $1 AND status = 'expired'", tenant.tenant_id
    )
    if partial == 3000:
        pytest.fail("the run finished before it could be killed; make the batch smaller")
    assert partial % 50 == 0  # whole batches only: no half state
    rerun = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert f"items_expired={3000 - partial}" in rerun.stdout
    final = await conn.fetchval(
        "SELECT count(*) FROM context_item WHERE tenant_id = $1 AND status = 'expired'", tenant.tenant_id
    )
    events = await conn.fetchval(
        "SELECT count(*) FROM event WHERE tenant_id = $1 AND action = 'item.expired'", tenant.tenant_id
    )
    statuses = await conn.fetch(
        "SELECT status FROM job_run WHERE name = 'expire' AND tenant_id = $1 ORDER BY started_at", tenant.tenant_id
    )
    await conn.close()
    assert final == 3000 and events == 3000  # converged: every item once, one event each
    assert [r["status"] for r in statuses] == ["interrupted", "succeeded"]
