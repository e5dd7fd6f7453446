"""Vector index benchmark (docs/design.md §3.8): the VectorIndex adapters on the same data and queries.

100 users x 1,000 points (384-d random unit vectors, 4 tenants, a realistic status and type mix) are upserted
through each adapter in batches of the outbox size, then ``--queries`` top-10 searches filtered by tenant +
user + status (``available``/``verified``) run one at a time. Reported: upsert throughput (points/s over the
time spent inside ``upsert``), search p50/p99, recall@10 against an exact numpy search of the same rows (the
baseline row, timed too), and, for on-disk backends, the time to reopen the index and count it.

``edge-built`` is the embedded index after its HNSW build (``QdrantEdgeIndex.build()``: a copy of the shard
optimised in a child process and swapped in), timed as ``build s``; ``stall ms`` is the longest the event
loop went without a turn meanwhile. Graphs are built only for users above the
full-scan threshold (~6,600 points of 384 dimensions), so at 100 users x 1,000 points the built index still
scores each user's points exactly; ``--users 1 --points 100000`` is the large-user case.

qdrant-client's local mode (``:memory:`` and ``path``) scans every point in Python on each search, so it gets a
bounded share: ``--slow-users`` users (20k points) and ``--slow-queries`` queries by default.

    python -m bench.vector_index [--users 100] [--points 1000] [--queries 1000] [--limit 10]
                                 [--backends edge,edge-built,memory,local,pgvector]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scoring.embedding import hash_embed
from service.vectors.base import VectorIndex, VectorPoint
from service.vectors.factory import build_index
from service.vectors.qdrant_edge import QdrantEdgeIndex

STATUSES = ["available"] * 14 + ["verified"] * 2 + ["archived"] * 2 + ["superseded"] * 2
TYPES = ["fact", "fact", "preference", "episode", "constraint", "goal", "tool_result", "decision"]
ACTIVE = ["available", "verified"]
TENANTS = 4
LIMIT = 10  # --limit

LABELS = {
    "edge": "qdrant-edge (embedded)",
    "edge-built": "qdrant-edge after HNSW build",
    "memory": "qdrant-client :memory:",
    "local": "qdrant-client local (path)",
    "pgvector": "pgvector (embedded PostgreSQL)",
}


@dataclass
class User:
    tenant_id: str
    user_id: str
    ids: list[uuid.UUID]
    vectors: np.ndarray  # (n, dim) float32, unit rows
    statuses: list[str]
    types: list[str]

    def points(self) -> list[VectorPoint]:
        rows = self.vectors.tolist()  # the outbox hands the index lists of floats
        return [
            VectorPoint(
                id=self.ids[i],
                vector=rows[i],
                payload={
                    "tenant_id": self.tenant_id,
                    "user_id": self.user_id,
                    "type": self.types[i],
                    "status": self.statuses[i],
                    "domain": "general",
                },
            )
            for i in range(len(self.ids))
        ]


# --vectors hashing: texts of bench.window's vocabulary (a few dozen words), hashing-embedded as the default
# embedder would: close to one another, which is hard for a graph, like random vectors.
WORDS = [
    *["cache", "latency", "budget", "team", "postgres", "redis", "memcached", "cluster", "deploy", "region"],
    *["replica", "failover", "queue", "kafka", "index", "query", "shard", "tenant", "quota", "cost", "alert"],
    *["incident", "runbook", "缓存", "延迟", "预算", "团队", "集群", "部署"],
]


def make_vectors(
    rng: np.random.Generator, n: int, dim: int, kind: str, words: tuple[int, int] = (15, 60)
) -> np.ndarray:
    if kind == "hashing":
        lengths = rng.integers(words[0], words[1] + 1, n)
        texts = [" ".join(WORDS[i] for i in rng.integers(0, len(WORDS), k)) for k in lengths]
        return hash_embed(texts, dim=dim).astype(np.float32)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def make_user(seed: int, u: int, n: int, dim: int, kind: str = "random") -> User:
    """Deterministic per (seed, user): every backend, and any subset of users, sees the same rows."""
    rng = np.random.default_rng([seed, u])
    vectors = make_vectors(rng, n, dim, kind)
    ids = [uuid.UUID(bytes=rng.bytes(16), version=4) for _ in range(n)]
    statuses = [STATUSES[i] for i in rng.integers(0, len(STATUSES), n)]
    types = [TYPES[i] for i in rng.integers(0, len(TYPES), n)]
    return User(f"bench-t{u % TENANTS}", f"user-{u}", ids, vectors, statuses, types)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


class Exact:
    """The baseline: an exact top-10 over one user's active rows with numpy, rows pre-filtered like an index."""

    def __init__(self, users: list[User]) -> None:
        self.active: list[tuple[np.ndarray, list[uuid.UUID]]] = []
        for user in users:
            keep = [i for i, s in enumerate(user.statuses) if s in ACTIVE]
            self.active.append((user.vectors[keep], [user.ids[i] for i in keep]))

    def search(self, u: int, query: np.ndarray) -> list[uuid.UUID]:
        matrix, ids = self.active[u]
        scores = matrix @ query
        top = np.argpartition(-scores, LIMIT)[:LIMIT]
        return [ids[i] for i in top[np.argsort(-scores[top])]]


