"""A job run over every tenant (the scheduler's, the CLI's) sweeps them one after the other, each batch with
its tenant pinned (docs/citus.md): the same changes, counts and progress as each tenant's own runs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from bench.jobs import seed
from jobs.runner import run_job
from service.clock import FixedClock
from service.db.engine import plain_url
from service.settings import JobsSettings, Settings
from tests.proof.conftest import migrated_database

NOW = datetime(2027, 3, 1, tzinfo=UTC)
# Tenants of different sizes; the batch is smaller than the largest, so its sweep takes several batches.
TENANTS = {"sweep-a": 23, "sweep-b": 5, "sweep-c": 1, "sweep-d": 0}
BATCH = 4
JOBS = ("expire", "decay", "promote", "purge")


async def _seeded(url: str) -> None:
    conn = await asyncpg.connect(plain_url(url))
    try:
        for tenant, entries in TENANTS.items():
            if entries:
                await seed(conn, tenant, entries, 6)
            else:
                await conn.execute("INSERT INTO tenant (id, created_at) VALUES ($1, now())", tenant)
        # Some entries expire before NOW (every fifth value), so that expire has work in some tenants.
        await conn.execute(
            "UPDATE profile_entry SET expires_at = timestamptz '2027-01-01' WHERE substr(value, 2)::int % 5 = 0"
        )
    finally:
        await conn.close()


async def _state(url: str) -> list[tuple[Any, ...]]:
    conn = await asyncpg.connect(plain_url(url))
    try:
        rows = await conn.fetch(
            "SELECT tenant_id, value, tier, status, score, (breakdown - 'evidence_ids')::text FROM profile_entry "
            "ORDER BY tenant_id, value"
        )
        events = await conn.fetch(
            "SELECT e.tenant_id, p.value, e.action, e.rule, e.before::text, (e.after - 'run_id')::text "
            "FROM event e JOIN profile_entry p ON p.tenant_id = e.tenant_id AND p.id::text = e.entity_id "
            "ORDER BY 1, 2, 3, 4, 5, 6"
        )
        return [tuple(r) for r in rows] + [tuple(str(v) for v in r) for r in events]
    finally:
        await conn.close()


async def test_a_global_run_changes_what_each_tenants_runs_would(server_url: str, tmp_path: Path) -> None:
    results: dict[str, list[dict[str, int]]] = {}
    states: dict[str, list[tuple[Any, ...]]] = {}
    for how in ("global", "per-tenant"):
        async with migrated_database(server_url, "ctxmem_sweeps", tmp_path / how) as proof:
            await _seeded(proof.url)
            settings = Settings(
                database_url=proof.url,
                data_dir=tmp_path / how,
                tokenizer="estimate",
                jobs=JobsSettings(batch_size=BATCH),
            )
            rows = []
            for name in JOBS:
                tenants: list[str | None] = [None] if how == "global" else list(TENANTS)
                total: dict[str, int] = {}
                for tenant in tenants:
                    seen: list[tuple[str, int, int]] = []
                    result = await run_job(
                        name,
                        db=proof.db,
                        settings=settings,
                        clock=FixedClock(NOW),
                        tenant_id=tenant,
                        trigger="test",
                        progress=lambda kind, done, of, seen=seen: seen.append((kind, done, of)),  # type: ignore[misc]
                    )
                    assert result.status == "succeeded", result
                    for kind, n in result.rows.items():
                        total[kind] = total.get(kind, 0) + n
                    # Progress: one total for the whole run, what was done so far never falling, ending at
                    # the run's count of each kind.
                    assert len({of for _, _, of in seen}) <= 1, seen
                    for kind in {k for k, _, _ in seen}:
                        done = [d for k, d, _ in seen if k == kind]
                        assert done == sorted(done) and done[-1] == result.rows[kind], (kind, seen)
                rows.append(total)
            results[how] = rows
            states[how] = await _state(proof.url)
    assert results["global"] == results["per-tenant"]
    assert states["global"] == states["per-tenant"]
    changed = {k: v for r in results["global"] for k, v in r.items()}
    assert changed["entries_decayed"] and changed["entries_promoted"] and changed["entries_expired"], changed
