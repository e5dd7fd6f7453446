"""Window assembly benchmark (docs/design.md §6): a user with 1,000 items and 200 profile entries.

Reports the service time of ``POST /window``'s work (p50/p99 over ``--calls`` calls, in process, one
session per call of the reads pool, as the route reads: service/db/engine.py) beside a raw asyncpg fetch of
the same rows measured in the same run (outside a transaction, as the window reads them),
and optionally (``--http``) latency over real HTTP: ``ctxmem serve --workers W`` for each W of ``--workers``
(default 1, 2 and the machine's cores; one worker uses the embedded Qdrant Edge index, more the pgvector
table, filled with the same points), each with 50 closed-loop clients and then an open loop at
``--offered`` windows/s (default 100) for ``--open-seconds``.

The window runs with the default retrieve step: hybrid relevance of the user's items to the query (full-
text search in PostgreSQL plus the embedded Qdrant Edge index, hashing embedder), with the index holding
``--index-points`` points in all (this user's plus filler points of 99 other users, as at 100 users x 1,000
items). PostgreSQL holds as many items of those 99 other users (copies of this user's, with their
full-text rows), so the window's statements run against tables shared with other users' memory, as in a
deployment. The user has items of another session too, which the query may recall. Also reported: the outbox
worker's throughput indexing this user's items, and the retrieve step alone.

The service time is measured six ways: the same request again and again (the rows unchanged, so the
per-process window cache serves what the rows give); a new input every call (what a conversation does:
the text to count and the query change each turn); with vector recall off (relevance from PostgreSQL
only, as when the index is down: ``degraded``); a new input every call ranked by BM25 in PostgreSQL
rather than from the process's copy of the user's texts (service/recall/lexicon.py); the first window
after a write, as in a conversation that stores each turn (one episode of the request's session written
and indexed before each call, untimed: the window's state is rebuilt, reusing what did not change, and
the copy of the texts brought up to date); and with both caches off, so every call fetches and derives
everything and ranks in PostgreSQL — an upper bound for the first window after any write, to the items
or the profile.

    python -m bench.window [--calls 2000] [--items 1000] [--entries 200] [--index-points 100000] [--http]
                           [--workers 1,2,N] [--offered 100] [--open-seconds 10] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench.common import bench_database, bench_parser, describe_speed, machine_speed
from schemas.items import ItemCreate
from schemas.profiles import ObservationCreate
from schemas.windows import WindowRequest
from scoring.embedding import hash_embed
from service.auth.principal import Principal
from service.auth.service import create_key
from service.caches import ProcessCaches
from service.clock import Clock
from service.context import RequestContext
from service.db import migrate
from service.db.engine import create_database, plain_url, session_scope
from service.db.models import active_sql
from service.items.service import create_items
from service.profiles.service import add_observations
from service.recall.service import relevance
from service.settings import Settings
from service.tokenizer import build_tokenizer
from service.vectors.base import VectorPoint
from service.vectors.recall import build_recall
from service.windows import repository as window_repository
from service.windows.service import build_window

WORDS = [
    *["cache", "latency", "budget", "team", "postgres", "redis", "memcached", "cluster"],
    *["deploy", "region", "replica", "failover"],
    *["queue", "kafka", "index", "query", "shard", "tenant", "quota", "cost", "alert", "incident", "runbook"],
    *["缓存", "延迟", "预算", "团队", "集群", "部署"],
]


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def text(rnd: random.Random, lo: int, hi: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(lo, hi)))


def make_items(rnd: random.Random, n: int) -> list[ItemCreate]:
    """The first 1,000 items a mix of every type and scope (pinned constraints and decisions, this session's
    items, an earlier session's, slots); past 1,000, what a long-lived user accumulates: episodes of their
    conversations, user scope, which only retrieval (or being among the newest) brings into a window."""
    types = ["fact"] * 5 + ["preference"] * 2 + ["tool_result"] * 3 + ["episode"] * 3 + ["summary", "entity"]
    out = []
    for i in range(n):
        if i >= 1000:
            out.append(ItemCreate(type="episode", content=text(rnd, 15, 60), source="summary"))
            continue
        t = rnd.choice(types)
        body: dict[str, Any] = {
            "type": t,
            "content": text(rnd, 15, 120),
            "source": rnd.choice(["user", "tool", "model"]),
        }
        if t == "tool_result":
            body["source"] = "tool"
            body["expires_at"] = "2099-01-01T00:00:00Z"
        if i % 50 == 0:
            body.update(type="constraint", hard=True, content=f"Hard rule {i}: " + text(rnd, 5, 12), source="user")
        if i % 100 == 1:
            body.update(type="decision", content="Decision: " + text(rnd, 5, 15), source="user")
        if i % 7 == 0:
            body.update(key=f"k{i % 40}", value=i)
        if i % 11 == 0:
            body.update(scope="session", session_id="s-bench")
        elif i % 13 == 0:  # an earlier session's: outside the window's scopes, recalled when relevant
            body.update(scope="session", session_id="s-earlier")
        out.append(ItemCreate.model_validate(body))
    return out


async def add_filler(index: Any, rnd: random.Random, tenant: str, n: int, dim: int) -> None:
    """``n`` points of 99 other users of the tenant, their texts drawn from ``rnd``."""
    for start in range(0, n, 5000):
        k = min(5000, n - start)
        vecs = hash_embed([text(rnd, 15, 60) for _ in range(k)], dim=dim).tolist()
        await index.upsert(
            [
                VectorPoint(
                    id=uuid.uuid4(),
                    vector=v,
                    payload={"tenant_id": tenant, "user_id": f"other-{(start + j) % 99}", "type": "fact",
                             "status": "available", "domain": None},
                )
                for j, v in enumerate(vecs)
            ]
        )  # fmt: skip


async def add_other_users(url: str, tenant: str, user: str, n: int) -> int:
    """``n`` items of 99 other users of the tenant in PostgreSQL — copies of the benchmark user's, with
    their lexical index rows — so that the window's statements run against a table holding other users'
    memory, as a deployment's does (the vector index gets its filler points separately). Returns how many."""
    conn = await asyncpg.connect(plain_url(url))
    try:
        cols = [
            r["column_name"]
            for r in await conn.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'context_item' "
                "AND table_schema = current_schema() ORDER BY ordinal_position"
            )
        ]
        # Time-ordered ids, as the service writes them: the other users' items are the newest in the table.
        copied = {"id": "ctxmem_uuid7()", "user_id": "'other-' || g.n"}
        select = ", ".join(copied.get(c, f"c.{c}") for c in cols)
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO end_user (tenant_id, user_id, created_at, updated_at) "
                "SELECT $1, 'other-' || n, now(), now() FROM generate_series(0, 98) AS g(n) ON CONFLICT DO NOTHING",
                tenant,
            )
            status = await conn.execute(
                f"INSERT INTO context_item ({', '.join(cols)}) "
                f"SELECT {select} FROM generate_series(0, 98) AS g(n) CROSS JOIN LATERAL "
                "(SELECT * FROM context_item WHERE tenant_id = $1 AND user_id = $2 ORDER BY id) AS c "
                "LIMIT $3",
                tenant,
                user,
                n,
            )
            await conn.execute(
                "INSERT INTO item_search (item_id, tenant_id, user_id, tsv) "
                "SELECT id, tenant_id, user_id, ctxmem_tsv(content) FROM context_item "
                f"WHERE tenant_id = $1 AND user_id LIKE 'other-%' AND {active_sql()}",
                tenant,
            )
        return int(status.split()[-1])
    finally:
        await conn.close()


