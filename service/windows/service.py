"""Window assembly, service side: fetch rows and the effective profile, turn them into plain elements,
call the pure pipeline in ``scoring.window`` (its rules in ``scoring.window_policy``), and shape the
response. No policy lives here.

What the rows give (``state.UserState``) depends on the request only through the rows it selects, so it
is kept per process in ``ctx.caches.windows`` (service/caches.py) and reused for as long as one cheap query
(``repository.window_version``) shows the same rows in the same versions; a request then only adds its own
elements, the relevance of each item to its query, and the give-way steps its budget needs."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.windows import OMITTED_LISTED, WindowRequest
from scoring import history, prompts
from scoring.conflicts import normalize_value
from scoring.scopes import ScopeContext
from scoring.window import BudgetTooSmall as TooSmall
from scoring.window import Element, assemble_prepared, pinned_element
from scoring.window_policy import (
    Omission,
    Omitted,
    ValueModel,
    older_items_wanted,
    tool_results_in_history,
    window_budget,
)
from service.auth.principal import Permission
from service.caches import ProcessCaches
from service.context import RequestContext
from service.conversations import service as conversations
from service.db.selection import Selection
from service.errors import BudgetTooSmallError, HistoryInvalid
from service.recall import service as recall
from service.recall.repository import LexicalTerms, terms_args
from service.settings import Settings
from service.tokenizer import Tokenizer
from service.tracing import traced
from service.windows import repository
from service.windows.metrics import WindowStats
from service.windows.state import ProfilePart, UserState, Variant, item_element, profile_part, retrieved_elements

# BPEs whose pre-tokenizer never puts a newline and a following "#" into one piece: a window text counts
# as the sum of its section blocks (scoring.window.assemble_prepared, count_blocks; checked against the
# real encodings in tests/service/windows/test_window_counting.py). The weighted estimate rounds per
# text, so it counts the joined text.
BLOCK_ADDITIVE = frozenset({"o200k_base", "cl100k_base"})


class TokenCounter:
    """The tokenizer's count, memoised: profile lines, headers, repeated history messages and unchanged
    window blocks are counted once. Bounded by entries and by the characters it holds, since window
    blocks can be long and each distinct input makes new ones."""

    def __init__(self, tokenizer: Tokenizer, *, max_entries: int = 65_536, max_chars: int = 4_000_000) -> None:
        self._count = tokenizer.count
        self._memo: OrderedDict[str, int] = OrderedDict()
        self._chars = 0
        self._max_entries, self._max_chars = max_entries, max_chars
        self.additive = tokenizer.exact and tokenizer.name in BLOCK_ADDITIVE
        # What it may hold, as the process caches weigh it: the texts and ~100 bytes per entry.
        self.bytes = max_chars + 100 * max_entries

    def __call__(self, text: str) -> int:
        n = self._memo.get(text)
        if n is not None:
            self._memo.move_to_end(text)
            return n
        n = self._count(text)
        if len(text) * 64 <= self._max_chars:
            self._memo[text] = n
            self._chars += len(text)
            while len(self._memo) > self._max_entries or self._chars > self._max_chars:
                old, _ = self._memo.popitem(last=False)
                self._chars -= len(old)
        return n

    def blocks(self, blocks: Sequence[str]) -> int:
        """The tokens of the blocks' concatenation, for a block-additive tokenizer."""
        return sum(self(b) for b in blocks)


def cached_counter(caches: ProcessCaches, tokenizer: Tokenizer) -> TokenCounter:
    """The process's counter for ``tokenizer`` (``caches.counters``)."""
    counter = caches.counters.get(tokenizer)
    if counter is None:
        counter = caches.counters[tokenizer] = TokenCounter(tokenizer)
    return counter  # type: ignore[no-any-return]


# The ids of the request's own pinned elements (its goal, plan and latest input): not items.
REQUEST_ELEMENT = "request:"


def value_model(caches: ProcessCaches, settings: Settings) -> ValueModel:
    """The window's value model from the settings, built once per distinct configuration (``caches.models``)."""
    key = settings.window.value.model_dump_json()
    model = caches.models.get(key)
    if model is None:
        model = caches.models[key] = settings.window.value.model()
    return model  # type: ignore[no-any-return]


def budget_of(req: WindowRequest, settings: Settings) -> int:
    watermark = req.watermark if req.watermark is not None else settings.window.watermark
    return window_budget(
        max_tokens=req.max_tokens,
        context_limit=req.context_limit,
        reserve_tokens=req.reserve_tokens,
        watermark=watermark,
    )


