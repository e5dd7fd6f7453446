"""Jobs across real processes: the scheduler process starts and stops; a killed run is finished by a rerun."""

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


async def test_scheduler_process_starts_and_stops_on_sigterm(database_url: str, tmp_path: Path, db) -> None:  # type: ignore[no-untyped-def]
    """``ctxmem scheduler`` as a process: it says what it scheduled once it runs, and SIGTERM stops it
    cleanly. (What a tick does on several replicas: tests/jobs/test_scheduler.py, with a simulated clock.)"""
    schedules = '{"expire": "off", "promote": "off", "decay": "off", "purge": "off"}'
    env = env_for(database_url, tmp_path, CTXMEM_JOB_SCHEDULES=schedules, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "scheduler"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        banner = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout=60)
        assert banner.startswith("ctxmem scheduler running: ") and "expire=off" in banner
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


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