def make_observations(rnd: random.Random, n: int) -> list[ObservationCreate]:
    out = []
    for i in range(n):
        out.append(
            ObservationCreate.model_validate(
                {
                    "domain": rnd.choice([None, "phone", "laptop", "travel"]),
                    "dimension": rnd.choice(["preference", "goal", "ability", "decision_style"]),
                    "key": f"key{i % 60}",
                    "value": f"value{i}",
                    "session_id": f"s{rnd.randint(1, 8)}",
                    "context": rnd.choice(["shop", "chat", "plan"]),
                    "explicit": rnd.random() < 0.3,
                    "confirmation": rnd.random() < 0.4,
                }
            )
        )
    return out


# The rows a window reads: its standing candidates and the newest few (the window's own statement), and the
# items retrieved for the query, fetched by id with all their columns (the window skips those of rows it
# already holds, so this baseline reads at least as much as the window does).
ITEMS_SQL = window_repository._ITEMS_SQL
RETRIEVED_SQL = window_repository._RETRIEVED_SQL
ENTRIES_SQL = "SELECT * FROM profile_entry WHERE tenant_id = $1 AND user_id = $2 ORDER BY id"


async def main(args: argparse.Namespace) -> int:
    async with bench_database("ctxmem-bench-window-", args.database_url) as (url, tmp):
        # One worker: the in-process rows measure the embedded index (Qdrant Edge), as they always have.
        settings = Settings(database_url=url, data_dir=tmp, workers=1)
        db = create_database(url, settings)
        await migrate.upgrade(db.engine)
        tokenizer = build_tokenizer(settings.tokens.tokenizer, cache_dir=settings.resolved_tokenizer_cache_dir)
        caches = ProcessCaches()  # the process's caches, as the app's lifespan builds them
        tenant = f"bench-window-{secrets.token_hex(3)}"
        user = "u-window"
        async with session_scope(db) as s:
            key = await create_key(s, tenant_id=tenant, role="agent", name=None, now=Clock().now(), actor="bench")
        principal = Principal(tenant_id=tenant, key_id=key.id, role="agent")
        rnd = random.Random(args.seed)
        items = make_items(rnd, args.items)
        for start in range(0, len(items), 1000):
            async with session_scope(db) as s:
                ctx = RequestContext(s, principal, settings, tokenizer, Clock().now(), caches=caches)
                await create_items(ctx, user_id=user, items=items[start : start + 1000], batch=True)
        async with session_scope(db) as s:
            await add_observations(
                RequestContext(s, principal, settings, tokenizer, Clock().now(), caches=caches),
                user_id=user,
                observations=make_observations(rnd, args.entries),
                batch=True,
            )
        # The vector index: the outbox worker indexes this user's items (timed), then filler points of 99
        # other users bring it to --index-points.
        recall = await build_recall(db, settings)
        assert recall is not None
        t0 = time.perf_counter()
        applied = await recall.worker.drain(settle=False)
        outbox_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        await recall.index.settle()  # an HNSW build for a large user, in a child process
        settle_s = time.perf_counter() - t0
        print(
            f"outbox worker: {applied} changes applied in {outbox_s:.2f} s = {applied / outbox_s:,.0f} points/s "
            f"(batch {settings.outbox.batch_size}, embedder {recall.embedder.name}, index {recall.index.name}); "
            f"index upkeep after it (graph build) {settle_s:.1f} s"
        )
        filler = max(0, args.index_points - applied)
        filler_state = rnd.getstate()  # --http fills a pgvector index with the same points again
        await add_filler(recall.index, rnd, tenant, filler, settings.vectors.embedding_dim)
        # The same number of other users' items in PostgreSQL, with their full-text rows.
        others = await add_other_users(url, tenant, user, filler)
        points = await recall.index.count()
        # As autovacuum soon would after a load: the planner's statistics current, and no vacuum or
        # analyze running into the timed rows (on 2 cores it shows in every figure).
        vac = await asyncpg.connect(plain_url(url))
        await vac.execute("VACUUM ANALYZE context_item, item_search, profile_entry, observation, vector_outbox, event")
        await vac.close()
        messages = []
        for _ in range(5):
            messages += [
                {"role": "user", "content": text(rnd, 5, 30)},
                {"role": "assistant", "content": text(rnd, 10, 60)},
            ]
        req = WindowRequest.model_validate(
            {
                "input": "Which cache should we pick for session data, given our small team?",
                "max_tokens": args.max_tokens,
                "session_id": "s-bench",
                "goal": "Pick a cache",
                "messages": messages,
            }
        )
        async with db.engine.connect() as conn:
            from sqlalchemy import text as sql

            n_items = (
                await conn.execute(
                    sql("SELECT count(*) FROM context_item WHERE tenant_id = :t AND user_id = :u"),
                    {"t": tenant, "u": user},
                )
            ).scalar_one()
            n_entries = (
                await conn.execute(
                    sql("SELECT count(*) FROM profile_entry WHERE tenant_id = :t AND user_id = :u"),
                    {"t": tenant, "u": user},
                )
            ).scalar_one()

        speed = await machine_speed(url)
        print(describe_speed(speed))
        modes: dict[str, int] = {}
        # As the app's lifespan does: what setup built is left out of the cyclic collector's full passes.
        gc.collect()
        gc.freeze()

        queries = [text(rnd, 4, 12) for _ in range(64)]

        async def service_times(run_settings: Settings, vary: bool, vectors: Any = recall) -> list[float]:
            times: list[float] = []
            for i in range(args.calls + 50):
                call = req.model_copy(update={"input": f"{queries[i % 64]} (turn {i})"}) if vary else req
                async with db.reads() as s:
                    t0 = time.perf_counter()
                    ctx = RequestContext(s, principal, run_settings, tokenizer, Clock().now(), vectors, caches=caches)
                    w = await build_window(ctx, user_id=user, req=call)
                    dt = (time.perf_counter() - t0) * 1000
                    await s.rollback()
                if i >= 50:
                    times.append(dt)
                    modes[w["mode"]] = modes.get(w["mode"], 0) + 1
            return times

        service_ms = await service_times(settings, vary=False)
        varied_ms = await service_times(settings, vary=True)
        lexical_ms = await service_times(settings, vary=True, vectors=None)
        in_postgres_ms = await service_times(settings.replace(lexicon_texts=0), vary=True)
        uncached_ms = await service_times(settings.replace(window_cache_entries=0, lexicon_texts=0), vary=True)
        retrieve_ms: list[float] = []
        fixed_ms: list[float] = []
        recalled = 0
        for i in range(args.calls + 50):
            for query, into in ((queries[i % 64], retrieve_ms), (req.input, fixed_ms)):
                async with db.reads() as s:
                    t0 = time.perf_counter()
                    ctx = RequestContext(s, principal, settings, tokenizer, Clock().now(), recall, caches=caches)
                    found = await relevance(ctx, user_id=user, query=query, documents=n_items)
                    dt = (time.perf_counter() - t0) * 1000
                    await s.rollback()
                if i >= 50:
                    into.append(dt)
                    recalled += len(found.scores) if into is retrieve_ms else 0
        async with db.sessionmaker() as s:
            ctx = RequestContext(s, principal, settings, tokenizer, Clock().now(), recall, caches=caches)
            w = await build_window(ctx, user_id=user, req=req)
            await s.rollback()
        from_elsewhere = sum(1 for sec in w["sections"] for p in sec["items"] if p["reason"].startswith("recalled"))

        async with db.sessionmaker() as s:
            ctx = RequestContext(s, principal, settings, tokenizer, Clock().now(), recall, caches=caches)
            found = await relevance(ctx, user_id=user, query=req.input, documents=n_items)
        retrieved_ids = list(found.scores)
        # As the window reads: outside a transaction, on generic plans (its reads pool, service/db/engine.py).
        raw = await asyncpg.connect(plain_url(url), server_settings={"plan_cache_mode": "force_generic_plan"})
        raw_ms: list[float] = []
        args_sql = (tenant, user, "s-bench", "", "", "", None)
        for i in range(args.calls + 50):
            t0 = time.perf_counter()
            rows = await raw.fetch(ITEMS_SQL, *args_sql, settings.window.recent_items)
            more = await raw.fetch(
                RETRIEVED_SQL, tenant, user, retrieved_ids, Clock().now(), None, "s-bench", "", "", ""
            )
            entries = await raw.fetch(ENTRIES_SQL, tenant, user)
            dt = (time.perf_counter() - t0) * 1000
            if i >= 50:
                raw_ms.append(dt)
        await raw.close()

        # What a conversation does each turn: the agent stores the turn as an episode of its session, the
        # outbox worker indexes it (neither timed), and the next window has a new input. The user's items
        # grow by one a call (run last, so the rows above saw the user as built).
        turns = random.Random(5)
        written_ms: list[float] = []
        for i in range(args.calls + 50):
            async with db.sessionmaker() as s:
                turn = ItemCreate(type="episode", content=text(turns, 15, 60), source="summary", session_id="s-bench")
                await create_items(
                    RequestContext(s, principal, settings, tokenizer, Clock().now(), caches=caches),
                    user_id=user,
                    items=[turn],
                    batch=False,
                )
                await s.commit()
            await recall.worker.drain(settle=False)
            call = req.model_copy(update={"input": f"{queries[i % 64]} (turn {i})"})
            async with db.reads() as s:
                t0 = time.perf_counter()
                ctx = RequestContext(s, principal, settings, tokenizer, Clock().now(), recall, caches=caches)
                await build_window(ctx, user_id=user, req=call)
                dt = (time.perf_counter() - t0) * 1000
                await s.rollback()
            if i >= 50:
                written_ms.append(dt)

        print(
            f"window: user with {n_items} items ({len(rows)} standing or newest, {len(more)} more retrieved by id) and "
            f"{n_entries} profile entries ({others:,} items of 99 other users beside them), "
            f"max_tokens {args.max_tokens}, {args.calls} calls per row, modes {modes}; vector index "
            f"{points:,} points; {recalled / args.calls:.0f} items relevant per query on average; "
            f"{from_elsewhere} recalled from another session into the benchmark request's window"
        )
        print(f"{'path':<44}{'p50 ms':>9}{'p99 ms':>9}{'mean ms':>9}")
        print("-" * 71)
        for name, vals in (
            ("window service time", service_ms),
            ("  … a new input and query every call", varied_ms),
            ("  … vector recall off (PostgreSQL only)", lexical_ms),
            ("  … ranked in PostgreSQL (no copy of texts)", in_postgres_ms),
            ("  … after a write (a new turn stored)", written_ms),
            ("  … cache off (every call rebuilds all)", uncached_ms),
            ("retrieve step alone (hybrid relevance)", retrieve_ms),
            ("  … the first row's query", fixed_ms),
            ("raw asyncpg fetch of the same rows", raw_ms),
        ):
            print(f"{name:<44}{pct(vals, 50):9.2f}{pct(vals, 99):9.2f}{statistics.fmean(vals):9.2f}")
        ratio = pct(service_ms, 50) / pct(raw_ms, 50)
        print(f"ratio p50 service / raw fetch: {ratio:.2f}x (target ≤ 3x); targets p50 ≤ 5 ms, p99 ≤ 15 ms")
        result: dict[str, Any] = {
            "items": n_items,
            "entries": n_entries,
            "window_rows": len(rows) + len(more) + len(entries),
            "service_ms": {"p50": pct(service_ms, 50), "p99": pct(service_ms, 99)},
            "service_new_input_ms": {"p50": pct(varied_ms, 50), "p99": pct(varied_ms, 99)},
            "service_lexical_only_ms": {"p50": pct(lexical_ms, 50), "p99": pct(lexical_ms, 99)},
            "service_lexical_in_postgres_ms": {"p50": pct(in_postgres_ms, 50), "p99": pct(in_postgres_ms, 99)},
            "service_cache_off_ms": {"p50": pct(uncached_ms, 50), "p99": pct(uncached_ms, 99)},
            "service_after_write_ms": {"p50": pct(written_ms, 50), "p99": pct(written_ms, 99)},
            "retrieve_ms": {"p50": pct(retrieve_ms, 50), "p99": pct(retrieve_ms, 99)},
            "index_points": points,
            "other_users_items": others,
            "outbox_points_per_s": applied / outbox_s,
            "raw_fetch_ms": {"p50": pct(raw_ms, 50), "p99": pct(raw_ms, 99)},
            "ratio_p50": ratio,
            "modes": modes,
            "machine": speed,
        }
        await recall.index.close()  # the servers below open it (one worker) or use PostgreSQL's (more)
        if args.http:
            fill = random.Random()
            fill.setstate(filler_state)

            async def shared_index() -> None:
                """The pgvector table with as many points: every active item in PostgreSQL through the
                outbox (the table's creation queues them: this user's and the other users' copies), then
                filler points of the other users up to --index-points."""
                pg = await build_recall(db, settings.replace(vector_backend="pgvector"))
                assert pg is not None
                await pg.worker.drain()
                more = max(0, args.index_points - await pg.index.count())
                await add_filler(pg.index, fill, tenant, more, settings.vectors.embedding_dim)
                print(f"pgvector index: {await pg.index.count():,} points", file=sys.stderr)
                await pg.index.close()

            result["http"] = await http_bench(url, tmp, key.secret, user, req, args, shared_index)
        out = Path(__file__).parent / "results" / "window.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
        await db.dispose()
        return 0