def run_exact(exact: Exact, users: list[User], queries: np.ndarray) -> dict[str, Any]:
    for q, query in enumerate(queries[:20]):  # warm-up, untimed
        exact.search(q % len(users), query)
    latencies = []
    for q, query in enumerate(queries):
        t0 = time.perf_counter()
        exact.search(q % len(users), query)
        latencies.append(time.perf_counter() - t0)
    row: dict[str, Any] = {"points": sum(len(u.ids) for u in users), "queries": len(queries)}
    row |= {"p50_ms": pct(latencies, 50) * 1e3, "p99_ms": pct(latencies, 99) * 1e3, "recall": 1.0}
    return row


async def run_backend(
    backend: str,
    data_dir: Path,
    *,
    dim: int,
    users: list[User],
    queries: np.ndarray,
    exact: list[list[uuid.UUID]],
    batch: int,
) -> dict[str, Any]:
    kind = "edge" if backend == "edge-built" else backend
    database_url = await bench_database(data_dir) if backend == "pgvector" else None
    index = build_index(
        kind, dim=dim, data_dir=data_dir, url=None, api_key=None, build_threshold=0, database_url=database_url
    )
    await index.ensure_collection()
    upsert_s = 0.0
    total = 0
    try:
        for user in users:
            points = user.points()
            for start in range(0, len(points), batch):
                chunk = points[start : start + batch]
                t0 = time.perf_counter()
                await index.upsert(chunk)
                upsert_s += time.perf_counter() - t0
                total += len(chunk)
        stored = await index.count()
        if stored != total:
            raise SystemExit(f"{backend}: {stored} points stored, {total} upserted")
        build_s = None
        if backend == "edge-built":
            assert isinstance(index, QdrantEdgeIndex)
            t0 = time.perf_counter()
            build = asyncio.create_task(index.build())
            stall = await longest_stall(build)
            if not build.result():
                raise SystemExit(f"{backend}: the build failed")
            build_s = time.perf_counter() - t0
        await search_all(index, users, queries[: min(20, len(queries))])  # warm-up, untimed
        latencies, answers = await search_all(index, users, queries)
    finally:
        await index.close()
    hits = sum(len(set(a) & set(e)) for a, e in zip(answers, exact, strict=True))
    row: dict[str, Any] = {"points": total, "upsert_pts_s": total / upsert_s, "queries": len(queries)}
    row |= {"p50_ms": pct(latencies, 50) * 1e3, "p99_ms": pct(latencies, 99) * 1e3}
    row["recall"] = hits / sum(len(e) for e in exact)
    if build_s is not None:
        row["build_s"] = build_s
        row["stall_ms"] = stall * 1e3
    if backend != "memory":  # on disk: how long a restart takes to get the index back
        t0 = time.perf_counter()
        again = build_index(kind, dim=dim, data_dir=data_dir, url=None, api_key=None, database_url=database_url)
        await again.ensure_collection()
        reopened = await again.count()
        row["reopen_s"] = time.perf_counter() - t0
        await again.close()
        if reopened != total:
            raise SystemExit(f"{backend}: {reopened} points after reopening, {total} before")
    return row


async def bench_database(data_dir: Path) -> str:
    """A database of its own in an embedded PostgreSQL under ``data_dir`` (the pgvector backend's table)."""
    from service.db.embedded import ensure_database, start_embedded

    server = await asyncio.to_thread(start_embedded, data_dir / "postgres")
    await ensure_database(server.get_uri(), "bench")
    return str(server.get_uri("bench"))


async def longest_stall(task: asyncio.Task[Any]) -> float:
    """The longest the event loop went without a turn (a 1 ms sleep) while ``task`` ran, in seconds."""
    longest = 0.0
    last = time.perf_counter()
    while not task.done():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
    return longest