async def build_window(
    ctx: RequestContext,
    *,
    user_id: str,
    req: WindowRequest,
    archive: bool = True,
    observe: Callable[[WindowStats], None] | None = None,
) -> dict[str, Any]:
    """The window for this request (docs/design.md §3.6): the request's own history and pinned text, the
    user's standing rows (cached), the retrieved items, one selection under the budget — and, when that
    leaves room with every candidate whole, a second one that adds the user's next older items.

    ``archive=False`` (the console's preview) writes nothing: the stored session turns that fall out stay
    live for the agent's own next window, and ``archive_dropped`` is not honoured. ``observe`` is handed the
    window's context-management figures (the endpoint's Prometheus series, service/windows/metrics.py)."""
    principal, settings = ctx.principal, ctx.settings
    principal.require(Permission.ITEMS_READ)
    if req.archive_dropped:
        principal.require(Permission.ITEMS_WRITE)
    count = cached_counter(ctx.caches, ctx.tokenizer)
    budget = budget_of(req, settings)
    messages = [m.model_dump(exclude_none=True) for m in req.messages]
    # The latest input is in the window once, as its own section: not again as the history's last message.
    messages = [dict(m) for m in history.without_latest_input(messages, req.input)]
    stored: list[uuid.UUID] | None = None  # the ids of the messages, when they are the session's stored ones
    if not req.messages and req.session_id is not None:
        messages, stored = await conversations.window_history(
            ctx, user_id=user_id, session_id=req.session_id, latest_input=req.input
        )
    turn = _turn(req, messages, count, complete=stored is None)

    await repository.prefer_generic_plans(ctx.session)
    # The index is searched while PostgreSQL checks the cache (and reads the query's terms with it): the
    # search holds the interpreter, so it overlaps only with a statement in flight.
    query = req.query or req.input
    searched = asyncio.ensure_future(recall.vector_result(ctx, user_id=user_id, query=query))
    try:
        state, first = await _user_state(ctx, user_id, req, count)
        variant = state.variant(pin_goal=req.goal is None, pin_plan=req.plan is None)
        repeats = _repeats_of_pinned(variant, turn.pinned)
        found, retrieved, left_out, applicable = await _retrieve(
            ctx, user_id, req, state, count, first=first, searched=searched
        )
    finally:
        searched.cancel()  # a no-op once done; else the window failed before it needed the search

    echoes: dict[str, Omission] = {}

    @traced("window.assemble")
    def assemble(loose: Sequence[Element]) -> Any:
        return assemble_prepared(
            variant.prepared,
            extra=turn.pinned,
            loose_extra=loose,
            relevance=found.scores,
            repeats=repeats,
            absent=echoes,
            units=turn.units,
            budget=budget,
            tools_tokens=turn.tools_tokens,
            count=count,
            count_blocks=count.blocks if count.additive else None,
            query=query,
        )

    loose: list[Element] = retrieved
    outcome = assemble(loose)
    wanted = (
        older_items_wanted(room=budget - outcome.used, cut=outcome.cut, has_older=state.newest_floor is not None)
        if not isinstance(outcome, TooSmall)
        else 0
    )
    if wanted:
        older = await _older_elements(ctx, user_id, req, state, count, limit=wanted, have={e.id for e in retrieved})
        if older:
            applicable += len(older)
            loose = [*retrieved, *older]
            outcome = assemble(loose)
    if not isinstance(outcome, TooSmall):
        # An item that is a tool result the fitted history already holds is shown once, there: the item
        # is left out (selected again, so the room it leaves goes to something else).
        echoes = _echoes_of_history(variant, loose, turn.messages, outcome.kept_messages)
        if echoes:
            outcome = assemble(loose)
    if isinstance(outcome, TooSmall):
        raise BudgetTooSmallError(
            f"pinned content needs {outcome.required} tokens; the budget is {outcome.budget}",
            required=outcome.required,
            budget=outcome.budget,
        )

    archived_id = None
    kept = set(outcome.kept_messages)
    dropped = [i for i in range(len(turn.messages)) if i not in kept]
    if archive and stored is not None and req.session_id is not None:
        # The stored turns that fell out become long-term memory, once: by the first window that drops them.
        if dropped and settings.window.archive_session_turns and principal.can(Permission.ITEMS_WRITE):
            archived_id = await conversations.archive(
                ctx, user_id=user_id, session_id=req.session_id, ids=[stored[i] for i in dropped]
            )
    elif archive and req.archive_dropped and dropped:
        archived_id = await conversations.write_episode(
            ctx,
            user_id=user_id,
            messages=[turn.messages[i] for i in dropped],
            session_id=req.session_id,
            task_id=req.task_id,
        )
    response = _response(
        outcome,
        budget=budget,
        turn=turn,
        state=state,
        found=found,
        left_out=left_out,
        # The user's items that apply here but were neither standing, among the newest, nor retrieved.
        not_retrieved=max(0, state.applicable - len(state.known) - applicable),
        archived_id=archived_id,
        prompt=_prompt(outcome, req, [turn.messages[i] for i in outcome.kept_messages]),
        detail=req.detail,
    )
    if observe is not None:
        omitted = response["omitted_summary"]["count"]
        observe(_stats(ctx, user_id, req, outcome, found, budget=budget, omitted=omitted))
    return response