def worker_counts(spec: str) -> list[int]:
    """``--workers``: "1,2,N" (N: the machine's cores), each once, in order."""
    out: list[int] = []
    for part in spec.split(","):
        n = (os.cpu_count() or 1) if part.strip().upper() == "N" else int(part)
        if n < 1:
            raise SystemExit(f"--workers: {part!r} is not a number of workers")
        if n not in out:
            out.append(n)
    return out


async def http_bench(
    url: str,
    tmp: Path,
    secret: str,
    user: str,
    req: WindowRequest,
    args: argparse.Namespace,
    shared_index: Callable[[], Awaitable[None]],
) -> dict[str, Any]:
    """``ctxmem serve --workers W`` for each W of ``--workers``, on the benchmark's database and index (one
    worker: the embedded Qdrant Edge index the in-process rows used; more: pgvector, filled first): a
    closed loop of ``--clients`` clients, then an open loop at ``--offered`` windows/s."""
    rows: dict[str, Any] = {}
    filled = False
    load = os.getloadavg()
    for workers in worker_counts(args.workers):
        if workers > 1 and not filled:
            await shared_index()
            filled = True
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CTXMEM_")},
            "CTXMEM_DATA_DIR": str(tmp),
            "CTXMEM_WORKERS": str(workers),
            # the closed loop sends as fast as the server answers, with one key: no per-key limit here
            "CTXMEM_RATE_LIMIT_PER_SECOND": "0",
            "CTXMEM_LOG_LEVEL": "warning",
            "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        }
        cmd = [sys.executable, "-m", "service.cli", "serve", "--port", str(port), "--database-url", url]
        proc = subprocess.Popen(
            [*cmd, "--host", "127.0.0.1"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        base = f"http://127.0.0.1:{port}"
        try:
            await until_serving(base, proc, workers)
            row = await closed_loop(base, secret, user, req, args)
            row["open_loop"] = await open_loop(base, secret, user, req, args)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        row["backend"] = "qdrant-edge" if workers == 1 else "pgvector"
        rows[str(workers)] = row
    print(
        f"\nHTTP, POST /window, {args.clients} closed-loop clients ({args.http_requests} requests) and an open loop "
        f"at {args.offered:g}/s for {args.open_seconds:g} s; load average at start {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f} on {os.cpu_count()} cores"
    )
    print(f"{'workers':<9}{'index':<13}{'windows/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>7}   "
          f"{'open p50':>9}{'open p99':>9}{'errors':>7}")  # fmt: skip
    for workers, r in rows.items():
        o = r["open_loop"]
        print(
            f"{workers:<9}{r['backend']:<13}{r['throughput_rps']:>10.0f}{r['p50_ms']:>9.1f}{r['p99_ms']:>9.1f}"
            f"{r['errors']:>7}   {o['p50_ms']:>9.1f}{o['p99_ms']:>9.1f}{o['errors']:>7}"
        )
    print("target: p99 ≤ 25 ms and no errors at the open loop's offered rate")
    return {"load_average": load, "cores": os.cpu_count(), "workers": rows}


async def until_serving(base: str, proc: subprocess.Popen[bytes], workers: int) -> None:
    """Until ``/readyz`` answers 200 on ``workers`` connections at once (every worker has started)."""
    for _ in range(1200):
        if proc.poll() is not None:
            raise SystemExit(f"ctxmem serve --workers {workers} exited with {proc.returncode}")
        try:
            async with httpx.AsyncClient(base_url=base, timeout=2) as c:
                answers = await asyncio.gather(*(c.get("/readyz") for _ in range(4 * workers)))
            if all(a.status_code == 200 for a in answers):
                await asyncio.sleep(2.0 if workers > 1 else 0)  # the last worker's startup
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise SystemExit(f"ctxmem serve --workers {workers} did not become ready")


async def closed_loop(
    base: str, secret: str, user: str, req: WindowRequest, args: argparse.Namespace
) -> dict[str, Any]:
    body = req.model_dump(mode="json", exclude_none=True)
    latencies: list[float] = []
    errors = 0
    # uvicorn closes a keep-alive connection after 5 s idle; reusing one just then is a ReadError, so
    # the client lets idle connections go first.
    limits = httpx.Limits(max_connections=args.clients, keepalive_expiry=4.0)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
        headers = {"Authorization": f"Bearer {secret}"}

        async def worker(n: int) -> None:
            nonlocal errors
            for _ in range(n):
                t0 = time.perf_counter()
                r = await client.post(f"/v1/users/{user}/window", json=body, headers=headers)
                latencies.append((time.perf_counter() - t0) * 1000)
                if r.status_code != 200:
                    errors += 1

        await asyncio.gather(*(worker(20) for _ in range(args.clients)))
        t0 = time.perf_counter()
        latencies.clear()
        errors = 0
        await asyncio.gather(*(worker(args.http_requests // args.clients) for _ in range(args.clients)))
        wall = time.perf_counter() - t0
    return {
        "clients": args.clients,
        "requests": len(latencies),
        "errors": errors,
        "p50_ms": pct(latencies, 50),
        "p99_ms": pct(latencies, 99),
        "throughput_rps": len(latencies) / wall,
    }


async def open_loop(base: str, secret: str, user: str, req: WindowRequest, args: argparse.Namespace) -> dict[str, Any]:
    """Requests sent at ``--offered`` a second whether or not earlier ones have returned; each latency runs
    from the moment it was due (a late send counts against the server, not hidden by the client)."""
    body = req.model_dump(mode="json", exclude_none=True)
    n = int(args.offered * args.open_seconds)
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=1000, keepalive_expiry=4.0)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
        headers = {"Authorization": f"Bearer {secret}"}

        async def one(due: float) -> None:
            nonlocal errors
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            try:
                r = await client.post(f"/v1/users/{user}/window", json=body, headers=headers)
                if r.status_code != 200:
                    errors += 1
            except httpx.HTTPError:
                errors += 1
            latencies.append((time.perf_counter() - due) * 1000)

        start = time.perf_counter() + 0.5
        await asyncio.gather(*(one(start + i / args.offered) for i in range(n)))
    return {"offered_per_s": args.offered, "requests": n, "errors": errors, "p50_ms": pct(latencies, 50),
            "p99_ms": pct(latencies, 99)}  # fmt: skip


def cli() -> int:
    p = bench_parser(__doc__)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--items", type=int, default=1000)
    p.add_argument("--entries", type=int, default=200)
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--index-points", type=int, default=100_000, help="points in the vector index in all")
    p.add_argument("--http", action="store_true", help="also measure over HTTP with concurrent clients")
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--http-requests", type=int, default=2000)
    p.add_argument("--workers", default="1,2,N", help="--http: serve with each of these worker counts (N: cores)")
    p.add_argument("--offered", type=float, default=100.0, help="--http: the open loop's windows a second")
    p.add_argument("--open-seconds", type=float, default=10.0, help="--http: how long the open loop runs")
    return asyncio.run(main(p.parse_args()))


if __name__ == "__main__":
    sys.exit(cli())