async def search_all(
    index: VectorIndex, users: list[User], queries: np.ndarray
) -> tuple[list[float], list[list[uuid.UUID]]]:
    latencies, answers = [], []
    for q, query in enumerate(queries.tolist()):
        user = users[q % len(users)]
        t0 = time.perf_counter()
        hits = await index.search(query, tenant_id=user.tenant_id, user_id=user.user_id, limit=LIMIT, statuses=ACTIVE)
        latencies.append(time.perf_counter() - t0)
        answers.append([h.id for h in hits])
    return latencies, answers


def print_table(rows: dict[str, dict[str, Any]]) -> None:
    head = f"{'index':<30} {'points':>8} {'upsert pts/s':>13} {'queries':>8} {'p50 ms':>8} {'p99 ms':>8}"
    print(head + f" {f'recall@{LIMIT}':>10} {'reopen s':>9} {'build s':>8} {'stall ms':>9}")
    for label, r in rows.items():
        upsert = f"{r['upsert_pts_s']:,.0f}" if "upsert_pts_s" in r else "-"
        reopen = f"{r['reopen_s']:.2f}" if "reopen_s" in r else "-"
        build = f"{r['build_s']:.1f}" if "build_s" in r else "-"
        stall = f"{r['stall_ms']:.0f}" if "stall_ms" in r else "-"
        print(
            f"{label:<30} {r['points']:>8,} {upsert:>13} {r['queries']:>8,} {r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f}"
            f" {r['recall']:>10.3f} {reopen:>9} {build:>8} {stall:>9}"
        )


async def main(args: argparse.Namespace) -> int:
    global LIMIT
    LIMIT = args.limit
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(backends) - set(LABELS)
    if unknown:
        raise SystemExit(f"unknown backends: {', '.join(sorted(unknown))}")
    users = [make_user(args.seed, u, args.points, args.dim, args.vectors) for u in range(args.users)]
    queries = make_vectors(np.random.default_rng([args.seed, 1 << 30]), args.queries, args.dim, args.vectors, (4, 12))
    rows: dict[str, dict[str, Any]] = {"numpy exact (baseline)": run_exact(Exact(users), users, queries)}

    tmp = Path(tempfile.mkdtemp(prefix="ctxmem-bench-vectors-"))
    try:
        for backend in backends:
            slow = backend in ("memory", "local")
            n_users = min(args.slow_users, len(users)) if slow else len(users)
            n_queries = min(args.slow_queries, len(queries)) if slow else len(queries)
            # queries cycle over the users given to the backend: the exact answers for that subset
            exact = Exact(users[:n_users])
            answers = [exact.search(q % n_users, queries[q]) for q in range(n_queries)]
            print(f"{LABELS[backend]}: {n_users * args.points:,} points, {n_queries} queries…", file=sys.stderr)
            rows[LABELS[backend]] = await run_backend(
                backend,
                tmp / backend,
                dim=args.dim,
                users=users[:n_users],
                queries=queries[:n_queries],
                exact=answers,
                batch=args.batch,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"\n{args.users} users x {args.points} points, {args.dim}-d {args.vectors} unit vectors, {TENANTS} tenants; "
        f"top-{LIMIT} "
        f"filtered by tenant + user + status in {ACTIVE}; upserts in batches of {args.batch}"
    )
    print_table(rows)
    if {"memory", "local"} & set(backends):
        print(
            f"qdrant-client local mode (:memory: and path) scans every point in Python: bounded to the first "
            f"{args.slow_users} users and {args.slow_queries} queries."
        )
    print(f"recall@{LIMIT}: share of the exact top-{LIMIT} (numpy over the same rows) that the index returned.")
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"config": vars(args), "results": rows}, indent=2))
    bad = [label for label, r in rows.items() if r["recall"] < 0.99]
    if bad:
        print(f"recall below 0.99: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


def cli() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", type=int, default=100)
    p.add_argument("--points", type=int, default=1000, help="points per user")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--batch", type=int, default=256, help="points per upsert (the outbox batch size)")
    p.add_argument("--backends", default="edge,edge-built,memory,local")
    p.add_argument("--vectors", choices=["random", "hashing"], default="random", help="what the points are")
    p.add_argument("--limit", type=int, default=LIMIT, help="top-k of each search (the window asks for 100)")
    p.add_argument("--slow-users", type=int, default=20, help="users given to qdrant-client's local mode")
    p.add_argument("--slow-queries", type=int, default=100, help="queries given to qdrant-client's local mode")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--output", default="bench/results/vector_index.json")
    return asyncio.run(main(p.parse_args()))


if __name__ == "__main__":
    sys.exit(cli())