def _stats(
    ctx: RequestContext,
    user_id: str,
    req: WindowRequest,
    outcome: Any,
    found: recall.Relevance,
    *,
    budget: int,
    omitted: int,
) -> WindowStats:
    placed = [p for s in outcome.sections for p in s.items if not p.id.startswith(REQUEST_ELEMENT)]
    whole = sum(1 for p in placed if p.level == 0)
    relevant = found.scores
    return WindowStats(
        mode=outcome.mode,
        budget=budget,
        used=outcome.used,
        pinned=outcome.pinned_tokens,
        whole=whole,
        compressed=len(placed) - whole,
        omitted=omitted,
        relevant=len(relevant),
        relevant_placed=sum(1 for p in placed if p.id in relevant),
        session=(ctx.principal.tenant_id, user_id, req.session_id) if req.session_id is not None else None,
        prefix_hash=outcome.prefix_hash,
    )


@dataclass(frozen=True)
class Turn:
    """What the request itself brings: its history (validated, counted, grouped into the units that are
    kept or dropped together), the tokens of its tool definitions and its pinned elements (goal, plan,
    latest input)."""

    messages: list[dict[str, Any]]
    units: list[history.Unit]
    tools_tokens: int
    pinned: list[Element]


def _turn(req: WindowRequest, messages: list[dict[str, Any]], count: TokenCounter, *, complete: bool) -> Turn:
    try:
        history.validate(messages, complete=complete)
    except history.HistoryError as exc:
        raise HistoryInvalid(str(exc), index=exc.index) from exc
    units = history.units(messages, [history.message_tokens(m, count) for m in messages])
    tools_tokens = (
        count(json.dumps(req.tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False)) if req.tools else 0
    )
    pinned: list[Element] = []
    for name, text in (("goal", req.goal), ("plan", req.plan)):
        if text:
            reason = f"pinned: {name} of this request"
            pinned.append(pinned_element(f"{REQUEST_ELEMENT}{name}", name, text, reason, count))
    latest = f"{REQUEST_ELEMENT}input"
    pinned.append(pinned_element(latest, "input", req.input, "pinned: latest input", count, verbatim=True))
    return Turn(messages, units, tools_tokens, pinned)


def _repeats_of_pinned(variant: Variant, request_pinned: Sequence[Element]) -> dict[str, str]:
    """Items repeating pinned text — the request's, then pinned items' (the first claim wins) — each with
    the pinned element it repeats: they start at their index line."""
    pinned_norm: dict[str, str] = {}
    for e in request_pinned:
        pinned_norm.setdefault(normalize_value(None, e.texts[0]), f"pinned {e.id}")
    for norm, eid in variant.pinned_norms:
        pinned_norm.setdefault(norm, f"pinned {eid}")
    longest_pinned = 2 * max(max(len(e.texts[0]) for e in request_pinned), variant.longest_pinned) + 16
    return variant.repeats(pinned_norm, longest_pinned)


def _echoes_of_history(
    variant: Variant,
    loose: Sequence[Element],
    messages: Sequence[dict[str, Any]],
    kept: Sequence[int],
) -> dict[str, Omission]:
    """Candidate items whose text is the content of a tool message the window keeps in its history
    (``window_policy.tool_results_in_history``), each with its omission."""
    said: dict[str, str] = {}
    for text, why in tool_results_in_history(messages, kept).items():
        said.setdefault(normalize_value(None, text), why)
    if not said:
        return {}
    longest = 2 * max(len(n) for n in said) + 16
    found = variant.repeats(said, longest)
    for e in loose:
        twin = said.get(normalize_value(None, e.texts[0])) if len(e.texts[0]) <= longest else None
        if twin is not None:
            found[e.id] = twin
    return {eid: Omission(eid, why, Omitted.IN_HISTORY) for eid, why in found.items()}


