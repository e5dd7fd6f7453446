"""Scheduled-job benchmark (docs/design.md §6): decay + promotion over 100k entries with 1M observations, then
over twice that. Prints times beside a raw baseline measured in the same run (one aggregate pass over
all observations grouped by entry: the least work promotion can do).

    python -m bench.jobs [--entries 100000] [--per-entry 10] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from bench.common import bench_database, bench_parser
from jobs.runner import run_job
from service.clock import FixedClock
from service.db import migrate
from service.db.engine import create_database, plain_url
from service.settings import Settings

NOW = datetime(2027, 3, 1, tzinfo=UTC)


async def seed(conn: asyncpg.Connection, tenant: str, entries: int, per_entry: int) -> None:
    users = max(1, entries // 1000)
    await conn.execute("INSERT INTO tenant (id, created_at) VALUES ($1, now()) ON CONFLICT DO NOTHING", tenant)
    await conn.execute(
        "INSERT INTO end_user (tenant_id, user_id, created_at, updated_at)"
        " SELECT $1, 'u' || g, now(), now() FROM generate_series(1, $2) g",
        tenant,
        users,
    )
    await conn.execute("SELECT setseed(0.42)")
    # Entries: half candidates, a third long-term, the rest current; evidence between 2026-06 and 2026-12, so
    # as of 2027-03 some are silent for 90+ days (decay) and some candidates have the evidence to be promoted.
    await conn.execute(
        """
        INSERT INTO profile_entry (id, tenant_id, user_id, domain, domain_key, dimension, key, value, polarity, tier,
            status, score, breakdown, explicit, evidence_count, current_session_id, confirmed_at, first_evidence_at,
            last_evidence_at, last_supported_at, created_at, updated_at)
        SELECT ctxmem_uuid7(), $1, 'u' || (1 + (g % $3)), d, d, 'preference', 'k' || (g % 50), 'v' || g, 'like',
               CASE WHEN g % 6 < 3 THEN 'candidate' WHEN g % 6 < 5 THEN 'long_term' ELSE 'current' END,
               'active', 40, '{}'::jsonb, false, $4, 's1', NULL,
               ts, ts + interval '100 days' * random(), ts + interval '100 days' * random(), now(), now()
        FROM (SELECT g, (ARRAY['phone','finance','coding','travel'])[1 + g % 4] AS d,
                     timestamptz '2026-08-01' + interval '150 days' * random() AS ts
              FROM generate_series(1, $2) g) s
        """,
        tenant,
        entries,
        users,
        per_entry,
    )
    await conn.execute(
        """
        INSERT INTO observation (id, tenant_id, user_id, entry_id, session_id, context, explicit, stance,
            confirmation, observed_at, source, weight, created_at)
        SELECT ctxmem_uuid7(), e.tenant_id, e.user_id, e.id, 's' || (1 + floor(random() * 8))::int,
               (ARRAY['shop','chat','plan'])[1 + floor(random() * 3)::int], random() < 0.1,
               CASE WHEN random() < 0.05 THEN 'contradicts' ELSE 'supports' END, false,
               e.first_evidence_at + interval '100 days' * random(), 'model', 1.0, now()
        FROM profile_entry e, generate_series(1, $2) k WHERE e.tenant_id = $1
        """,
        tenant,
        per_entry,
    )
    await conn.execute("ANALYZE profile_entry; ANALYZE observation")


async def measure(url: str, settings: Settings, tenant: str) -> dict[str, Any]:
    db = create_database(url, settings)
    raw = await asyncpg.connect(plain_url(url))
    t0 = time.perf_counter()
    await raw.fetch(
        "SELECT entry_id, count(DISTINCT session_id), min(observed_at), max(observed_at), count(DISTINCT context)"
        " FROM observation WHERE tenant_id = $1 GROUP BY entry_id",
        tenant,
    )
    baseline = time.perf_counter() - t0
    await raw.close()
    out: dict[str, Any] = {"raw_aggregate_s": baseline}
    for name in ("decay", "promote"):
        t0 = time.perf_counter()
        result = await run_job(name, db=db, settings=settings, clock=FixedClock(NOW), tenant_id=tenant, trigger="bench")
        out[f"{name}_s"] = time.perf_counter() - t0
        out[f"{name}_rows"] = result.rows
        assert result.status == "succeeded", result
    out["total_s"] = out["decay_s"] + out["promote_s"]
    await db.dispose()
    return out


async def main(args: argparse.Namespace) -> int:
    async with bench_database("ctxmem-bench-jobs-", args.database_url) as (url, tmp):
        settings = Settings(database_url=url, data_dir=tmp)
        db = create_database(url, settings)
        await migrate.upgrade(db.engine)
        await db.dispose()
        results = []
        for scale in (1, 2):
            n = args.entries * scale
            tenant = f"bench-jobs-{scale}x-{os.getpid()}"
            conn = await asyncpg.connect(plain_url(url))
            t0 = time.perf_counter()
            await seed(conn, tenant, n, args.per_entry)
            seeded = time.perf_counter() - t0
            await conn.close()
            r = await measure(url, settings, tenant)
            r.update(entries=n, observations=n * args.per_entry, seed_s=seeded)
            results.append(r)
            print(
                f"{n:>9,} entries / {n * args.per_entry:>10,} observations: decay {r['decay_s']:6.2f} s "
                f"{r['decay_rows']}, promote {r['promote_s']:6.2f} s {r['promote_rows']}; total {r['total_s']:6.2f} s; "
                f"raw aggregate {r['raw_aggregate_s']:5.2f} s (x{r['total_s'] / r['raw_aggregate_s']:.1f})",
                flush=True,
            )
        growth = results[1]["total_s"] / results[0]["total_s"]
        print(f"growth at 2x data: {growth:.2f}x (target ≤ 2.2x); target ≤ 30 s at 100k / 1M")
        out = Path(__file__).parent / "results" / "jobs.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({"runs": results, "growth": growth}, indent=2, default=str))
        return 0


def cli() -> int:
    p = bench_parser(__doc__)
    p.add_argument("--entries", type=int, default=100_000)
    p.add_argument("--per-entry", type=int, default=10)
    return asyncio.run(main(p.parse_args()))


if __name__ == "__main__":
    sys.exit(cli())
