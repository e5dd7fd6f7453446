"""What the benchmarks share: a database for one run; for the retrieval evals (``bench.recall_eval``,
``bench.locomo``), the budget filling of the baselines and the per-question bookkeeping."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import text as sql

from scoring.window import line_overhead  # the window's estimate of a line's "- " and newline
from service.auth.principal import Principal
from service.auth.service import create_key
from service.clock import Clock
from service.db import migrate
from service.db.embedded import ensure_database, start_embedded
from service.db.engine import Database, create_database, plain_url, session_scope
from service.settings import Settings
from service.tokenizer import build_tokenizer
from service.vectors.recall import VectorRecall, build_recall


def bench_parser(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's command line: its module docstring as the help, and ``--database-url`` (default
    ``CTXMEM_BENCH_DATABASE_URL``; empty: an embedded PostgreSQL of the run's own, see ``bench_database``)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--database-url", default=os.environ.get("CTXMEM_BENCH_DATABASE_URL", ""))
    return p


async def machine_speed(url: str) -> dict[str, float]:
    """How fast this machine is right now, so that runs on different days can be compared (this project's
    VM moves by 2-4x): the median of 5 timings of a fixed pure-Python loop (3,000,000 additions) and the
    median round trip of ``SELECT 1`` over 500 calls to the run's PostgreSQL."""
    loops = []
    for _ in range(5):
        t0 = time.perf_counter()
        total = 0
        for i in range(3_000_000):
            total += i
        loops.append((time.perf_counter() - t0) * 1000)
    conn = await asyncpg.connect(plain_url(url))
    try:
        trips = []
        for _ in range(550):
            t0 = time.perf_counter()
            await conn.fetchval("SELECT 1")
            trips.append((time.perf_counter() - t0) * 1000)
    finally:
        await conn.close()
    return {"python_loop_ms": statistics.median(loops), "select1_ms": statistics.median(trips[50:])}


def describe_speed(speed: Mapping[str, float]) -> str:
    return (
        f"machine now: a 3M-addition Python loop {speed['python_loop_ms']:.0f} ms, "
        f"a SELECT 1 round trip {speed['select1_ms']:.3f} ms (medians)"
    )


