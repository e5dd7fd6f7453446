"""Window assembly, service side: fetch rows and the effective profile, turn them into plain elements,
call the pure pipeline in ``scoring.window``, and shape the response. No policy lives here."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from schemas.items import ItemCreate
from schemas.windows import WindowRequest
from scoring import history
from scoring.compress import assemble_levels, derive_levels
from scoring.conflicts import normalize_value
from scoring.items import AUTHORITY_RANK
from scoring.profile import EffectiveProfile, effective_profile
from scoring.scopes import ScopeContext, Scoped, effective
from scoring.window import BudgetTooSmall as TooSmall
from scoring.window import Element, assemble
from service.auth.service import Permission
from service.context import RequestContext
from service.errors import ServiceError, ValidationFailed
from service.items.service import create_items
from service.profiles.service import _pure as pure_entry
from service.settings import Settings
from service.tokenizer import Tokenizer
from service.windows import repository


class BudgetTooSmallError(ServiceError):
    status, slug, title = 422, "budget-too-small", "The pinned content alone does not fit the budget"


class HistoryInvalid(ValidationFailed):
    slug, title = "history-invalid", "The messages are not a well-formed chat history"


_WORD = re.compile(r"[a-z0-9]{3,}|[\u3040-\u30ff\u3400-\u9fff]")


def _terms(text: str) -> frozenset[str]:
    """Lowercased words of 3+ letters and single CJK characters (so Chinese queries match too)."""
    return frozenset(_WORD.findall(text.lower()))


def counter(tokenizer: Tokenizer) -> Callable[[str], int]:
    """A memoised count: profile lines, headers and repeated history messages are counted once."""

    @lru_cache(maxsize=65_536)
    def count(text: str) -> int:
        return tokenizer.count(text)

    return count


_COUNTERS: dict[int, Callable[[str], int]] = {}


def cached_counter(tokenizer: Tokenizer) -> Callable[[str], int]:
    key = id(tokenizer)
    if key not in _COUNTERS:
        _COUNTERS[key] = counter(tokenizer)
    return _COUNTERS[key]


def budget_of(req: WindowRequest, settings: Settings) -> int:
    if req.max_tokens is not None:
        return req.max_tokens
    assert req.context_limit is not None
    watermark = req.watermark if req.watermark is not None else settings.window_watermark
    return min(req.context_limit - req.reserve_tokens, int(watermark * req.context_limit))


def _item_levels(row: Any, user_id: str, count: Callable[[str], int]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if row["level_texts"] is not None and row["level_tokens"] is not None:
        return (row["content"], *row["level_texts"]), (row["token_cost"], *row["level_tokens"])
    derived = derive_levels(
        item_id=str(row["id"]),
        user_id=user_id,
        item_type=row["type"],
        content=row["content"],
        key=row["key"],
        value=row["value"],
        variants=row["variants"],
        token_cost=row["token_cost"],
    )
    texts, tokens = assemble_levels(row["content"], row["token_cost"], derived, [count(t) for t in derived])
    return tuple(texts), tuple(tokens)


def _fixed(text: str, count: Callable[[str], int]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    n = count(text)
    return (text,) * 5, (n,) * 5


def _section_of(row: Any) -> tuple[str, bool, str]:
    """(section, pinned, reason) of an item by type, status, authority and scope (DESIGN §3.6 steps 2-3)."""
    t = row["type"]
    if t == "rule":
        if row["authority"] == "system":
            return "rules", True, "pinned: system rule"
        return "rules", False, "rule"
    if t == "constraint":
        return ("constraints", True, "pinned: hard constraint") if row["hard"] else ("constraints", False, "constraint")
    if t == "goal":
        return "goal", False, "goal"
    if t == "plan":
        return "plan", False, "plan"
    if row["status"] == "missing":
        return "plan", False, "open question (status missing)"
    if row["status"] == "verified":
        return "facts", True, "pinned: verified"
    if t == "decision":
        return "facts", True, "pinned: decision"
    if t == "tool_result":
        return "tool_results", False, "fresh tool result"
    if t == "summary":
        return "summaries", False, "summary"
    if row["scope"] in ("step", "stage"):
        return "evidence", False, "evidence for this step"
    if row["authority"] in ("system", "user") and t in ("fact", "preference", "entity"):
        return "facts", False, "user-stated"
    return "background", False, "background"


async def build_window(ctx: RequestContext, user_id: str, req: WindowRequest) -> dict[str, Any]:
    principal, settings = ctx.principal, ctx.settings
    principal.require(Permission.ITEMS_READ)
    if req.archive_dropped:
        principal.require(Permission.ITEMS_WRITE)
    count = cached_counter(ctx.tokenizer)
    budget = budget_of(req, settings)

    raw_messages = [m.model_dump(exclude_none=True) for m in req.messages]
    try:
        history.validate(raw_messages)
    except history.HistoryError as exc:
        raise HistoryInvalid(str(exc), index=exc.index) from exc
    message_tokens = [history.message_tokens(m, count) for m in raw_messages]
    units = history.units(raw_messages, message_tokens)
    tools_tokens = (
        count(json.dumps(req.tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False)) if req.tools else 0
    )

    refs = {"session": req.session_id, "task": req.task_id, "stage": req.stage_id, "step": req.step_id}
    rows = await repository.window_items(
        ctx.session, tenant_id=principal.tenant_id, user_id=user_id, refs=refs, domains=req.domains
    )
    entry_rows = await repository.window_entries(ctx.session, tenant_id=principal.tenant_id, user_id=user_id)

    warnings: list[str] = []
    omitted: list[dict[str, str]] = []
    live = []
    for r in rows:
        if r["expires_at"] is not None and r["expires_at"] <= ctx.now:
            if r["type"] == "tool_result":
                warnings.append(f"stale tool result {r['id']} excluded (expired {r['expires_at'].isoformat()})")
                omitted.append({"id": str(r["id"]), "reason": "stale tool result (past expires_at)"})
            continue
        live.append(r)
    scope_ctx = ScopeContext(session_id=req.session_id, task_id=req.task_id, stage_id=req.stage_id, step_id=req.step_id)
    chosen = effective([Scoped(str(r["id"]), r["key"], r["scope"], r["scope_ref"]) for r in live], scope_ctx)
    overridden_by = {o: w for w, os in chosen.items() for o in os}
    for o, w in sorted(overridden_by.items()):
        omitted.append({"id": o, "reason": f"overridden inside this scope by {w}"})
    live = [r for r in live if str(r["id"]) in chosen]

    profile = effective_profile(
        [pure_entry(e) for e in entry_rows], session_id=req.session_id, domains=req.domains or None
    )
    elements = _elements(req, user_id, live, profile, count)
    outcome = assemble(elements=elements, units=units, budget=budget, tools_tokens=tools_tokens, count=count)
    if isinstance(outcome, TooSmall):
        raise BudgetTooSmallError(
            f"pinned content needs {outcome.required} tokens; the budget is {outcome.budget}",
            required=outcome.required,
            budget=outcome.budget,
        )

    archived_id = None
    dropped_idx = sorted(set(range(len(raw_messages))) - set(outcome.kept_messages))
    if req.archive_dropped and dropped_idx:
        archived_id = await _archive(ctx, user_id, req, [raw_messages[i] for i in dropped_idx])

    omitted += [{"id": i, "reason": r} for i, r in outcome.omitted]
    # Changes when any applicable item or profile entry is added, removed or updated.
    mix = 0
    for r in rows:
        mix ^= r["id"].int
    for e in entry_rows:
        mix ^= e["id"].int
    stamp = max((r["updated_at"] for r in (*rows, *entry_rows)), default=None)
    state = hashlib.sha256(f"{len(rows)}:{len(entry_rows)}:{mix:x}:{stamp}".encode())
    # Plain data, serialised once by the endpoint: the hot path skips model validation of ~1,000 items.
    # Its shape is WindowResponse (tests validate responses against it).
    sections = [
        {
            "id": s.id,
            "title": s.title,
            "tokens": s.tokens,
            "items": [{"id": p.id, "level": p.level, "tokens": p.tokens, "reason": p.reason} for p in s.items],
        }
        for s in outcome.sections
    ]
    return {
        "mode": outcome.mode,
        "text": outcome.text,
        "sections": sections,
        "messages": [raw_messages[i] for i in outcome.kept_messages],
        "omitted": omitted,
        "warnings": warnings,
        "tokens": {
            "budget": budget,
            "used": outcome.used,
            "pinned": outcome.pinned_tokens,
            "text": outcome.text_tokens,
            "messages": outcome.messages_tokens,
            "tools": tools_tokens,
            "sections": {s["id"]: s["tokens"] for s in sections},
        },
        "prefix_tokens": outcome.prefix_tokens,
        "prefix_hash": outcome.prefix_hash,
        "state_version": "sv1:" + state.hexdigest()[:24],
        "archived_item_id": archived_id,
    }


def _elements(
    req: WindowRequest, user_id: str, rows: Sequence[Any], profile: EffectiveProfile, count: Callable[[str], int]
) -> list[Element]:
    out: list[Element] = []
    pinned_norm: dict[str, str] = {}

    def add_fixed(
        eid: str, section: str, text: str, reason: str, *, order: tuple[Any, ...] = (), verbatim: bool = False
    ) -> None:
        texts, tokens = _fixed(text, count)
        out.append(Element(eid, section, texts, tokens, pinned=True, reason=reason, order=order, verbatim=verbatim))
        pinned_norm.setdefault(normalize_value(None, text), eid)

    if req.goal:
        add_fixed("request:goal", "goal", req.goal, "pinned: goal of this request")
    if req.plan:
        add_fixed("request:plan", "plan", req.plan, "pinned: plan of this request")
    add_fixed("request:input", "input", req.input, "pinned: latest input", verbatim=True)

    # The newest goal / plan item is pinned when the request brings none of its own.
    latest: dict[str, Any] = {}
    for r in rows:
        if r["type"] in ("goal", "plan") and r["status"] != "missing":
            latest[r["type"]] = r
    pin_latest = {str(r["id"]) for t, r in latest.items() if getattr(req, t) is None}

    query_terms = sorted(_terms(req.query or req.input))
    loose: list[tuple[Any, str, str]] = []
    for r in rows:
        section, pinned, reason = _section_of(r)
        rid = str(r["id"])
        if rid in pin_latest:
            pinned, reason = True, f"pinned: current {r['type']}"
        if pinned:
            add_fixed(rid, section, r["content"], reason, order=(r["observed_at"], rid))
        else:
            loose.append((r, section, reason))

    longest_pinned = 2 * max((len(e.texts[0]) for e in out if e.pinned), default=0) + 16
    # Related items share a level: connected components over related_ids among the loose items.
    loose_ids = {str(r["id"]) for r, _, _ in loose}
    parent: dict[str, str] = {i: i for i in loose_ids}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r, _, _ in loose:
        for rel in r["related_ids"] or ():
            a, b = find(str(r["id"])), find(str(rel)) if str(rel) in loose_ids else None
            if b is not None and a != b:
                parent[max(a, b)] = min(a, b)
    sizes: dict[str, int] = {}
    for i in loose_ids:
        sizes[find(i)] = sizes.get(find(i), 0) + 1

    for r, section, reason in loose:
        rid = str(r["id"])
        texts, tokens = _item_levels(r, user_id, count)
        if query_terms:
            lowered = r["content"].lower()
            relevance = sum(1 for term in query_terms if term in lowered)
        else:
            relevance = 0
        root = find(rid)
        out.append(
            Element(
                id=rid,
                section=section,
                texts=texts,
                tokens=tokens,
                reason=reason,
                importance=(AUTHORITY_RANK[r["authority"]], r["confidence"], r["observed_at"], relevance),
                order=(r["observed_at"], rid),
                group=root if sizes[root] > 1 else None,
                repeats=pinned_norm.get(normalize_value(None, r["content"]))
                if pinned_norm and len(r["content"]) <= longest_pinned
                else None,
            )
        )

    for eff in profile.entries:
        e = eff.entry
        where = e.domain or "global"
        stated = " (stated this session)" if eff.why == "current-statement" else ""
        line = f"[{where}] {e.dimension}.{e.key}: {_phrase(e.dimension, e.polarity, e.value)}{stated}"
        index = f"[profile {e.id}: {e.dimension}.{e.key} — GET /v1/users/{user_id}/profile/{e.id}]"
        n_line, n_index = count(line), count(index)
        out.append(
            Element(
                id=f"profile:{e.id}",
                section="profile",
                texts=(line, line, line, line, index),
                tokens=(n_line, n_line, n_line, n_line, min(n_line, n_index)),
                reason=f"profile ({eff.why})",
                importance=(4, 1.0, e.last_evidence_at, e.score),
                order=(where, e.dimension, e.key, e.value, e.id),
            )
        )
    for eff in profile.constraints:
        e = eff.entry
        where = f" in {e.domain}" if e.domain else ""
        add_fixed(
            f"profile:{e.id}",
            "constraints",
            f"Do not recommend {e.value}{where} ({e.dimension}.{e.key}): the user confirmed they dislike it.",
            "pinned: confirmed dislike from the profile",
            order=(e.domain or "", e.dimension, e.key, e.value),
        )
    for h in profile.hints:
        where = h.domain or "global"
        line = f"(tentative, {h.tier}, score {h.score:g}) [{where}] {h.dimension}.{h.key}: {h.polarity} {h.value}"
        n = count(line)
        out.append(
            Element(
                id=f"profile:{h.id}",
                section="hints",
                texts=(line,) * 5,
                tokens=(n,) * 5,
                reason="candidate hint (tentative)",
                importance=(0, 0.0, h.last_evidence_at, h.score),
                order=(-h.score, h.id),
            )
        )
    return out


def _phrase(dimension: str, polarity: str, value: str) -> str:
    if dimension == "preference":
        return {"like": f"likes {value}", "dislike": f"dislikes {value}"}.get(polarity, value)
    return f"not {value}" if polarity == "dislike" else value


def _transcript(messages: Sequence[dict[str, Any]]) -> str:
    lines = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        calls = ", ".join(
            f"{c['function']['name']}({c['function'].get('arguments', '')})" for c in m.get("tool_calls") or ()
        )
        who = m["role"] + (f"[{m['tool_call_id']}]" if m.get("tool_call_id") else "")
        lines.append(f"{who}: {content or ''}{' -> ' + calls if calls else ''}".strip())
    return "\n".join(lines)


async def _archive(ctx: RequestContext, user_id: str, req: WindowRequest, dropped: Sequence[dict[str, Any]]) -> Any:
    """Keep the history the window dropped as one episode item, so it can be recalled later."""
    text = _transcript(dropped)
    if len(text) > ctx.settings.max_content_chars:
        text = text[: ctx.settings.max_content_chars - 40].rstrip() + " …[truncated]"
    item = ItemCreate(
        type="episode",
        content=text,
        source="summary",
        scope="session" if req.session_id else "user",
        session_id=req.session_id,
        task_id=req.task_id,
    )
    (stored,) = await create_items(ctx, user_id, [item], batch=False)
    return stored.id
