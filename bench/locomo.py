"""LoCoMo eval: how often the context window holds the turns that answer a question of the public LoCoMo
benchmark (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024), beside
two baselines computed here over the same stored rows: plain BM25 and a sliding window.

    python -m bench.locomo --data PATH [--budgets 600,900,1900] [--embedder hashing|wordllama|minilm]
                           [--database-url URL] [--limit-conversations N]

``--data`` is a directory of per-conversation JSON files (each one conversation: a dict with the
conversation's fields, either under ``conversation`` as in ``locomo10.json`` or at the top level), or
``locomo10.json`` itself (a JSON list of such dicts, each with a ``sample_id``), or ``locomo10.zip``.

Storing: each conversation is one user (``locomo-<sample id>``, the file name for a file without one); every
turn is one ``episode`` item, written through the real item service in batches of at most 1,000, with content
``"<speaker>: <text>"`` plus `` [shares a photo: <caption>]`` when the turn has a ``blip_caption``; scope
``user`` (a question may be answered by any session), ``session_id`` the session's key (``session_N``) as
provenance, source ``summary`` (as in ``bench.recall_eval``), ``observed_at`` the session's date and time
(UTC), its turns a minute apart in order. The vector outbox is then applied with the app's own worker.

Questions: category 5 (adversarial: no answer in the conversation) is left out. Evidence ids that name no turn
(the data has a few malformed ones) are dropped; a question left with no evidence is left out. How many, and
why, is printed. Categories (as numbered in the data): 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.

Measure ("whole-turn evidence recall"): for each budget and question, ``build_window`` is called in process,
one session per call and rolled back, with the question as ``input`` and the budget as ``max_tokens``. A
question is answered when the whole content of every one of its evidence turns is a substring of the window's
``text``. The baselines are held to the same test, on the text they would render:

* BM25: Okapi BM25 over the conversation's turns (k1 = 1.2, b = 0.75, IDF ln(1 + (N - df + 0.5)/(df + 0.5)),
  tokens the lowercase ``\\w+`` runs, no stemming, no stop words), the question as the query; turns packed most
  relevant first at their whole text (stored ``token_cost`` plus the window's per-line overhead, after the
  question and the section headings, as ``bench.common.fill`` counts); a turn that does not fit is skipped;
* sliding window: the newest turns that fit the same budget (``bench.common.fill`` without scores).

Results are printed (stdout; progress on stderr) and written to ``bench/results/locomo.json``, with every
question's outcome: per budget, the level the window gave each evidence turn, or why it was omitted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
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
from service.windows.service import build_window

RESULTS = Path(__file__).parent / "results" / "locomo.json"
DEFAULT_BUDGETS = (600, 900, 1900)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL = 5
BATCH = 1000
METHODS = ("window", "bm25", "sliding")
LABELS = {"window": "window", "bm25": "BM25", "sliding": "sliding"}

_SESSION = re.compile(r"session_(\d+)")
# "1:56 pm on 8 May, 2023"
_DATE_TIME = re.compile(r"(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})", re.IGNORECASE)
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_WORD = re.compile(r"\w+")


# --- the data ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: str
    speaker: str
    text: str
    caption: str | None
    observed_at: datetime

    @property
    def content(self) -> str:
        photo = f" [shares a photo: {self.caption}]" if self.caption else ""
        return f"{self.speaker}: {self.text}{photo}"


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: Any
    category: int
    evidence: tuple[str, ...]
    dropped: tuple[str, ...] = ()  # evidence ids that name no turn


@dataclass
class Conversation:
    sample_id: str
    user_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]


@dataclass
class Dataset:
    conversations: list[Conversation]
    # Questions not asked: {"id", "category", "reason", "question", "evidence"}.
    left_out: list[dict[str, Any]] = field(default_factory=list)
    # Evidence ids that name no turn, of the questions of categories 1-4: {"question", "evidence"}.
    dropped_evidence: list[dict[str, str]] = field(default_factory=list)
    # Oddities worth a line in the report (sessions with a date but no turns).
    notes: list[str] = field(default_factory=list)


def parse_date_time(value: str) -> datetime:
    """A LoCoMo session date, ``"1:56 pm on 8 May, 2023"``, as an aware datetime in UTC."""
    m = _DATE_TIME.fullmatch(value.strip())
    if m is None or m[5].lower() not in _MONTHS:
        raise ValueError(f"not a LoCoMo date and time: {value!r}")
    hour, minute = int(m[1]), int(m[2])
    if not 1 <= hour <= 12:
        raise ValueError(f"not a 12-hour clock time: {value!r}")
    hour = hour % 12 + (12 if m[3].lower() == "p" else 0)
    return datetime(int(m[6]), _MONTHS.index(m[5].lower()) + 1, int(m[4]), hour, minute, tzinfo=UTC)


def _documents(path: Path) -> Iterator[tuple[str, Any]]:
    """(name, parsed JSON) of every JSON document under ``path``: a directory's ``*.json`` files (numeric names
    in numeric order), a zip's ``.json`` members, or one file."""
    if path.is_dir():
        files = sorted(
            path.glob("*.json"), key=lambda p: (not p.stem.isdigit(), int(p.stem) if p.stem.isdigit() else 0, p.stem)
        )
        for p in files:
            yield p.stem, json.loads(p.read_text(encoding="utf-8"))
    elif path.suffix.lower() == ".zip":
        with zipfile.ZipFile(path) as z:
            for name in sorted(z.namelist()):
                if name.lower().endswith(".json") and not name.startswith("__MACOSX/"):
                    yield Path(name).stem, json.loads(z.read(name).decode("utf-8"))
    else:
        yield path.stem, json.loads(path.read_text(encoding="utf-8"))