@contextlib.asynccontextmanager
async def bench_database(prefix: str, database_url: str = "") -> AsyncIterator[tuple[str, Path]]:
    """(database URL, temporary directory) for one benchmark run: ``database_url`` if given, else an
    embedded PostgreSQL in the new temporary directory with a database ``ctxmem_bench``. The directory
    (and the embedded server) are removed at the end."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    server = None
    try:
        if database_url:
            url = database_url
        else:
            server = start_embedded(tmp / "pg")
            await ensure_database(server.get_uri(), "ctxmem_bench")
            url = server.get_uri("ctxmem_bench")
        yield url, tmp
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def fill(
    rows: Sequence[Mapping[str, Any]],
    question: str,
    budget: int,
    count: Callable[[str], int],
    scores: Mapping[str, float] | None = None,
) -> set[str]:
    """Ids of the stored turns that fit the budget at L0 (each at its stored ``token_cost`` plus the window's
    per-line overhead), after the question and the two section headings: the newest first (a sliding window:
    stops at the first turn that does not fit), or, given relevance scores, the most relevant first (ties and
    unscored turns by recency; a turn that does not fit is skipped and filling goes on)."""
    left = budget - count(f"## Background\n\n## Latest input\n{question}\n") - 2
    if scores is None:
        order = sorted(rows, key=lambda r: (r["observed_at"], r["id"]), reverse=True)
    else:
        order = sorted(rows, key=lambda r: (scores.get(str(r["id"]), 0.0), r["observed_at"], r["id"]), reverse=True)
    kept: set[str] = set()
    for r in order:
        cost = r["token_cost"] + line_overhead(r["content"])
        if cost > left:
            if scores is None:
                break
            continue
        left -= cost
        kept.add(str(r["id"]))
    return kept


def evidence_outcome(
    turns: Sequence[str], placed: Mapping[str, int], whole: Collection[str], item_of: Mapping[str, str]
) -> dict[str, Any]:
    """How one question's evidence fared in one window (or baseline): ``turns`` are the question's turn ids,
    ``item_of`` maps them to item ids, ``placed`` maps item id → level for the items the window placed and
    ``whole`` holds the item ids whose whole text is in it. Answered: every evidence turn whole; reached:
    every one placed at any level."""
    items = [item_of[t] for t in turns]
    return {
        "answered": all(i in whole for i in items),
        "reached": all(i in placed for i in items),
        "levels": {t: placed.get(item_of[t]) for t in turns},
        "text": len(whole),
        "placed": len(placed),
    }


def share(results: Iterable[Mapping[str, Any]], key: str, field: str = "kind", value: Any = None) -> tuple[int, int]:
    """(how many have ``key`` true, how many) among ``results``, or among those whose ``field`` is ``value``."""
    sel = [r for r in results if value is None or r[field] == value]
    return sum(1 for r in sel if r[key]), len(sel)


async def index_and_read(db: Database, settings: Settings, tenant: str) -> tuple[VectorRecall | None, int, list[Any]]:
    """Apply the vector outbox with the app's own worker, then read back the tenant's stored items (id,
    user_id, observed_at, token_cost, content): the vector stack, the points indexed, the rows."""
    recall = await build_recall(db, settings)
    indexed = await recall.worker.drain() if recall is not None else 0
    async with db.engine.connect() as conn:
        pending = (await conn.execute(sql("SELECT count(*) FROM vector_outbox"))).scalar_one()
        found = await conn.execute(
            sql(
                "SELECT id, user_id, observed_at, token_cost, content FROM context_item "
                "WHERE tenant_id = :t AND status = 'available'"
            ),
            {"t": tenant},
        )
        rows = list(found.mappings().all())
        # Statistics, as autovacuum would gather them within a minute of a bulk load: without them the
        # planner takes a just-loaded table for empty, and a statement's generic plan, made on its first
        # run, keeps that choice until the next ANALYZE (the neighbours lookup: 160 ms instead of 3).
        await conn.execute(sql("ANALYZE"))
        await conn.commit()
    if pending:
        print(f"warning: {pending} vector outbox rows could not be applied", file=sys.stderr)
    return recall, indexed, rows


async def eval_tenant(
    url: str, tmp: Path, *, embedder: str | None, vector_backend: str | None, prefix: str
) -> tuple[Settings, Database, Any, str, Any]:
    """What an eval runs against: settings on the run's database (with the embedder and vector backend
    asked for), the migrated database, the tokenizer, a new tenant and an agent principal of it."""
    overrides: dict[str, Any] = {"database_url": url, "data_dir": tmp}
    if embedder:
        overrides["embedder"] = embedder
    if vector_backend:
        overrides["vector_backend"] = vector_backend
    settings = Settings(**overrides)
    db = create_database(url, settings)
    await migrate.upgrade(db.engine)
    tokenizer = build_tokenizer(settings.tokens.tokenizer, cache_dir=settings.resolved_tokenizer_cache_dir)
    tenant = f"{prefix}-{secrets.token_hex(3)}"
    async with session_scope(db) as s:
        key = await create_key(s, tenant_id=tenant, role="agent", name=None, now=Clock().now(), actor="bench")
    return settings, db, tokenizer, tenant, Principal(tenant_id=tenant, key_id=key.id, role="agent")


async def write_and_close(
    result: Mapping[str, Any], path: str | Path, recall: VectorRecall | None, db: Database
) -> Path:
    """An eval's end: its result as JSON at ``path`` (parents made), then the vector index and database closed."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    if recall is not None:
        await recall.index.close()
    await db.dispose()
    return out
