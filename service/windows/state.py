"""What a window derives from a user's rows alone — kept in ``cache.CACHE`` between requests.

From the fetched items and profile entries, for one selection (user, session/task/stage/step, domains)
and one span of time: the live items with their sections and levels, what was left out (stale tool
results, scope overrides), the effective profile, ``state_version``, and — per combination of "the
request brings its own goal / plan" — the prepared elements of ``scoring.window``. A request adds only its
own elements, the relevance of each item to its query and the items repeating its text.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from scoring.compress import assemble_levels, derive_row_levels
from scoring.conflicts import normalize_value
from scoring.items import AUTHORITY_RANK
from scoring.profile import EffectiveProfile, effective_profile
from scoring.relevance import W_RELEVANCE, importance, whole_days
from scoring.scopes import ScopeContext, Scoped, effective
from scoring.window import Element, Prepared, prepare
from service.profiles.service import _pure as pure_entry


def fixed(
    eid: str,
    section: str,
    text: str,
    reason: str,
    count: Callable[[str], int],
    *,
    order: tuple[Any, ...] = (),
    verbatim: bool = False,
) -> Element:
    """A pinned element: the same text at every level."""
    n = count(text)
    return Element(eid, section, (text,) * 5, (n,) * 5, pinned=True, reason=reason, order=order, verbatim=verbatim)


def _item_levels(row: Any, user_id: str, count: Callable[[str], int]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if row["level_texts"] is not None and row["level_tokens"] is not None:
        return (row["content"], *row["level_texts"]), (row["token_cost"], *row["level_tokens"])
    derived = derive_row_levels(row, user_id)
    texts, tokens = assemble_levels(row["content"], row["token_cost"], derived, [count(t) for t in derived])
    return tuple(texts), tuple(tokens)


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


def _phrase(dimension: str, polarity: str, value: str) -> str:
    if dimension == "preference":
        return {"like": f"likes {value}", "dislike": f"dislikes {value}"}.get(polarity, value)
    return f"not {value}" if polarity == "dislike" else value


class Variant:
    """The prepared elements for requests that bring their own goal / plan or not: without one, the
    newest goal / plan item is pinned, which moves it out of the items that give way."""

    def __init__(self, state: UserState, pin_goal: bool, pin_plan: bool) -> None:
        latest = {j: t for t, j in state.latest.items() if (pin_goal if t == "goal" else pin_plan)}
        ids, contents = state.ids, state.contents
        loose = [j for j in range(len(ids)) if j not in state.pinned and j not in latest]

        # Related items share a level: connected components over related_ids among the loose items.
        loose_ids = {ids[j] for j in loose}
        parent: dict[str, str] = {i: i for i in loose_ids}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for j in loose:
            for rel in state.related.get(j, ()):
                a, b = find(ids[j]), find(rel) if rel in loose_ids else None
                if b is not None and a != b:
                    parent[max(a, b)] = min(a, b)
        sizes: dict[str, int] = {}
        for i in loose_ids:
            sizes[find(i)] = sizes.get(find(i), 0) + 1

        elements = list(state.pinned.values())
        for j, t in latest.items():
            elements.append(fixed(ids[j], t, contents[j], f"pinned: current {t}", state.count, order=state.orders[j]))
        for j in loose:
            e = state.loose[j]
            root = find(ids[j])
            elements.append(replace(e, group=root) if sizes[root] > 1 else e)
        elements += state.profile_elements
        self.prepared: Prepared = prepare(elements)
        # The state's lists, not the state itself: the state holds its variants, and a reference cycle
        # would leave every replaced entry to the cyclic garbage collector (long pauses).
        self._contents, self._ids = contents, ids
        self._own = Ranked(self.prepared, [state.merits.get(e.id) for e in self.prepared.loose])
        self._with: OrderedDict[tuple[str, ...], Ranked] = OrderedDict()
        # Pinned items, in the order they claim a normalised text (after the request's; the first one wins).
        pinned = sorted([*state.pinned, *latest])
        self.pinned_norms = [(normalize_value(None, contents[j]), ids[j]) for j in pinned]
        self.longest_pinned = max((len(contents[j]) for j in pinned), default=0)
        # Loose items by normalised text, indexed shortest first as far as requests need (only an item no
        # longer than twice the longest pinned text, plus 16, is compared).
        self._by_length = sorted(loose, key=lambda j: len(contents[j]))
        self._indexed = 0
        self._by_norm: dict[int, list[int]] = {}

    def repeats(self, pinned_norm: dict[str, str], longest: int) -> dict[str, str]:
        """Loose item id → the pinned element whose normalised text it repeats, for items of at most
        ``longest`` characters."""
        contents, ids = self._contents, self._ids
        while self._indexed < len(self._by_length):
            j = self._by_length[self._indexed]
            if len(contents[j]) > longest:
                break
            self._by_norm.setdefault(hash(normalize_value(None, contents[j])), []).append(j)
            self._indexed += 1
        out: dict[str, str] = {}
        for norm, eid in pinned_norm.items():
            for j in self._by_norm.get(hash(norm), ()):
                if len(contents[j]) <= longest and normalize_value(None, contents[j]) == norm:
                    out[ids[j]] = eid
        return out

    def ranked(self, recalled: Sequence[Element] = (), merits: Mapping[str, Merit] | None = None) -> Ranked:
        """The prepared elements, plus ``recalled`` ones if any (loose items from outside the window's
        scopes that relevance brought in, with their ``merits``). Memoised for the last few sets:
        successive turns about one subject recall the same items."""
        if not recalled:
            return self._own
        key = tuple(e.id for e in recalled)
        hit = self._with.get(key)
        if hit is None:
            extra = [(merits or {}).get(e.id) for e in recalled]
            hit = Ranked(self.prepared.extended(recalled), extra, parent=self._own)
            self._with[key] = hit
            while len(self._with) > 8:
                self._with.popitem(last=False)
        self._with.move_to_end(key)
        return hit


# What an item brings to its importance besides relevance: (authority rank, confidence, observed day).
Merit = tuple[int, float, int]
# Merits are compared as integers, in millionths: the give-way order sorts plain ints.
SCALE = 1_000_000


def merit_of(row: Any) -> Merit:
    return AUTHORITY_RANK[row["authority"]], float(row["confidence"]), whole_days(row["observed_at"])


class Ranked:
    """Prepared elements and what orders their giving way for a query: ``merits`` per loose element
    (``None`` for profile elements), or, with a ``parent``, for the loose elements added to its own."""

    def __init__(self, prepared: Prepared, merits: Sequence[Merit | None], parent: Ranked | None = None) -> None:
        self.prepared = prepared
        self._merits = merits
        self._parent = parent
        self._day: int | None = None
        self._base: list[int] = []

    def base(self, day: int) -> list[int]:
        """Per loose element, its importance without relevance on ``day`` (changes once a day)."""
        if day != self._day:
            own = [
                0
                if m is None
                else round(
                    SCALE * importance(relevance=0.0, authority_rank=m[0], confidence=m[1], age_days=max(0, day - m[2]))
                )
                for m in self._merits
            ]
            self._base = (self._parent.base(day) if self._parent is not None else []) + own
            self._day = day
        return self._base

    def merit(self, scores: Mapping[str, float], now: datetime) -> list[int]:
        """Per loose element: how long it holds out when the window gives way (higher: later), in
        millionths — ``scoring.relevance.importance`` of its relevance to the query (``scores``: id → 0-1),
        authority, confidence and age in whole days. Profile elements get 0: their own importance orders
        them (and relevance does not reach them)."""
        out = list(self.base(whole_days(now)))
        index = self.prepared.index
        for eid, r in scores.items():
            i = index.get(eid)
            if i is not None:  # scores name items only, never profile elements
                out[i] += round(SCALE * W_RELEVANCE * r)
        return out


class UserState:
    """What the window derives from one fetch of items and profile entries, valid while their versions
    stay the same and the time stays between ``valid_from`` and ``valid_until`` (expiry). It keeps plain
    values (ids, texts, elements), not the fetched records."""

    def __init__(
        self,
        rows: Sequence[Any],
        entry_rows: Sequence[Any],
        *,
        version: tuple[int, int, int, int],
        now: datetime,
        user_id: str,
        scope: ScopeContext,
        domains: Sequence[str] | None,
        count: Callable[[str], int],
    ) -> None:
        self.version = version
        self.rows = len(rows) + len(entry_rows)
        self.count = count
        past = [r["expires_at"] for r in rows if r["expires_at"] is not None and r["expires_at"] <= now]
        ahead = [r["expires_at"] for r in rows if r["expires_at"] is not None and r["expires_at"] > now]
        self.valid_from = max(past, default=None)
        self.valid_until = min(ahead, default=None)

        warnings: list[str] = []
        omitted: list[tuple[str, str]] = []
        live = []
        for r in rows:
            if r["expires_at"] is not None and r["expires_at"] <= now:
                if r["type"] == "tool_result":
                    warnings.append(f"stale tool result {r['id']} excluded (expired {r['expires_at'].isoformat()})")
                    omitted.append((str(r["id"]), "stale tool result (past expires_at)"))
                continue
            live.append(r)
        chosen = effective([Scoped(str(r["id"]), r["key"], r["scope"], r["scope_ref"]) for r in live], scope)
        overridden_by = {o: w for w, os in chosen.items() for o in os}
        for o, w in sorted(overridden_by.items()):
            omitted.append((o, f"overridden inside this scope by {w}"))
        self.warnings = tuple(warnings)
        self.omitted = tuple(omitted)

        live = [r for r in live if str(r["id"]) in chosen]
        self.ids = [str(r["id"]) for r in live]
        self.contents = [r["content"] for r in live]
        # Every item fetched, live or not: relevance recalls only items outside this set.
        self.known = frozenset(str(r["id"]) for r in rows)
        self.orders = [(r["observed_at"], rid) for r, rid in zip(live, self.ids, strict=True)]
        self.related = {j: tuple(str(i) for i in r["related_ids"]) for j, r in enumerate(live) if r["related_ids"]}
        # The newest goal / plan item (rows come in id order), pinned when the request brings none.
        self.latest: dict[str, int] = {}
        for j, r in enumerate(live):
            if r["type"] in ("goal", "plan") and r["status"] != "missing":
                self.latest[r["type"]] = j
        # Each item as pinned by its section, or as an element that gives way. What orders the giving way
        # inside a section depends on the query (``Ranked.merit``), so the elements carry no importance
        # of their own; ``merits`` holds what the item brings to it.
        self.pinned: dict[int, Element] = {}
        self.loose: dict[int, Element] = {}
        self.merits: dict[str, Merit] = {}
        for j, r in enumerate(live):
            section, pinned, reason = _section_of(r)
            rid = self.ids[j]
            if pinned:
                self.pinned[j] = fixed(rid, section, r["content"], reason, count, order=self.orders[j])
                continue
            texts, tokens = _item_levels(r, user_id, count)
            self.loose[j] = Element(rid, section, texts, tokens, reason=reason, order=self.orders[j])
            self.merits[rid] = merit_of(r)
        self._variants: dict[tuple[bool, bool], Variant] = {}

        profile = effective_profile([pure_entry(e) for e in entry_rows], session_id=scope.session_id, domains=domains)
        self.profile_elements = _profile_elements(profile, user_id, count)

        # Changes when any applicable item or profile entry is added, removed or updated.
        mix = 0
        for r in rows:
            mix ^= r["id"].int
        for e in entry_rows:
            mix ^= e["id"].int
        stamp = max((r["updated_at"] for r in (*rows, *entry_rows)), default=None)
        state = hashlib.sha256(f"{len(rows)}:{len(entry_rows)}:{mix:x}:{stamp}".encode())
        self.state_version = "sv1:" + state.hexdigest()[:24]

    def valid_at(self, now: datetime) -> bool:
        return (self.valid_from is None or self.valid_from <= now) and (
            self.valid_until is None or now < self.valid_until
        )

    def variant(self, *, pin_goal: bool, pin_plan: bool) -> Variant:
        key = (pin_goal and "goal" in self.latest, pin_plan and "plan" in self.latest)
        if key not in self._variants:
            self._variants[key] = Variant(self, *key)
        return self._variants[key]


def recalled_elements(
    rows: Sequence[Any], user_id: str, count: Callable[[str], int]
) -> tuple[list[Element], dict[str, Merit]]:
    """Items from outside the window's scopes that relevance recalled: loose elements of the background
    section, whatever their type (they were not chosen for this session or task), with their merits."""
    elements, merits = [], {}
    for r in rows:
        rid = str(r["id"])
        texts, tokens = _item_levels(r, user_id, count)
        where = f"{r['scope']} {r['scope_ref']}" if r["scope_ref"] else r["scope"]
        reason = f"recalled: relevant to the query ({r['type']} from {where})"
        elements.append(Element(rid, "background", texts, tokens, reason=reason, order=(r["observed_at"], rid)))
        merits[rid] = merit_of(r)
    return elements, merits


def _profile_elements(profile: EffectiveProfile, user_id: str, count: Callable[[str], int]) -> list[Element]:
    out: list[Element] = []
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
        out.append(
            fixed(
                f"profile:{e.id}",
                "constraints",
                f"Do not recommend {e.value}{where} ({e.dimension}.{e.key}): the user confirmed they dislike it.",
                "pinned: confirmed dislike from the profile",
                count,
                order=(e.domain or "", e.dimension, e.key, e.value),
            )
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
