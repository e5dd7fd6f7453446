"""A bounded mixed workload against a real ``ctxmem serve`` on loopback (issue #12, part 5).

    python -m bench.load [--seconds 60] [--clients 16] [--users 50] [--items-per-user 100]
                         [--database-url URL] [--seed N]

A ``ctxmem serve`` (uvicorn, its outbox worker and embedded vector index running) in a subprocess, on an
embedded PostgreSQL of its own unless ``--database-url``. First ``--users`` users get
``--items-per-user`` items each (batches) and a few profile observations; then ``--clients`` clients
send requests back to back for ``--seconds`` seconds, each picking its next request from a fixed mix:

* ``window``        ``POST /v1/users/{u}/window`` (max_tokens 2,000, a new query each time)  40 %
* ``item``          ``POST /v1/users/{u}/items`` with an ``Idempotency-Key``, some keyed (slots)  25 %
* ``batch``         ``POST /v1/users/{u}/items/batch`` of 10 items  5 %
* ``observation``   ``POST /v1/users/{u}/observations``  20 %
* ``list``          ``GET /v1/users/{u}/items?limit=50``  10 %

(There is no search route; retrieval happens inside the window.) The load is bounded: at most
``--clients`` requests are in flight, and the run stops after ``--seconds``. Reported: requests/s in
total and per kind, p50/p99 latency per kind, errors (any answer but 2xx, or a transport error) by
status, and the server's RSS before the load, at its peak and after. Results go to stdout and to
``bench/results/load.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import secrets
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.common import bench_database
from bench.ingest import RssSampler, free_port, issue_key, log_tail, mb, start_server, stop_server, wait_ready
from service.db import migrate
from service.db.engine import create_database
from service.settings import Settings

RESULTS = Path(__file__).resolve().parent / "results" / "load.json"
MIX = {"window": 40, "item": 25, "batch": 5, "observation": 20, "list": 10}
ROUTES = {
    "window": "POST /v1/users/{u}/window",
    "item": "POST /v1/users/{u}/items",
    "batch": "POST /v1/users/{u}/items/batch",
    "observation": "POST /v1/users/{u}/observations",
    "list": "GET /v1/users/{u}/items",
}
WORDS = [
    *("cache", "postgres", "redis", "latency", "budget", "deploy", "kafka", "schema", "index", "query"),
    *("replica", "backup", "migration", "tokenizer", "window", "profile", "editor", "python", "rust"),
    *("golang", "team", "oncall", "incident", "review", "release"),
]
TYPES = ("fact", "preference", "decision", "episode", "goal")


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def record(self, kind: str, seconds: float, outcome: str | None) -> None:
        self.latencies[kind].append(seconds)
        if outcome is not None:
            self.errors[kind][outcome] += 1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def sentence(rng: random.Random, n: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def item_body(rng: random.Random) -> dict[str, Any]:
    body: dict[str, Any] = {"type": rng.choice(TYPES), "content": sentence(rng), "source": "user"}
    if rng.random() < 0.3:
        body["key"] = f"slot{rng.randrange(20)}"
        body["type"] = "fact"
    return body


def observation_body(rng: random.Random) -> dict[str, Any]:
    return {
        "dimension": rng.choice(["preference", "ability", "goal"]),
        "key": rng.choice(WORDS),
        "value": rng.choice(["yes", "no", "sometimes"]),
        "session_id": f"s{rng.randrange(50)}",
        "context": f"c{rng.randrange(5)}",
        "explicit": rng.random() < 0.3,
    }


def request_for(kind: str, rng: random.Random, user: str) -> tuple[str, str, Any, dict[str, str]]:
    base = f"/v1/users/{user}"
    if kind == "window":
        return "POST", f"{base}/window", {"input": sentence(rng, 8) + "?", "max_tokens": 2000}, {}
    if kind == "item":
        return "POST", f"{base}/items", item_body(rng), {"Idempotency-Key": secrets.token_hex(8)}
    if kind == "batch":
        body = {"items": [item_body(rng) for _ in range(10)]}
        return "POST", f"{base}/items/batch", body, {"Idempotency-Key": secrets.token_hex(8)}
    if kind == "observation":
        return "POST", f"{base}/observations", observation_body(rng), {}
    return "GET", f"{base}/items", None, {}


async def seed_users(client: httpx.AsyncClient, headers: dict[str, str], args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    for u in range(args.users):
        user = f"load-{u}"
        for start in range(0, args.items_per_user, 100):
            items = [item_body(rng) for _ in range(min(100, args.items_per_user - start))]
            r = await client.post(f"/v1/users/{user}/items/batch", json={"items": items}, headers=headers)
            r.raise_for_status()
        obs = [observation_body(rng) for _ in range(10)]
        r = await client.post(f"/v1/users/{user}/observations/batch", json={"observations": obs}, headers=headers)
        r.raise_for_status()


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


async def wait_outbox_drained(client: httpx.AsyncClient) -> None:
    for _ in range(600):
        vectors = (await client.get("/readyz")).json()["checks"].get("vectors", {})
        if not vectors.get("outbox_pending"):
            return
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the outbox did not drain: {vectors}")


async def load(client: httpx.AsyncClient, keys: list[dict[str, str]], args: argparse.Namespace) -> tuple[Stats, float]:
    stats = Stats()
    kinds, weights = list(MIX), list(MIX.values())
    started = time.perf_counter()
    deadline = started + args.seconds

    async def one_client(c: int) -> None:
        rng = random.Random(args.seed * 1000 + c)
        while time.perf_counter() < deadline:
            kind = rng.choices(kinds, weights)[0]
            method, path, body, extra = request_for(kind, rng, f"load-{rng.randrange(args.users)}")
            t0 = time.perf_counter()
            outcome: str | None
            try:
                r = await client.request(method, path, json=body, headers={**keys[c], **extra})
                outcome = None if 200 <= r.status_code < 300 else str(r.status_code)
            except httpx.TransportError as exc:
                outcome = type(exc).__name__
            stats.record(kind, time.perf_counter() - t0, outcome)

    await asyncio.gather(*(one_client(c) for c in range(args.clients)))
    return stats, time.perf_counter() - started


def report(stats: Stats, seconds: float, memory: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    routes = {}
    for kind in MIX:
        lat = stats.latencies.get(kind, [])
        routes[kind] = {
            "route": ROUTES[kind],
            "requests": len(lat),
            "per_s": round(len(lat) / seconds, 1),
            "p50_ms": round(percentile(lat, 50) * 1000, 1) if lat else None,
            "p99_ms": round(percentile(lat, 99) * 1000, 1) if lat else None,
            "errors": dict(stats.errors.get(kind, {})),
        }
    total = sum(r["requests"] for r in routes.values())
    errors = sum(sum(r["errors"].values()) for r in routes.values())
    return {
        "seconds": round(seconds, 1),
        "clients": args.clients,
        "users": args.users,
        "items_per_user": args.items_per_user,
        "requests": total,
        "requests_per_s": round(total / seconds, 1),
        "errors": errors,
        "routes": routes,
        "memory": memory,
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()},
    }


def print_table(result: dict[str, Any]) -> None:
    print(
        f"\n{result['requests']:,} requests in {result['seconds']} s = {result['requests_per_s']:,} req/s "
        f"({result['clients']} clients), errors: {result['errors']}"
    )
    print(f"{'route':<34} {'requests':>9} {'req/s':>7} {'p50 ms':>8} {'p99 ms':>8}  errors")
    for r in result["routes"].values():
        errors = r["errors"] or 0
        print(f"{r['route']:<34} {r['requests']:>9,} {r['per_s']:>7} {r['p50_ms']!s:>8} {r['p99_ms']!s:>8}  {errors}")
    c = result["cpu"]
    print(f"CPU during the load: server {c['server_cpu_s']} s, this client {c['client_cpu_s']} s")
    m = result["memory"]
    print(
        f"server RSS: {m['rss_mb_before']} MB before the load, {m['rss_mb_peak']} MB peak, {m['rss_mb_after']} MB after"
    )


async def run(args: argparse.Namespace) -> int:
    async with bench_database("ctxmem-load-", args.database_url) as (url, tmp):
        db = create_database(url, Settings(database_url=url, tokenizer="estimate"))
        await migrate.upgrade(db.engine)
        tenant = f"load-{secrets.token_hex(3)}"
        # One key per client, as separate agents would have: each stays under the per-key rate limit,
        # which is left at its default (a 429 would count as an error).
        keys = [await issue_key(db, tenant) for _ in range(args.clients)]
        await db.dispose()
        port = free_port()
        log_path = tmp / "server.log"
        proc = start_server(url, port, tmp / "server-data", log_path)
        try:
            limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
            async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=httpx.Timeout(60.0)
            ) as client:
                await wait_ready(client, proc, log_path)
                print(f"seeding {args.users} users x {args.items_per_user} items …", file=sys.stderr)
                await seed_users(client, keys[0], args)
                # The outbox worker indexes what was seeded; the load starts once it has caught up, so
                # that it measures the mix rather than the seeding's backlog.
                await wait_outbox_drained(client)
                sampler = RssSampler(proc.pid)
                before = sampler.sample()
                server_cpu, client_cpu = cpu_seconds(proc.pid), cpu_seconds(os.getpid())
                sampler.start()
                print(f"load: {args.clients} clients for {args.seconds} s …", file=sys.stderr)
                stats, seconds = await load(client, keys, args)
                await sampler.stop()
                after = sampler.sample()
                cpu = {
                    "server_cpu_s": round(cpu_seconds(proc.pid) - server_cpu, 1),
                    "client_cpu_s": round(cpu_seconds(os.getpid()) - client_cpu, 1),
                }
        except Exception:
            print(log_tail(log_path), file=sys.stderr)
            raise
        finally:
            stop_server(proc)
    memory = {"rss_mb_before": mb(before), "rss_mb_peak": mb(sampler.max_rss), "rss_mb_after": mb(after)}
    result = report(stats, seconds, memory, args)
    result["cpu"] = cpu
    print_table(result)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["errors"] == 0 else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60.0, help="length of the load (default 60)")
    p.add_argument("--clients", type=int, default=16, help="requests in flight (default 16)")
    p.add_argument("--users", type=int, default=50, help="users the requests are spread over (default 50)")
    p.add_argument("--items-per-user", type=int, default=100, help="items seeded per user (default 100)")
    p.add_argument("--seed", type=int, default=20261201)
    p.add_argument(
        "--database-url",
        default=os.environ.get("CTXMEM_BENCH_DATABASE_URL", ""),
        help="an existing PostgreSQL (default: an embedded one in a temporary directory)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(build_parser().parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