async def _older_elements(
    ctx: RequestContext,
    user_id: str,
    req: WindowRequest,
    state: UserState,
    count: TokenCounter,
    *,
    limit: int,
    have: set[str],
) -> list[Element]:
    """Room to spare, every candidate whole, and the user has older items: the next newest of them (one
    more bounded read), as a sliding window would show, rather than leave the budget unused."""
    rows = await repository.older_items(
        ctx.session,
        selection=_selection(ctx, user_id, req),
        before=state.newest_floor,
        now=ctx.now,
        limit=limit,
    )
    older = (
        item_element(r, user_id=user_id, count=count, model=state.model, day=state.day)
        for r in rows
        if str(r["id"]) not in have
    )
    return [e for e in older if not e.pinned]


@traced("window.response")
def _response(
    outcome: Any,
    *,
    budget: int,
    turn: Turn,
    state: UserState,
    found: recall.Relevance,
    left_out: Sequence[Omission],
    not_retrieved: int,
    archived_id: Any,
    prompt: dict[str, Any] | None,
    detail: str,
) -> dict[str, Any]:
    """The response as plain data, serialised once by the endpoint: the hot path skips model validation
    of every item listed. Its shape is WindowResponse (tests validate responses against it)."""
    omitted, omitted_summary = _omitted((*state.omitted, *left_out, *outcome.omitted), found.scores, detail)
    sections = [
        {
            "id": s.id,
            "title": s.title,
            "tokens": s.tokens,
            "items": [
                {"id": p.id, "level": p.level, "tokens": p.tokens, "reason": p.reason, "value": p.value}
                for p in s.items
            ],
        }
        for s in outcome.sections
    ]
    return {
        "mode": outcome.mode,
        "text": outcome.text,
        "sections": sections,
        "messages": [turn.messages[i] for i in outcome.kept_messages],
        "omitted": omitted,
        "omitted_summary": omitted_summary,
        "warnings": [*state.warnings, *found.warnings],
        "tokens": {
            "budget": budget,
            "used": outcome.used,
            "pinned": outcome.pinned_tokens,
            "text": outcome.text_tokens,
            "messages": outcome.messages_tokens,
            "tools": turn.tools_tokens,
            "sections": {s["id"]: s["tokens"] for s in sections},
        },
        "prefix_tokens": outcome.prefix_tokens,
        "prefix_hash": outcome.prefix_hash,
        "state_version": state.state_version,
        "archived_item_id": archived_id,
        "cut": outcome.cut,
        "not_retrieved": not_retrieved,
        "prompt": prompt,
    }


