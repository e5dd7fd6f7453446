"""The replica read path's added latency: window p50/p99 over HTTP from a streaming replica against the same
windows from the primary (docs/operations.md#read-replicas).

A real primary and streaming replica (Debian's PostgreSQL server, as in tests/service/db/test_replicas.py:
two data directories on loopback, ``pg_basebackup -R``) and two ``ctxmem serve`` processes on the same
database: one with ``CTXMEM_DATABASE_REPLICA_URLS`` (its windows are read from the replica), one without
(the primary). A user with ``--items`` items and ``--entries`` profile entries (bench.window's), vector
recall off (the comparison is of the PostgreSQL reads). One client, the two servers' calls interleaved
so that drift on a shared machine falls on both alike:

- ``steady``: windows with a new input each call, nothing written meanwhile (the window cache's check
  and the retrieval queries run on the replica);
- ``after write``: an item written, then at once the window (read-your-writes: the replica must have
  replayed the write's commit first, waited for up to ``CTXMEM_DATABASE_REPLICA_WAIT_SECONDS``), which
  also rebuilds the cached state from the rows.

    python -m bench.replica [--calls 300] [--writes 100] [--items 1000] [--entries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench.window import make_items, make_observations, pct, text
from service.auth.service import create_key
from service.clock import Clock
from service.db import migrate, replicas
from service.db.engine import create_database, session_scope
from service.db.positions import SOURCE_HEADER
from service.settings import Settings

# The cluster and the live servers are the replica tests' own (bench.locomo's tests import bench the other
# way round): one way to start them.
from tests.proof.live import LiveServer, start_server
from tests.service.db.replication import cluster


async def choice_totals(client: httpx.AsyncClient) -> tuple[float, float]:
    """(seconds, reads) the server spent choosing a replica so far: its ctxmem_replica_choice_seconds."""
    metrics = (await client.get("/metrics")).text
    found = dict(re.findall(r"^ctxmem_replica_choice_seconds_(sum|count) ([0-9.e+-]+)$", metrics, re.M))
    return float(found["sum"]), float(found["count"])


async def check_cost(url: str, n: int) -> dict[str, dict[str, float]]:
    """The statement that decides whether the replica may serve a read, timed against a bare round trip."""
    conn = await asyncpg.connect(url)
    try:
        out = {}
        for name, sql, args in (("select_1", "SELECT 1", ()), ("check", replicas._CHECK_SQL, ("0/0",))):
            times = []
            for _ in range(n + 20):
                t0 = time.perf_counter()
                await conn.fetchrow(sql, *args)
                times.append((time.perf_counter() - t0) * 1000)
            out[name] = _ms(times[20:])
        return out
    finally:
        await conn.close()


def _ms(values: list[float]) -> dict[str, float]:
    return {"p50": pct(values, 50), "p99": pct(values, 99), "mean": statistics.fmean(values)}


async def main(args: argparse.Namespace) -> int:
    rnd = random.Random(args.seed)
    with cluster() as pg, tempfile.TemporaryDirectory(prefix="ctxmem-bench-replica-") as tmp:
        url = pg.primary.url()
        settings = Settings(database_url=url, data_dir=Path(tmp) / "cli")
        db = create_database(url, settings)
        await migrate.upgrade(db.engine)
        tenant = f"bench-replica-{secrets.token_hex(3)}"
        async with session_scope(db) as s:
            key = await create_key(s, tenant_id=tenant, role="agent", name=None, now=Clock().now(), actor="bench")
        await db.dispose()
        env = {
            "CTXMEM_RATE_LIMIT_PER_SECOND": "0",
            "CTXMEM_VECTOR_BACKEND": "off",
            "CTXMEM_DATABASE_REPLICA_WAIT_SECONDS": str(args.wait),
        }
        replica_srv, primary_srv = await asyncio.gather(
            asyncio.to_thread(start_server, url, Path(tmp) / "r", **env, CTXMEM_DATABASE_REPLICA_URLS=pg.replica.url()),
            asyncio.to_thread(start_server, url, Path(tmp) / "p", **env),
        )
        try:
            result = await measure(args, rnd, pg, replica_srv, primary_srv, key.secret)
        finally:
            await asyncio.gather(asyncio.to_thread(replica_srv.stop), asyncio.to_thread(primary_srv.stop))
    out = Path(__file__).parent / "results" / "replica.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    return 0


async def measure(
    args: argparse.Namespace, rnd: random.Random, pg: Any, replica: LiveServer, primary: LiveServer, secret: str
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {secret}"}
    user = "u-replica"
    async with (
        httpx.AsyncClient(base_url=replica.base_url, headers=headers, timeout=60) as via_replica,
        httpx.AsyncClient(base_url=primary.base_url, headers=headers, timeout=60) as via_primary,
    ):
        items = [i.model_dump(mode="json", exclude_none=True) for i in make_items(rnd, args.items)]
        for start in range(0, len(items), 1000):
            r = await via_primary.post(f"/v1/users/{user}/items/batch", json={"items": items[start : start + 1000]})
            assert r.status_code == 201, r.text
        observations = [o.model_dump(mode="json", exclude_none=True) for o in make_observations(rnd, args.entries)]
        r = await via_primary.post(f"/v1/users/{user}/observations/batch", json={"observations": observations})
        assert r.status_code == 201, r.text
        await asyncio.to_thread(pg.wait_caught_up)
        check = await check_cost(pg.replica.url(), args.calls)

        def body(i: int) -> dict[str, Any]:
            return {"input": f"{text(rnd, 4, 12)} (turn {i})", "max_tokens": args.max_tokens}

        async def window(client: httpx.AsyncClient, i: int) -> tuple[float, str]:
            t0 = time.perf_counter()
            r = await client.post(f"/v1/users/{user}/window", json=body(i))
            elapsed = (time.perf_counter() - t0) * 1000
            assert r.status_code == 200, r.text
            return elapsed, r.headers.get(SOURCE_HEADER, "primary (no replicas)")

        for i in range(20):  # warm-up: connections, caches, plans
            await window(via_replica, i)
            await window(via_primary, i)
        start_choice = await choice_totals(via_replica)
        steady: dict[str, list[float]] = {"replica": [], "primary": []}
        sources: Counter[str] = Counter()
        for i in range(args.calls):
            for name, client in (("replica", via_replica), ("primary", via_primary))[:: 1 if i % 2 else -1]:
                ms, source = await window(client, i)
                steady[name].append(ms)
                if name == "replica":
                    sources[source] += 1
        choice_steady = await choice_totals(via_replica)
        after: dict[str, list[float]] = {"replica": [], "primary": []}
        after_sources: Counter[str] = Counter()
        for i in range(args.writes):
            for name, client in (("replica", via_replica), ("primary", via_primary))[:: 1 if i % 2 else -1]:
                r = await client.post(
                    f"/v1/users/{user}/items",
                    json={"type": "fact", "content": f"{text(rnd, 8, 30)} (write {i})", "source": "user"},
                )
                assert r.status_code == 201, r.text
                ms, source = await window(client, i)
                after[name].append(ms)
                if name == "replica":
                    after_sources[source] += 1
        choice_after = await choice_totals(via_replica)
    steady_choice = (choice_steady[0] - start_choice[0]) / (choice_steady[1] - start_choice[1])
    after_choice = (choice_after[0] - choice_steady[0]) / (choice_after[1] - choice_steady[1])
    result = {
        "check_statement_ms": check,
        "choice_ms_mean": {"steady": 1000 * steady_choice, "after_write": 1000 * after_choice},
        "items": args.items,
        "entries": args.entries,
        "wait_seconds": args.wait,
        "steady_ms": {k: _ms(v) for k, v in steady.items()},
        "steady_sources": dict(sources),
        "after_write_ms": {k: _ms(v) for k, v in after.items()},
        "after_write_sources": dict(after_sources),
    }
    for label, figures, counts in (
        ("steady", result["steady_ms"], sources),
        ("after a write", result["after_write_ms"], after_sources),
    ):
        rep, pri = figures["replica"], figures["primary"]
        print(
            f"window {label}: replica p50 {rep['p50']:.2f} ms p99 {rep['p99']:.2f} ms; primary p50 {pri['p50']:.2f} "
            f"ms p99 {pri['p99']:.2f} ms; added p50 {rep['p50'] - pri['p50']:+.2f} ms; served by {dict(counts)}"
        )
    print(
        f"the replica check statement alone (asyncpg, one connection): p50 {check['check']['p50']:.3f} ms against "
        f"SELECT 1 p50 {check['select_1']['p50']:.3f} ms"
    )
    print(
        f"choosing the replica (its check, and any wait for it to replay), mean a read: steady "
        f"{1000 * steady_choice:.2f} ms, after a write {1000 * after_choice:.2f} ms"
    )
    return result


def cli() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--writes", type=int, default=100)
    p.add_argument("--items", type=int, default=1000)
    p.add_argument("--entries", type=int, default=200)
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--wait", type=float, default=0.05, help="CTXMEM_DATABASE_REPLICA_WAIT_SECONDS")
    p.add_argument("--seed", type=int, default=7)
    return asyncio.run(main(p.parse_args()))


if __name__ == "__main__":
    sys.exit(cli())