def _samples(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(sample id, sample) for every conversation under ``path``."""
    for name, doc in _documents(path):
        samples = doc if isinstance(doc, list) else [doc]
        for i, sample in enumerate(samples):
            if not isinstance(sample, dict) or "qa" not in sample:
                raise SystemExit(f"{path}: {name} item {i} is not a LoCoMo sample (a dict with 'qa')")
            default = name if len(samples) == 1 else f"{name}-{i}"
            yield str(sample.get("sample_id") or default), sample


def _conversation(sample_id: str, sample: dict[str, Any], data: Dataset) -> Conversation:
    conv = sample.get("conversation", sample)
    sessions = sorted(
        (int(m[1]), key) for key in conv if (m := _SESSION.fullmatch(key)) and isinstance(conv[key], list)
    )
    turns: list[Turn] = []
    for _, key in sessions:
        if not conv[key]:
            data.notes.append(f"{sample_id}: {key} has no turns")
            continue
        when = conv.get(f"{key}_date_time")
        if not when:
            raise SystemExit(f"{sample_id}: {key} has turns but no {key}_date_time")
        start = parse_date_time(when)
        for i, t in enumerate(conv[key]):
            turns.append(
                Turn(
                    dia_id=t["dia_id"],
                    session=key,
                    speaker=t["speaker"],
                    text=t["text"],
                    caption=t.get("blip_caption") or None,
                    observed_at=start + timedelta(minutes=i),
                )
            )
    with_turns = {key for _, key in sessions}
    dated_only = sorted(
        int(m[1])
        for key in conv
        if (m := re.fullmatch(r"session_(\d+)_date_time", key)) and f"session_{m[1]}" not in with_turns
    )
    if dated_only:
        data.notes.append(
            f"{sample_id}: {len(dated_only)} sessions have a date and no turns "
            f"(session_{dated_only[0]}..session_{dated_only[-1]})"
        )
    ids = Counter(t.dia_id for t in turns)
    if len(ids) != len(turns):
        raise SystemExit(f"{sample_id}: repeated dia_id {[i for i, n in ids.items() if n > 1]}")

    questions: list[Question] = []
    for n, q in enumerate(sample["qa"], 1):
        qid = f"{sample_id}-q{n}"
        category = int(q["category"])
        listed = [str(e) for e in q.get("evidence") or []]
        evidence = tuple(dict.fromkeys(e for e in listed if e in ids))
        dropped = tuple(e for e in listed if e not in ids)
        reason = None
        if category == ADVERSARIAL:
            reason = "category 5 (adversarial)"
        elif category not in CATEGORIES:
            reason = f"unknown category {category}"
        else:
            data.dropped_evidence.extend({"question": qid, "evidence": e} for e in dropped)
            if not listed:
                reason = "no evidence listed"
            elif not evidence:
                reason = "no evidence id names a turn"
        if reason is not None:
            data.left_out.append(
                {"id": qid, "category": category, "reason": reason, "question": q["question"], "evidence": listed}
            )
            continue
        questions.append(Question(qid, q["question"], q.get("answer"), category, evidence, dropped))
    user_id = "locomo-" + re.sub(r"[^A-Za-z0-9._:@-]", "-", sample_id)
    return Conversation(sample_id, user_id, (conv["speaker_a"], conv["speaker_b"]), turns, questions)


def load(path: Path, limit: int | None = None) -> Dataset:
    """The conversations under ``path`` (the first ``limit``), with the questions to ask and those left out."""
    data = Dataset(conversations=[])
    for sample_id, sample in _samples(path):
        if limit is not None and len(data.conversations) >= limit:
            break
        data.conversations.append(_conversation(sample_id, sample, data))
    if not data.conversations:
        raise SystemExit(f"{path}: no LoCoMo conversations found")
    return data


# --- the BM25 baseline ------------------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    """BM25's tokens: the lowercase ``\\w+`` runs (no stemming, no stop words)."""
    return _WORD.findall(text.lower())


def bm25_scores(query: str, docs: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Okapi BM25 score of every document for ``query``: the sum over the query's distinct terms of
    IDF · tf · (k1 + 1) / (tf + k1 · (1 - b + b · len / avglen)), IDF = ln(1 + (N - df + 0.5) / (df + 0.5))."""
    if not docs:
        return []
    bags = [Counter(words(d)) for d in docs]
    lengths = [sum(bag.values()) for bag in bags]
    avg = sum(lengths) / len(docs) or 1.0
    terms = set(words(query))
    df = {t: sum(1 for bag in bags if t in bag) for t in terms}
    idf = {t: math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5)) for t in terms if df[t]}
    scores = []
    for bag, length in zip(bags, lengths, strict=True):
        norm = k1 * (1 - b + b * length / avg)
        scores.append(sum(w * bag[t] * (k1 + 1) / (bag[t] + norm) for t, w in idf.items() if t in bag))
    return scores


# --- the run ----------------------------------------------------------------------------------------------------


def code_version() -> dict[str, Any] | None:
    """The commit the code under test is at, and which of its files differ from it (the figures describe the
    working tree, committed or not); ``None`` outside a git checkout. Read-only: takes no index lock."""
    root = Path(__file__).resolve().parents[1]

    def git(*argv: str) -> str:
        done = subprocess.run(
            ["git", "--no-optional-locks", *argv], cwd=root, capture_output=True, text=True, check=True, timeout=30
        )
        return done.stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        changed = git("status", "--porcelain", "--", "service", "scoring", "schemas", "bench").splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "changed": [line.strip() for line in changed]}


def _chunks(seq: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def _rendered(kept: set[str], content_of: Mapping[str, str]) -> str:
    return "".join(f"- {content_of[i]}\n" for i in sorted(kept))


def _baseline(q: Question, kept: set[str], content_of: Mapping[str, str], item_of: Mapping[str, str]) -> dict[str, Any]:
    text = _rendered(kept, content_of)
    whole = kept | {item_of[e] for e in q.evidence if content_of[item_of[e]] in text}
    out = evidence_outcome(q.evidence, {i: 0 for i in kept}, whole, item_of)
    out["kept"] = all(item_of[e] in kept for e in q.evidence)
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _table(results: dict[int, dict[str, list[dict[str, Any]]]], budgets: Sequence[int]) -> dict[str, Any]:
    cols: list[int | None] = [None, *CATEGORIES]
    heads = ["all"] + [f"{c} {CATEGORIES[c]}" for c in CATEGORIES]
    header = f"{'budget':>6}  {'':<15}" + "".join(f"{h:>17}" for h in heads)
    print(header)
    print("-" * len(header))
    out: dict[str, Any] = {}
    for budget in budgets:
        block: dict[str, Any] = {}
        for method in METHODS:
            cells = []
            block[method] = {}
            for c in cols:
                hit, n = share(results[budget][method], "answered", "category", c)
                key = "all" if c is None else CATEGORIES[c]
                block[method][key] = {"answered": hit, "questions": n, "share": hit / n if n else None}
                cells.append(f"{hit / n:>7.1%} {hit:>4}/{n:<4}" if n else f"{'-':>17}")
            first = f"{budget:>6}" if method == "window" else " " * 6
            print(f"{first}  {LABELS[method]:<15}" + "".join(cells))
        for base in ("bm25", "sliding"):
            name = f"window/{base}"
            block[name] = {}
            cells = []
            for c in cols:
                key = "all" if c is None else CATEGORIES[c]
                r = _ratio(block["window"][key]["share"], block[base][key]["share"])
                block[name][key] = r
                cells.append(f"{r:>17.2f}" if r is not None else f"{'-':>17}")
            print(f"{'':>6}  {'window÷' + LABELS[base]:<15}" + "".join(cells))
        out[str(budget)] = block
    return out


def _per_conversation(
    results: dict[int, dict[str, list[dict[str, Any]]]], budgets: Sequence[int], conversation_of: Sequence[str]
) -> dict[str, Any]:
    """Per budget and conversation: questions, answered by the window and by BM25, and the ratio; printed, so
    the spread between conversations is seen beside the total."""
    out: dict[str, Any] = {}
    names = sorted(set(conversation_of), key=lambda c: (len(c), c))
    print()
    print("per conversation: window answered / questions (share), BM25 answered, window÷BM25")
    print("budget" + "".join(f"  {c:>24}" for c in names))
    for budget in budgets:
        block: dict[str, Any] = {}
        cells = []
        for c in names:
            rows = [i for i, conv in enumerate(conversation_of) if conv == c]
            w = sum(1 for i in rows if results[budget]["window"][i]["answered"])
            b = sum(1 for i in rows if results[budget]["bm25"][i]["answered"])
            block[c] = {"questions": len(rows), "window": w, "bm25": b, "ratio": _ratio(w, b)}
            ratio = f"{w / b:.2f}" if b else "-"
            cells.append(f"  {f'{w}/{len(rows)} ({w / len(rows):.0%}) {b} {ratio}':>24}")
        print(f"{budget:>6}" + "".join(cells))
        out[str(budget)] = block
    return out


@dataclass(frozen=True)
class Sweep:
    """``--sweep group.name=v1,v2,…``: one setting, the values to run the window's questions under."""

    group: str
    name: str
    values: list[Any]

    @classmethod
    def parse(cls, text: str) -> Sweep:
        target, _, values = text.partition("=")
        group, _, name = target.strip().partition(".")
        if not group or not name or not values.strip():
            raise SystemExit(
                "--sweep: group.name=v1,v2,… (a setting of docs/configuration.md, e.g. recall.session_share=0,0.25)"
            )
        return cls(group, name, [json.loads(v) for v in values.split(",")])

    def settings(self, settings: Any, value: Any) -> Any:
        group = getattr(settings, self.group, None)
        if group is None or self.name not in type(group).model_fields:
            raise SystemExit(f"--sweep: no setting {self.group}.{self.name}")
        changed = type(group).model_validate(group.model_dump() | {self.name: value})
        return settings.model_copy(update={self.group: changed})


def leave_one_out(answered: Mapping[Any, Mapping[str, int]], default: Any) -> dict[str, Any]:
    """For each conversation, the value that answers most questions of the *other* conversations (ties: the
    default, then the first listed), and what that value answers of the one left out: a constant chosen on the
    others, judged on data it was not chosen on. ``answered``: value → conversation → questions answered."""
    values = list(answered)
    conversations = sorted({c for per in answered.values() for c in per}, key=lambda c: (len(c), c))
    out: dict[str, Any] = {"per_conversation": {}, "total": 0, "default_total": 0}
    for held in conversations:

        def others(v: Any, held: str = held) -> int:
            return sum(n for c, n in answered[v].items() if c != held)

        best = max(values, key=lambda v: (others(v), v == default, -values.index(v)))
        out["per_conversation"][held] = {"chosen": best, "answered": answered[best][held]}
        out["total"] += answered[best][held]
        out["default_total"] += answered[default][held] if default in answered else 0
    return out


async def main(args: argparse.Namespace) -> int:
    budgets = [int(b) for b in str(args.budgets).split(",") if b.strip()]
    if not budgets or min(budgets) < 1:
        raise SystemExit("--budgets: a comma-separated list of positive token counts")
    data = load(Path(args.data), args.limit_conversations)
    version = code_version()
    questions = [(conv, q) for conv in data.conversations for q in conv.questions]
    if not questions:
        raise SystemExit("no questions left to ask")
    async with bench_database("ctxmem-locomo-", args.database_url) as (url, tmp):
        settings, db, tokenizer, tenant, principal = await eval_tenant(
            url, tmp, embedder=args.embedder, vector_backend=args.vector_backend, prefix="bench-locomo"
        )
        caches = ProcessCaches()  # the process's caches, as the app's lifespan builds them

        # 1. Every turn through the real item service.
        t0 = time.perf_counter()
        item_of: dict[str, dict[str, str]] = {}
        size = min(BATCH, settings.limits.max_batch_items)
        for conv in data.conversations:
            ids = item_of.setdefault(conv.sample_id, {})
            for chunk in _chunks(conv.turns, size):
                items = [
                    ItemCreate(
                        type="episode",
                        content=t.content,
                        source="summary",
                        scope="user",
                        session_id=t.session,
                        observed_at=t.observed_at,
                    )
                    for t in chunk
                ]
                now = Clock().now()
                async with session_scope(db) as s:
                    ctx = RequestContext(s, principal, settings, tokenizer, now, caches=caches)
                    stored = await create_items(ctx, user_id=conv.user_id, items=items, batch=True)
                ids.update({t.dia_id: str(r.id) for t, r in zip(chunk, stored, strict=True)})
            print(f"stored {conv.sample_id}: {len(conv.turns)} turns", file=sys.stderr)
        store_s = time.perf_counter() - t0

        # 2. The vector outbox, applied by the app's worker.
        t0 = time.perf_counter()
        recall, indexed, rows = await index_and_read(db, settings, tenant)
        index_s = time.perf_counter() - t0
        print(f"indexed {indexed} points in {index_s:.1f} s", file=sys.stderr)
        rows_of: dict[str, list[Any]] = {}
        for r in rows:
            rows_of.setdefault(r["user_id"], []).append(r)
        content_of = {str(r["id"]): r["content"] for r in rows}
        for conv in data.conversations:
            stored_n = len(rows_of.get(conv.user_id, []))
            if stored_n != len(conv.turns):
                raise SystemExit(f"{conv.sample_id}: {len(conv.turns)} turns written, {stored_n} available rows")

        # 3. BM25 over each conversation's stored turns, once per question (it does not depend on the budget).
        t0 = time.perf_counter()
        bm25: dict[str, dict[str, float]] = {}
        bm25_rank: dict[str, dict[str, int]] = {}
        for conv in data.conversations:
            conv_rows = rows_of[conv.user_id]
            turn_of = {v: k for k, v in item_of[conv.sample_id].items()}
            docs = [r["content"] for r in conv_rows]
            for q in conv.questions:
                scores = {str(r["id"]): s for r, s in zip(conv_rows, bm25_scores(q.question, docs), strict=True)}
                bm25[q.id] = scores
                order = sorted(
                    conv_rows, key=lambda r, sc=scores: (sc[str(r["id"])], r["observed_at"], r["id"]), reverse=True
                )
                ranks = {turn_of[str(r["id"])]: n for n, r in enumerate(order, 1)}
                bm25_rank[q.id] = {e: ranks[e] for e in q.evidence}
        bm25_s = time.perf_counter() - t0

        # 4. For each budget and question: the window, BM25 and the sliding window.
        count = tokenizer.count
        results: dict[int, dict[str, list[dict[str, Any]]]] = {b: {m: [] for m in METHODS} for b in budgets}
        window_ms: dict[int, list[float]] = {b: [] for b in budgets}
        warnings: Counter[str] = Counter()

        async def window_of(conv: Conversation, q: Question, budget: int, settings: Any, caches: ProcessCaches) -> Any:
            req = WindowRequest(input=q.question, max_tokens=budget, detail="full")  # why evidence was left out
            async with db.sessionmaker() as s:
                ctx = RequestContext(s, principal, settings, tokenizer, Clock().now(), recall, caches=caches)
                t0 = time.perf_counter()
                w = await build_window(ctx, user_id=conv.user_id, req=req)
                ms = (time.perf_counter() - t0) * 1000
                await s.rollback()
            return w, ms

        def whole_turns(w: Any, q: Question, ids: Mapping[str, str]) -> tuple[dict[str, int], set[str]]:
            level = {p["id"]: p["level"] for sec in w["sections"] for p in sec["items"]}
            turns = set(ids.values())
            placed = {i: lv for i, lv in level.items() if i in turns}
            text = w["text"]
            whole = {i for i in placed if content_of[i] in text} | {
                ids[e] for e in q.evidence if content_of[ids[e]] in text
            }
            return placed, whole

        done, total = 0, len(budgets) * len(questions)
        for budget in budgets:
            for conv, q in questions:
                ids = item_of[conv.sample_id]
                conv_rows = rows_of[conv.user_id]
                w, ms = await window_of(conv, q, budget, settings, caches)
                window_ms[budget].append(ms)
                for msg in w["warnings"]:
                    warnings[msg] += 1
                omitted = {o["id"]: o["reason"] for o in w["omitted"]}
                placed, whole = whole_turns(w, q, ids)
                base = {"id": q.id, "category": q.category}
                out = base | evidence_outcome(q.evidence, placed, whole, ids)
                out["evidence"] = {
                    e: {
                        "level": placed.get(ids[e]),
                        "placed": ids[e] in placed,
                        "omitted": omitted.get(ids[e]),
                        "whole": ids[e] in whole,
                    }
                    for e in q.evidence
                }
                out |= {"window_mode": w["mode"], "used": w["tokens"]["used"], "ms": window_ms[budget][-1]}
                results[budget]["window"].append(out)
                kept = fill(conv_rows, q.question, budget, count, bm25[q.id])
                results[budget]["bm25"].append(base | _baseline(q, kept, content_of, ids))
                kept = fill(conv_rows, q.question, budget, count)
                results[budget]["sliding"].append(base | _baseline(q, kept, content_of, ids))
                done += 1
                if done % 200 == 0 or done == total:
                    print(f"  {done}/{total} windows", file=sys.stderr)

        # 5. Report.
        cats = Counter(q.category for _, q in questions)
        reasons = Counter(x["reason"] for x in data.left_out)
        n_sessions = sum(len({t.session for t in c.turns}) for c in data.conversations)
        print(
            f"LoCoMo: {len(data.conversations)} conversations ({', '.join(c.sample_id for c in data.conversations)}), "
            f"{n_sessions} sessions, {len(rows)} turns stored as episode items in {store_s:.1f} s; "
            f"{len(questions)} questions asked ({', '.join(f'{c} {CATEGORIES[c]} {cats[c]}' for c in CATEGORIES)})"
        )
        print(
            f"left out {len(data.left_out)} questions: "
            + ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items(), key=lambda x: -x[1]))
        )
        if data.dropped_evidence:
            kept_with_drop = sum(1 for _, q in questions if q.dropped)
            print(
                f"dropped {len(data.dropped_evidence)} evidence ids that name no turn: "
                + ", ".join(f"{d['question']} {d['evidence']!r}" for d in data.dropped_evidence)
                + f" ({kept_with_drop} of those questions still asked, on their other evidence)"
            )
        for note in data.notes:
            print(f"note: {note}")
        if version is not None:
            changed = version["changed"]
            print(
                f"code: commit {version['commit'][:10]}"
                + (f", uncommitted: {' '.join(changed)}" if changed else ", clean")
            )
        print(
            f"tokenizer {settings.tokens.tokenizer}; embedder {settings.vectors.embedder}/"
            f"{settings.vectors.embedding_dim}, vector backend {settings.vectors.backend}, {indexed} points indexed in "
            f"{index_s:.1f} s; BM25 scored in {bm25_s:.1f} s"
        )
        print()
        print("whole-turn evidence recall: share of questions whose every evidence turn is whole in the text")
        table = _table(results, budgets)
        print(
            "BM25 = plain Okapi BM25 (k1 1.2, b 0.75) over the conversation's turns, packed most relevant first; "
            "sliding = the newest turns that fit"
        )
        modes: dict[str, Any] = {}
        for budget in budgets:
            res = results[budget]["window"]
            ms = window_ms[budget]
            modes[str(budget)] = dict(Counter(r["window_mode"] for r in res))
            reached, n = share(res, "reached", "category")
            print(
                f"  window at {budget}: modes {modes[str(budget)]}; {statistics.fmean(ms):.1f} ms per window "
                f"(p50 {statistics.median(ms):.1f}, max {max(ms):.1f}); {statistics.fmean(r['text'] for r in res):.1f} "
                f"turns whole, {statistics.fmean(r['placed'] for r in res):.1f} placed per window; every evidence "
                f"turn placed at some level {reached}/{n}"
            )
        for msg, n in sorted(warnings.items()):
            print(f"  warning x{n}: {msg}")
        conversation_of = [conv.sample_id for conv, _ in questions]
        per_conversation = _per_conversation(results, budgets, conversation_of)

        swept: dict[str, Any] | None = None
        if args.sweep:
            sweep = Sweep.parse(args.sweep)
            default = getattr(getattr(settings, sweep.group), sweep.name)
            values = sweep.values if default in sweep.values else [default, *sweep.values]
            print()
            print(f"sweep {sweep.group}.{sweep.name} (default {default}): window answered per conversation")
            swept = {"setting": f"{sweep.group}.{sweep.name}", "default": default, "values": values, "budgets": {}}
            for budget in budgets:
                answered: dict[Any, dict[str, int]] = {}
                for value in values:
                    # Its own process caches: the windows' state under one value is not another's.
                    variant, variant_caches = sweep.settings(settings, value), ProcessCaches()
                    per: Counter[str] = Counter({c: 0 for c in conversation_of})
                    for i, (conv, q) in enumerate(questions):
                        if value == default:
                            hit = results[budget]["window"][i]["answered"]
                        else:
                            w, _ = await window_of(conv, q, budget, variant, variant_caches)
                            ids = item_of[conv.sample_id]
                            placed, whole = whole_turns(w, q, ids)
                            hit = evidence_outcome(q.evidence, placed, whole, ids)["answered"]
                        per[conv.sample_id] += hit
                    answered[value] = dict(per)
                    row = " ".join(f"{c} {n:>3}" for c, n in sorted(per.items(), key=lambda x: (len(x[0]), x[0])))
                    print(f"  {budget:>5} {json.dumps(value):>8}: {sum(per.values()):>4}   {row}")
                loo = leave_one_out(answered, default)
                chosen = ", ".join(f"{c}: {v['chosen']}" for c, v in loo["per_conversation"].items())
                print(
                    f"  {budget:>5} leave-one-out: {loo['total']} answered (default {loo['default_total']}); "
                    f"chosen on the others: {chosen}"
                )
                swept["budgets"][str(budget)] = {
                    "answered": {json.dumps(v): a for v, a in answered.items()},
                    "leave_one_out": loo,
                }

        per_question = []
        for i, (conv, q) in enumerate(questions):
            entry: dict[str, Any] = {
                "id": q.id,
                "conversation": conv.sample_id,
                "category": q.category,
                "question": q.question,
                "answer": q.answer,
                "evidence": list(q.evidence),
                "dropped_evidence": list(q.dropped),
                "bm25_rank": bm25_rank[q.id],
            }
            for budget in budgets:
                entry[str(budget)] = {m: results[budget][m][i] for m in METHODS}
            per_question.append(entry)
        result = {
            "data": str(args.data),
            "code": version,
            "budgets": budgets,
            "tokenizer": settings.tokens.tokenizer,
            "embedder": settings.vectors.embedder,
            "embedding_dim": settings.vectors.embedding_dim,
            "vector_backend": settings.vectors.backend,
            "recall_mode": settings.recall.mode,
            "bm25": {"k1": 1.2, "b": 0.75, "tokens": "lowercase \\w+ runs", "idf": "ln(1 + (N - df + 0.5)/(df + 0.5))"},
            "conversations": [
                {"sample_id": c.sample_id, "user_id": c.user_id, "speakers": c.speakers, "turns": len(c.turns)}
                for c in data.conversations
            ],
            "items": len(rows),
            "points_indexed": indexed,
            "questions": len(questions),
            "categories": {CATEGORIES[c]: cats[c] for c in CATEGORIES},
            "left_out": data.left_out,
            "dropped_evidence": data.dropped_evidence,
            "notes": data.notes,
            "table": table,
            "per_conversation": per_conversation,
            "sweep": swept,
            "window_modes": modes,
            "window_ms": {
                str(b): {"mean": statistics.fmean(v), "p50": statistics.median(v), "max": max(v)}
                for b, v in window_ms.items()
            },
            "seconds": {"store": store_s, "index": index_s, "bm25": bm25_s},
            "warnings": dict(warnings),
            "per_question": per_question,
        }
        out_path = await write_and_close(result, args.output, recall, db)
        print(f"results: {out_path}", file=sys.stderr)
        return 0


def cli() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="a directory of per-conversation JSON files, locomo10.json or .zip")
    p.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)), help="max_tokens values, comma-separated")
    p.add_argument("--output", default=str(RESULTS))
    p.add_argument(
        "--embedder", choices=["hashing", "wordllama", "minilm", "http"], default=None, help="default: settings"
    )
    p.add_argument("--vector-backend", choices=["edge", "qdrant", "memory", "local"], default=None)
    p.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    p.add_argument(
        "--sweep",
        default=None,
        help="group.name=v1,v2,…: also run the window's questions under each value of one setting (e.g. "
        "recall.session_share=0,0.1,0.25,0.4), per conversation, with the value chosen leave-one-out",
    )
    p.add_argument("--database-url", default=os.environ.get("CTXMEM_BENCH_DATABASE_URL", ""))
    return asyncio.run(main(p.parse_args()))


if __name__ == "__main__":
    sys.exit(cli())