def _omitted(
    omitted: Sequence[Omission], relevance: Mapping[str, float], detail: str
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """What the response lists of the items left out — all of them (``full``), or those relevant to the
    query, best first, at most ``OMITTED_LISTED`` (``summary``) — and the count of all by kind."""
    kinds: dict[str, int] = {}
    for o in omitted:
        kinds[o.label] = kinds.get(o.label, 0) + 1
    if detail == "full":
        listed = list(omitted)
    else:
        relevant = [o for o in omitted if relevance.get(o.id)]
        relevant.sort(key=lambda o: (-relevance[o.id], o.id))
        listed = relevant[:OMITTED_LISTED]
    summary = {"count": len(omitted), "listed": len(listed), "reasons": dict(sorted(kinds.items()))}
    return [{"id": o.id, "reason": o.reason} for o in listed], summary


def _prompt(outcome: Any, req: WindowRequest, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The model call's messages in the requested format (scoring/prompts.py), or None for the window's own."""
    if req.format == "openai":
        return prompts.openai_prompt(text=outcome.text, messages=messages, latest_input=req.input)
    if req.format == "anthropic":
        return prompts.anthropic_prompt(
            text=outcome.text, prefix=outcome.prefix, messages=messages, latest_input=req.input
        )
    return None


@traced("window.retrieve")
async def _retrieve(
    ctx: RequestContext,
    user_id: str,
    req: WindowRequest,
    state: UserState,
    count: TokenCounter,
    *,
    first: LexicalTerms | None = None,
    searched: Awaitable[recall.VectorResult] | None = None,
) -> tuple[recall.Relevance, list[Element], list[Omission], int]:
    """Retrieve (docs/design.md §3.6 step 1): the relevance of the user's items to the query (hybrid: PostgreSQL
    full-text search and the vector index), and the retrieved items the standing rows do not hold —
    confirmed by PostgreSQL (active, unexpired, in the request's domains; mostly in the conversation
    context's round trip, which reads what a retrieved row needs checked: repository.retrieved_items) —
    as elements: those that apply here in their own sections, the best few from outside this window's
    scopes as recalled background. Also what was left out of them and how many apply here. ``first`` and
    ``searched``: the lexical ranking's first rows (read with the cache check) and the index's search,
    begun already."""
    settings = ctx.settings
    selection = _selection(ctx, user_id, req)
    found = await recall.relevance(
        ctx,
        user_id=user_id,
        query=req.query or req.input,
        documents=state.applicable,
        first=first,
        searched=searched,
        selection=selection,
    )
    others = sorted((i for i in found.scores if i not in state.known), key=lambda i: (-found.scores[i], i))
    if not others:
        return found, [], [], 0
    rows = await repository.retrieved_items(
        ctx.session, caches=ctx.caches, selection=selection, ids=others, now=ctx.now, checked=found.checked
    )
    elements, left_out, applicable = retrieved_elements(
        rows, state, user_id=user_id, count=count, recall_limit=settings.recall.limit
    )
    return found, elements, left_out, applicable


def _selection(ctx: RequestContext, user_id: str, req: WindowRequest) -> Selection:
    return Selection(
        tenant_id=ctx.principal.tenant_id,
        user_id=user_id,
        session_id=req.session_id,
        task_id=req.task_id,
        stage_id=req.stage_id,
        step_id=req.step_id,
        domains=tuple(sorted(set(req.domains))) if req.domains else None,
    )


@traced("window.state")
async def _user_state(
    ctx: RequestContext, user_id: str, req: WindowRequest, count: Callable[[str], int]
) -> tuple[UserState, LexicalTerms | None]:
    """The row-derived part of the window: from the cache when ``window_version`` confirms it, else built
    from a fresh fetch (and cached, unless this transaction has written: see repository). A state rebuilt
    because the items changed keeps the profile part of the one it replaces when the entries did not
    change (one read and the profile's derivation fewer: the window after each turn a conversation
    stores), reads again only the columns of rows that one did not hold (``repository.window_items``) and
    reuses the elements of rows it held (``state.cached_element``).

    With the cache check goes the lexical ranking's first statement, when a state held for these rows
    says how many items the user has (which decides what that statement asks): returned beside the
    state, for ``_retrieve``."""
    settings, caches = ctx.settings, ctx.caches
    cache = caches.windows
    selection = _selection(ctx, user_id, req)
    recent = settings.window.recent_items
    use_cache = settings.window.cache_entries > 0 and settings.window.cache_rows > 0
    model = value_model(caches, settings)
    # What selects the rows and what turns them into elements (the tokenizer counts profile lines, the
    # value model's configuration values them).
    key = (selection, ctx.tokenizer.name, recent, settings.window.value.model_dump_json())
    clean = False
    stale: UserState | None = None
    profile: ProfilePart | None = None
    first: LexicalTerms | None = None
    if use_cache:
        known = cache.peek(key)
        if isinstance(known, UserState):
            first = terms_args(
                lexicons=caches.lexicons,
                tenant_id=selection.tenant_id,
                user_id=user_id,
                query=req.query or req.input,
                documents=known.applicable,
                lexicon_texts=settings.recall.lexicon_texts,
                lexicon_postings=settings.recall.lexicon_postings,
            )
        version, clean, first = await repository.window_version(
            ctx.session, selection=selection, recent=recent, terms=first
        )
        if clean:
            cached = cache.get(key, version, ctx.now)
            if cached is not None:
                assert isinstance(cached, UserState)
                return cached, first
        held = cache.peek(key)
        if isinstance(held, UserState):
            stale = held
            if clean and stale.profile.version == version[2:]:
                profile = stale.profile
    rows, applicable = await repository.window_items(
        ctx.session,
        caches=caches,
        selection=selection,
        recent=recent,
        held=sorted(stale.known) if stale is not None else (),
    )
    if profile is None:
        entry_rows = await repository.window_entries(ctx.session, tenant_id=selection.tenant_id, user_id=user_id)
        profile = profile_part(
            entry_rows,
            user_id=user_id,
            session_id=req.session_id,
            domains=selection.domains,
            count=count,
            model=model,
        )
    state = UserState(
        rows,
        profile,
        items_version=repository.version_of(rows),
        now=ctx.now,
        user_id=user_id,
        scope=ScopeContext(session_id=req.session_id, task_id=req.task_id, stage_id=req.stage_id, step_id=req.step_id),
        domains=list(selection.domains) if selection.domains else None,
        count=count,
        model=model,
        applicable=applicable,
        recent=recent,
        elements=caches.elements,
        memos=caches.memos,
    )
    if clean:
        cache.put(key, state, max_entries=settings.window.cache_entries, max_rows=settings.window.cache_rows)
    return state, first
