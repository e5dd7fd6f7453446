"""Window assembly (docs/design.md §3.6): select → compress → order → render, over plain values.

The service turns the candidates (pinned items, this session's and task's items, the profile, the items
retrieved for the query, the newest few) into ``Element``s — each with its five levels precomputed and
its worth before relevance (``scoring.window_policy``) — and the chat history into ``Unit``s, and calls
:func:`assemble`. Everything here is deterministic: the same input gives byte-identical output.

Selection (step 5) is a multiple-choice knapsack solved by value per token (``scoring.selection``):
pinned elements and the history that is never dropped are paid first (if they alone do not fit, the
result is :class:`BudgetTooSmall`); then every other element — and the chat history, as two elements
whose levels are "keep the newest k old turns" and "keep the newest k older exchanges of this turn" —
takes its best steps, value per token first, until the first that does not fit. An element's value for
this request is its worth times its relevance factor; related elements (``group``) share a level; an
element repeating a pinned one can only be an index line. Mode: ``full`` when everything is whole and no
history was dropped, ``compact`` when an element was left out or cut to an index line, else ``balanced``.

What depends on the elements alone (line costs, value shares, hulls, groups, render order) is worked out
by :func:`prepare`; :func:`assemble_prepared` adds what one request brings (its pinned elements, loose
elements retrieved for it, relevance, items repeating its text), so the service's per-user cache pays per
request only for the selection itself.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from scoring.compress import focused, query_terms
from scoring.history import Unit
from scoring.selection import INFINITE, Point, hull, rates_of, steps_keys, take_keyed
from scoring.window_policy import DEFAULT_MODEL, Omission, Omitted, ProfileLine, ValueModel

SECTIONS: tuple[tuple[str, str], ...] = (
    ("rules", "Rules"),
    ("profile", "User profile"),
    ("goal", "Goal"),
    ("constraints", "Constraints"),
    ("plan", "Plan and task state"),
    ("facts", "Confirmed facts and decisions"),
    ("evidence", "Evidence for this step"),
    ("tool_results", "Fresh tool results"),
    ("hints", "Tentative hints (unconfirmed: use for ranking, never as defaults)"),
    ("summaries", "Summaries"),
    ("background", "Background"),
    ("input", "Latest input"),
)
SECTION_RANK = {name: i for i, (name, _) in enumerate(SECTIONS)}
TITLES = dict(SECTIONS)
HEADERS = {name: f"## {title}\n" for name, title in SECTIONS}
# The stable, cache-friendly prefix: it changes only when rules or the long-term profile change.
PREFIX_SECTIONS = ("rules", "profile")
# What "- " before and a newline after an item line add to its own token count, as the budget's estimate.
# With a BPE tokenizer (o200k, cl100k) "-" is a token of its own, the space joins the next word's token,
# and the newline joins the line's last piece when that is punctuation (".\n", "?\n") but is a token of
# its own after a letter or a digit. The final text is counted exactly and the selection tightened if the
# estimate was short; a flat 1 per line would be short by one token on every line ending in a word, enough
# to make a window select twice.
LINE_OVERHEAD = 1


def line_overhead(text: str, verbatim: bool = False) -> int:
    """The tokens a line adds to its text's own count: the "- " of an item line (not of a verbatim one) and
    the newline, unless it joins the text's closing punctuation."""
    last = text[-1:]
    joins = bool(last) and not (last.isalnum() or last.isspace() or last == "_")
    return (0 if verbatim else LINE_OVERHEAD) + (0 if joins else 1)


LEVEL_NAMES = ("original", "condensed", "summary", "key fields", "index line")

# A shortened item's line starts with its handle, so the model can ask for the whole text: the last
# HANDLE_CHARS hex digits of its id. Ids are UUIDv7, whose first digits are the time they were written (the
# first 8 are shared by every item written in the same ~65 s) and whose last 62 bits are random: 8 of those
# are unique among a window's items but for a rare collision, which lengthens the colliding handles. The
# note says so once, after the cache-friendly prefix.
HANDLE_CHARS = 8
EXPAND_NOTE = "[id] starts a shortened item: expand(id) returns its whole text.\n\n"
# What GET …/items/{id} and the MCP expand tool take: an id, or the end of one (8 to 36 of its characters).
HANDLE_PATTERN = r"^[0-9a-fA-F-]{8,36}$"
_ID_SHAPE = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"  # an id as text: where its dashes stand


def as_handle(text: str) -> str | None:
    """``text`` as a handle, in lower case, when it is exactly one — bare or in a window's brackets
    (``[4c1b0a2e]``): the last ``HANDLE_CHARS`` or more characters of an id as text (hex digits, and dashes
    only where an id has them; a whole id too). Anything else (a word, a date such as ``2026-12-03``, a
    sentence holding a handle) is None."""
    t = text.strip()
    if t[:1] == "[" and t[-1:] == "]":
        t = t[1:-1].strip()
    t = t.lower()
    if not HANDLE_CHARS <= len(t) <= len(_ID_SHAPE):
        return None
    shape = _ID_SHAPE[-len(t) :]
    if all(c == "-" if s == "-" else c in "0123456789abcdef" for c, s in zip(t, shape, strict=True)):
        return t
    return None


def handle_costs(
    item_id: str, texts: Sequence[str], tokens: Sequence[int], count: Callable[[str], int]
) -> tuple[int, ...]:
    """Per level, the tokens the handle adds to a line: 0 at L0 and at a level whose text is the whole one
    (nothing to expand), else ``count("[h] " + text) - tokens`` for the default handle (a text that repeats
    the level before it is counted once)."""
    mark = f"[{item_id[-HANDLE_CHARS:]}] "
    out = [0]
    for lvl in range(1, len(texts)):
        t = texts[lvl]
        if t == texts[0]:
            out.append(0)
        elif t == texts[lvl - 1]:
            out.append(out[-1])
        else:
            out.append(count(mark + t) - tokens[lvl])
    return tuple(out)


def handles(ids: Sequence[str]) -> dict[str, str]:
    """Each id's handle: its last ``HANDLE_CHARS`` characters, lengthened until it is unique among ``ids``
    (stable across windows unless two of a window's items end alike)."""
    out: dict[str, str] = {}
    by_end: dict[str, list[str]] = {}
    for i in ids:
        by_end.setdefault(i[-HANDLE_CHARS:], []).append(i)
    for end, same in by_end.items():
        if len(same) == 1:
            out[same[0]] = end
            continue
        n = HANDLE_CHARS
        while len({i[-n:] for i in same}) < len(same) and n < max(map(len, same)):
            n += 1
        for i in same:
            out[i] = i[-n:]
    return out


@dataclass(frozen=True, slots=True)
class Element:
    id: str
    section: str
    texts: tuple[str, ...]  # L0..L4
    tokens: tuple[int, ...]  # L0..L4
    pinned: bool = False
    reason: str = ""
    value: float = 1.0  # worth before relevance (window_policy); ignored for pinned elements
    order: tuple[Any, ...] = ()  # render order inside the section
    group: str | None = None  # related items share a level
    repeats: str | None = None  # what it repeats ("pinned <id>", a history message): an index line at most
    verbatim: bool = False  # rendered as is, without "- " (the latest input)
    # Per level, the tokens "[<handle>] " adds to its line (``handle_costs``); empty: no handle (not an item).
    handle_tokens: tuple[int, ...] = ()


class Placed(NamedTuple):
    id: str
    level: int
    tokens: int
    reason: str
    value: float  # its value for this request (worth x relevance factor); 0 for pinned elements


@dataclass(frozen=True)
class SectionOut:
    id: str
    title: str
    tokens: int
    items: tuple[Placed, ...]


@dataclass(frozen=True)
class WindowOut:
    mode: str
    text: str
    sections: tuple[SectionOut, ...]
    kept_messages: tuple[int, ...]
    omitted: tuple[Omission, ...]
    used: int
    text_tokens: int
    messages_tokens: int
    pinned_tokens: int
    prefix: str
    prefix_tokens: int
    prefix_hash: str
    cut: float  # value per 1,000 tokens of the first step not taken (0: nothing had to give way)


@dataclass(frozen=True)
class BudgetTooSmall:
    required: int
    budget: int


def pinned_element(
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


def profile_element(line: ProfileLine, count: Callable[[str], int]) -> Element:
    """A profile line (``window_policy.profile_lines``) as an element: the same text down to L3, its index
    line at L4 when that is shorter."""
    if line.pinned:
        return pinned_element(line.id, line.section, line.text, line.reason, count, order=line.order)
    n = count(line.text)
    last, n_last = line.text, n
    if line.index is not None:
        n_index = count(line.index)
        if n_index < n:
            last, n_last = line.index, n_index
    return Element(
        line.id,
        line.section,
        (line.text,) * 4 + (last,),
        (n,) * 4 + (n_last,),
        reason=line.reason,
        value=line.value,
        order=line.order,
    )


def _line_tokens(e: Element, level: int) -> int:
    mark = e.handle_tokens[level] if e.handle_tokens else 0
    return e.tokens[level] + mark + line_overhead(e.texts[level], e.verbatim)


def _render_line(e: Element, level: int) -> str:
    return f"{e.texts[level]}\n" if e.verbatim else f"- {e.texts[level]}\n"


def _render_key(e: Element) -> tuple[Any, ...]:
    return (e.order, e.id)


def _points(lines: Sequence[int], shares: Sequence[float]) -> list[Point]:
    return [Point(lines[lvl], shares[lvl], lvl) for lvl in range(5)]


@dataclass(frozen=True, slots=True)
class Parts:
    """What the selection needs of one element, independent of the request: line tokens and value shares
    per level, the hull of its options, what its length adds to its worth, and the value share per token
    of each hull step."""

    lines: tuple[int, ...]
    shares: tuple[float, ...]
    hull: tuple[Point, ...]
    size: float
    rates: tuple[float, ...]


_Chains = list[tuple[tuple[int, ...], tuple[Point, ...], float]]


@dataclass(frozen=True)
class Memos:
    """Where :func:`prepare` and :func:`assemble_prepared` keep what they work out across calls: mappings
    the caller owns and bounds (the service's process caches); by default fresh dicts, which keep nothing
    beyond one :class:`Prepared`.

    - ``parts``: :class:`Parts` by what they depend on (token counts, which levels repeat which text, the
      model), so an item retrieved again and again is worked out once;
    - ``by_element``: the same by element (a retrieved item's element is one object for as long as the
      service caches it);
    - ``chains``: the history's chains by its units (a conversation's history stays the same for a few
      requests).

    Keys hold ``id()`` of the element or the model; each entry holds that object itself, so its id cannot
    be reused while the entry is listed, and a hit is confirmed with ``is``."""

    parts: MutableMapping[Any, tuple[ValueModel, Parts]] = field(default_factory=dict)
    by_element: MutableMapping[int, tuple[Element, ValueModel, Parts]] = field(default_factory=dict)
    chains: MutableMapping[Any, tuple[ValueModel, _Chains]] = field(default_factory=dict)


def parts_of(e: Element, model: ValueModel, memos: Memos) -> Parts:
    """:class:`Parts` of an element, memoised in ``memos`` (``parts``, ``by_element``)."""
    seen = memos.by_element.get(id(e))
    if seen is not None and seen[0] is e and seen[1] is model:
        return seen[2]
    t = e.texts
    ends = tuple(line_overhead(x, e.verbatim) for x in t)
    same = (t[1] == t[0], t[2] == t[0], t[3] == t[0], t[4] == t[0], t[4] == t[3])
    key = (e.tokens, e.handle_tokens, ends, same, id(model))
    held = memos.parts.get(key)
    if held is not None and held[0] is model:
        found = held[1]
    else:
        lines = tuple(_line_tokens(e, lvl) for lvl in range(5))
        shares = model.level_shares(t, e.tokens)
        h = hull(_points(lines, shares))
        found = Parts(lines, shares, h, model.size_factor(e.tokens[0]), rates_of(h))
        memos.parts[key] = (model, found)
    memos.by_element[id(e)] = (e, model, found)
    return found


class Prepared:
    """The elements of a window with what does not depend on the request worked out: line tokens and value
    shares per level, each element's hull, groups, render order, and the selection's steps with every
    element at the relevance floor (a request redoes only the groups its relevance or repeats touch).
    Read-only once built, so one instance can serve concurrent requests."""

    def __init__(
        self, elements: Sequence[Element], model: ValueModel = DEFAULT_MODEL, memos: Memos | None = None
    ) -> None:
        self.model = model
        self.memos = memos = memos if memos is not None else Memos()
        self.pinned = tuple(e for e in elements if e.pinned)
        loose = self.loose = tuple(e for e in elements if not e.pinned)
        self.index = {e.id: i for i, e in enumerate(loose)}
        if len(self.index) != len(loose):
            raise ValueError("element ids must be unique")
        self.parts = [parts_of(e, model, memos) for e in loose]
        # Worth before relevance, with length: relevance multiplies it per request.
        self.base = [e.value * pt.size for e, pt in zip(loose, self.parts, strict=True)]
        self.pinned_lines = sum(_line_tokens(e, 0) for e in self.pinned)
        # What every loose element costs whole, and whether any may be shown with a handle: a window that
        # cannot show them all whole keeps room for the expand note (``EXPAND_NOTE``).
        self.whole_lines = sum(pt.lines[0] for pt in self.parts)
        self.loose_sections = frozenset(e.section for e in loose)
        self.handled = any(_may_show_handle(e, pt) for e, pt in zip(loose, self.parts, strict=True))
        self.pinned_sections = frozenset(e.section for e in self.pinned)
        # Related items (same ``group``) move together; everything else is a group of one.
        members: list[list[int]] = []
        named: dict[str, int] = {}
        for i, e in enumerate(loose):
            if e.group is None:
                members.append([i])
            else:
                if e.group not in named:
                    named[e.group] = len(members)
                    members.append([])
                members[named[e.group]].append(i)
        self.members = [tuple(m) for m in members]
        self.group_sections = [frozenset(loose[i].section for i in m) for m in self.members]
        self.group_of = [0] * len(loose)
        for gi, m in enumerate(self.members):
            for i in m:
                self.group_of[i] = gi
        # The selection at the relevance floor, with only the elements' own repeats: values, each group's
        # options and value, and its steps in order (``selection.steps_keys``).
        self.floor = model.relevance_factor(0.0)
        self.values = [b * self.floor for b in self.base]
        self.fixed = frozenset(i for i, e in enumerate(loose) if e.repeats)
        self.twin = {i: e.repeats for i, e in enumerate(loose) if e.repeats}
        self.hulls: list[tuple[Point, ...]] = []
        self.rates: list[tuple[float, ...]] = []
        self.group_values: list[float] = []
        for m in self.members:
            h, r, v = _options(m, self.parts, self.values, self.fixed)
            self.hulls.append(h)
            self.rates.append(r)
            self.group_values.append(v)
        self.keys = steps_keys(self.group_values, self.rates)
        self.keys.sort()
        # (group, hull index) → what its next step is worth, as ``_worth`` says it: filled as requests
        # need it (the same for every request that leaves the group's value alone).
        self.worth: dict[tuple[int, int], tuple[float, str, str]] = {}
        self.dropped: dict[int, tuple[float, str, str]] = {}  # the same for an element left out, with its section
        by_section: dict[str, list[tuple[Element, int]]] = {}
        for e in self.pinned:
            by_section.setdefault(e.section, []).append((e, -1))
        for i, e in enumerate(loose):
            by_section.setdefault(e.section, []).append((e, i))
        # Per section, its elements in render order, each with its render key.
        self.render: dict[str, list[tuple[Element, int, tuple[Any, ...]]]] = {}
        self.unsorted: set[str] = set()  # sections whose orders do not compare: sorted (and failing) at render
        for name, entries in by_section.items():
            keyed = [(e, i, _render_key(e)) for e, i in entries]
            try:
                keyed.sort(key=_third)
            except TypeError:
                keyed = [(e, i, _render_key(e)) for e, i in entries]
                self.unsorted.add(name)
            self.render[name] = keyed


_third = operator.itemgetter(2)
_dropped = (Omitted.OVER_BUDGET + " ({})").format
_DROPPED = {name: _dropped(name) for name, _ in SECTIONS}
_ONE_SECTION = {name: frozenset((name,)) for name, _ in SECTIONS}


def prepare(elements: Sequence[Element], model: ValueModel = DEFAULT_MODEL, memos: Memos | None = None) -> Prepared:
    """The request-independent part of :func:`assemble` over ``elements`` (ids must be unique); what it
    works out per element is kept in ``memos`` (and used by :func:`assemble_prepared` on it)."""
    return Prepared(elements, model, memos)


def assemble(
    *,
    elements: Sequence[Element],
    units: Sequence[Unit],
    budget: int,
    tools_tokens: int,
    count: Callable[[str], int],
    relevance: Mapping[str, float] | None = None,
    model: ValueModel = DEFAULT_MODEL,
) -> WindowOut | BudgetTooSmall:
    return assemble_prepared(
        prepare(elements, model),
        relevance=relevance,
        units=units,
        budget=budget,
        tools_tokens=tools_tokens,
        count=count,
    )


def _options(
    m: tuple[int, ...],
    parts: Sequence[Parts],
    values: Sequence[float],
    fixed: AbstractSet[int],
    absent: AbstractSet[int] = frozenset(),
) -> tuple[tuple[Point, ...], tuple[float, ...], float]:
    """A group's hull, step rates and value for this request (related items, else one element). An element
    that repeats pinned text offers only its index line, one the request holds already (``absent``) no
    option at all; a group's levels move its members together (members that repeat, or are held, stay at
    L4), each level worth the members' values at it."""
    if len(m) == 1:
        i = m[0]
        pt = parts[i]
        if i in absent:
            return (), (), 0.0
        if i in fixed:
            h = hull([Point(pt.lines[4], pt.shares[4], 4)])
            return h, rates_of(h), values[i]
        return pt.hull, pt.rates, values[i]
    total = sum(values[i] for i in m)
    weight = {i: (values[i] / total if total > 0 else 1 / len(m)) for i in m}
    points = []
    for lvl in range(5):
        at = {i: 4 if i in fixed or i in absent else lvl for i in m}
        points.append(
            Point(sum(parts[i].lines[at[i]] for i in m), sum(weight[i] * parts[i].shares[at[i]] for i in m), lvl)
        )
    h = hull(points)
    return h, rates_of(h), total


def assemble_prepared(
    prepared: Prepared,
    *,
    extra: Sequence[Element] = (),
    loose_extra: Sequence[Element] = (),
    relevance: Mapping[str, float] | None = None,
    repeats: Mapping[str, str] | None = None,
    absent: Mapping[str, Omission] | None = None,
    units: Sequence[Unit],
    budget: int,
    tools_tokens: int,
    count: Callable[[str], int],
    count_blocks: Callable[[Sequence[str]], int] | None = None,
    query: str | None = None,
) -> WindowOut | BudgetTooSmall:
    """:func:`assemble` over the prepared elements plus this request's: ``extra`` pinned elements,
    ``loose_extra`` loose ones (retrieved for this query; ungrouped), ``relevance`` (element id → 0-1 for
    this query; missing = 0), ``repeats`` (loose element id → what it repeats, for elements that do not
    say so themselves: an index line at most) and ``absent`` (loose element id → its omission, left out
    whatever the budget: the request holds it already, e.g. as a tool message of its history).

    ``count_blocks`` counts a text given as its section blocks. Each block ends with a blank line and the
    next starts with ``## ``; a BPE whose pre-tokenizer never puts a newline and a following ``#`` into one
    piece (o200k_base, cl100k_base) counts the text as the sum of its blocks, so a caller can count each
    block once and reuse it. Without it the joined text is counted.

    ``query``: an element the query matched that ends up condensed or summarised (L1, L2) shows the
    sentences that match the query best within its level's tokens (``compress.focused``) instead of the
    stored text of that level."""
    p, model = prepared, prepared.model
    if any(not e.pinned for e in extra):
        raise ValueError("extra elements must be pinned")
    if any(e.pinned or e.group is not None for e in loose_extra):
        raise ValueError("loose_extra elements must be loose and ungrouped")
    header_tokens = {name: count(header) + 1 for name, header in HEADERS.items()}
    pinned_sections = p.pinned_sections.union(e.section for e in extra)
    pinned_cost = (
        p.pinned_lines
        + sum(_line_tokens(e, 0) for e in extra)
        + sum(header_tokens[s] for s in pinned_sections)
        + sum(u.tokens for u in units if not u.droppable)
        + tools_tokens
    )
    if pinned_cost > budget:
        return BudgetTooSmall(required=pinned_cost, budget=budget)

    # The loose elements of this request: the prepared ones, then the retrieved ones, each of those a group.
    n0 = len(p.loose)
    loose = p.loose + tuple(loose_extra)
    parts, base, index = p.parts, p.base, p.index
    values = list(p.values)
    n_prepared = len(p.members)
    members = list(p.members)
    sections = list(p.group_sections)
    own: list[tuple[int, str]] = []  # retrieved elements that repeat pinned text themselves
    if loose_extra:
        index = dict(p.index)
        parts = list(parts)
        base = list(base)
        floor = p.floor
        for i, e in enumerate(loose_extra, start=n0):
            if e.id in index:
                raise ValueError(f"duplicate element id {e.id!r}")
            index[e.id] = i
            pt = parts_of(e, model, p.memos)
            parts.append(pt)
            b = e.value * pt.size
            base.append(b)
            values.append(b * floor)
            members.append((i,))
            sections.append(_ONE_SECTION.get(e.section) or frozenset((e.section,)))
            if e.repeats:
                own.append((i, e.repeats))
    # Groups of prepared elements whose value or options this request changes.
    group_of = p.group_of
    dirty: set[int] = set()
    rel = relevance or {}
    relevant: list[int] = []
    factor = model.relevance_factor
    for eid, r in rel.items():
        j = index.get(eid)
        if j is not None:
            values[j] = base[j] * factor(r)
            if r:
                relevant.append(j)
            if j < n0:
                dirty.add(group_of[j])
    # An index line at most: elements repeating pinned text, by their own say, then by the request's.
    fixed: AbstractSet[int] = p.fixed
    twin: Mapping[int, str] = p.twin
    asked = [(index[eid], pin) for eid, pin in repeats.items() if eid in index] if repeats else []
    if own or asked:
        fixed_set, twin_map = set(p.fixed), dict(p.twin)
        for i, pin in (*own, *asked):
            if i not in fixed_set:
                fixed_set.add(i)
                twin_map[i] = pin
                if i < n0:
                    dirty.add(group_of[i])
        fixed, twin = fixed_set, twin_map
    # Left out whatever the budget: elements the request already holds elsewhere (e.g. in its history).
    held = {index[eid]: why for eid, why in absent.items() if eid in index} if absent else {}
    for i in held:
        if i < n0:
            dirty.add(group_of[i])
    held_set = frozenset(held)

    # The selection problem: per group its options and value, and every step in order — the prepared
    # steps of unchanged groups (sorted once), then the others' merged in (the order is a total one).
    hulls = list(p.hulls)
    rates = list(p.rates)
    group_values = list(p.group_values)
    for gi in dirty:
        hulls[gi], rates[gi], group_values[gi] = _options(members[gi], parts, values, fixed, held_set)
    order = [key for key in p.keys if key[1] not in dirty] if dirty else list(p.keys)
    order += steps_keys(group_values, rates, sorted(dirty))
    for gi, i in enumerate(range(n0, len(loose)), start=n_prepared):
        if i in fixed or i in held:
            h, step_rates, v = _options((i,), parts, values, fixed, held_set)
        else:
            pt = parts[i]
            h, step_rates, v = pt.hull, pt.rates, values[i]
        hulls.append(h)
        rates.append(step_rates)
        group_values.append(v)
        for k, r in enumerate(step_rates):
            order.append((-INFINITE if r == INFINITE else -(v * r), gi, k))
    chains = _history_chains(units, model, p.memos)
    n_items = len(members)
    for kept_units, h, v in chains:
        members.append(kept_units)
        hulls.append(h)
        rates.append(rates_of(h))
        group_values.append(v)
        sections.append(frozenset())
    order += steps_keys(group_values, rates, range(n_items, len(members)))
    order.sort()

    query_words = query_terms(query) if query else frozenset()
    # Room for the expand note when some element may be shortened: one with a handle, and not all fit whole.
    reserve = 0
    if p.handled or any(_may_show_handle(e, parts[i]) for i, e in enumerate(loose_extra, start=n0)):
        whole = (
            pinned_cost
            + p.whole_lines
            + sum(parts[i].lines[0] for i in range(n0, len(loose)))
            + sum(header_tokens[s] for s in p.loose_sections.union(e.section for e in loose_extra) - pinned_sections)
            + sum(u.tokens for u in units if u.droppable)
        )
        if whole > budget:
            reserve = count(EXPAND_NOTE)
    goal = budget
    while True:
        choice = take_keyed(
            hulls, order, budget=goal - reserve, used=pinned_cost, sections=sections, header_tokens=header_tokens,
            visible=pinned_sections,
        )  # fmt: skip
        at = choice.at
        level = [-1] * len(loose)  # -1: left out
        for gi in range(n_items):
            k = at[gi]
            if k < 0:
                continue
            lvl = hulls[gi][k].level
            m = members[gi]
            if len(m) == 1 and m[0] not in fixed:
                level[m[0]] = lvl
                continue
            for i in m:
                level[i] = 4 if i in fixed or i in held else lvl
        dropped_units: set[int] = set()
        for c, (chain_units, h, _) in enumerate(chains):
            k = at[n_items + c]
            keep = h[k].level if k >= 0 else 0
            dropped_units.update(chain_units[keep:])
        shown = _focus(loose, relevant, level, fixed, rel, query_words, count) if query_words else {}
        marked = _marked(loose, level, fixed)
        if reserve and not marked:  # nothing was shortened after all: the note's room goes back to the items
            reserve = 0
            continue
        blocks, placed_by_section, prefix_blocks = _render(p, loose, n0, level, extra, shown, marked)
        text = "".join(blocks)
        kept = tuple(i for i in range(len(units)) if i not in dropped_units)
        messages_tokens = sum(units[i].tokens for i in kept)
        text_tokens = count(text) if count_blocks is None else count_blocks(blocks)
        used = text_tokens + messages_tokens + tools_tokens
        if used <= budget:
            break
        # The estimate was optimistic (tokens can merge across line boundaries): tighten by the overshoot
        # and select again; if nothing is left to give, the pinned content itself does not fit.
        if all(k < 0 for k in at):
            return BudgetTooSmall(required=used, budget=budget)
        goal = min(goal, choice.used) - (used - budget)

    left = goal - reserve - choice.used
    stopped = choice.stopped
    cut = choice.cut * 1000
    cut_s = f"{cut:.3g}"
    at_cut = cut * (1 - 1e-9)
    did_not_fit = f"its next step did not fit in the {left} tokens left"

    memo = p.worth

    def lost(gi: int) -> str:
        """Why a group holds its level: what its next step was worth against this window's cut."""
        if gi == stopped:
            return did_not_fit
        a = at[gi]
        if gi < n_prepared and gi not in dirty:
            found = memo.get((gi, a))
            if found is None:
                found = memo[gi, a] = _worth(hulls[gi], group_values[gi], a)
            return found[1] if found[0] >= at_cut else found[2] + cut_s
        worth = _next_worth(hulls[gi], group_values[gi], a)
        if worth >= at_cut:
            return f"its next step, worth {worth:.3g} per 1k tokens, came at this window's cut"
        return f"its next step was worth {worth:.3g} per 1k tokens, under this window's cut of {cut_s}"

    rel_get = rel.get
    item_group = [*group_of, *range(n_prepared, n_prepared + len(loose) - n0)]
    compressed = cut_down = False
    placed_sections = []
    for name, title, items in placed_by_section:
        placed = []
        section_tokens = header_tokens[name]
        for e, i, lvl in items:
            if i < 0:
                tokens = _line_tokens(e, 0)
                placed.append(Placed(e.id, 0, tokens, e.reason, 0.0))
                section_tokens += tokens
                continue
            rv = rel_get(e.id)
            note = f"; relevance {rv:.2f}" if rv else ""
            if i in fixed:
                reason = f"{e.reason}{note}; index line (L4), repeats {twin[i]}"
            elif lvl == 0:
                reason = f"{e.reason}{note}; kept whole"
            else:
                focus_note = ", the sentences that match the query" if i in shown else ""
                reason = f"{e.reason}{note}; {LEVEL_NAMES[lvl]} (L{lvl}){focus_note}: {lost(item_group[i])}"
            if i in shown:
                tokens = count(shown[i]) + line_overhead(shown[i]) + (e.handle_tokens[lvl] if i in marked else 0)
            else:
                tokens = parts[i].lines[lvl]
            placed.append(Placed(e.id, lvl, tokens, reason, round(values[i], 6)))
            section_tokens += tokens
        placed_sections.append(SectionOut(name, title, section_tokens, tuple(placed)))
    dropped: list[Omission] = []
    dropped_memo = p.dropped
    for i, lvl in enumerate(level):
        if lvl >= 0:
            if lvl > 0 and i not in fixed:
                compressed = True
                cut_down = cut_down or lvl == 4
            continue
        e = loose[i]
        if i in held:
            dropped.append(held[i])
            continue
        cut_down = True
        gi = item_group[i]
        if i < n0 and gi not in dirty and gi != stopped:  # no relevance: the same words every request
            found = dropped_memo.get(i)
            if found is None:
                before = f"{_DROPPED.get(e.section) or _dropped(e.section)}; "
                found = dropped_memo[i] = _worth(hulls[gi], group_values[gi], -1, before)
            why = found[1] if found[0] >= at_cut else found[2] + cut_s
            dropped.append(Omission(e.id, why, Omitted.OVER_BUDGET, e.section))
            continue
        rv = rel_get(e.id)
        note = f"; relevance {rv:.2f}" if rv else ""
        why = f"{_DROPPED.get(e.section) or _dropped(e.section)}{note}; {lost(gi)}"
        dropped.append(Omission(e.id, why, Omitted.OVER_BUDGET, e.section))
    dropped.sort()
    mode = "compact" if cut_down else ("balanced" if compressed or dropped_units else "full")
    prefix = "".join(prefix_blocks)
    prefix_tokens = (count(prefix) if count_blocks is None else count_blocks(prefix_blocks)) if prefix else 0
    unit_msgs = tuple(sorted(idx for i in kept for idx in units[i].indexes))
    return WindowOut(
        mode=mode,
        text=text,
        sections=tuple(placed_sections),
        kept_messages=unit_msgs,
        omitted=tuple(dropped),
        used=used,
        text_tokens=text_tokens,
        messages_tokens=messages_tokens,
        # pinned_cost is the safe per-line estimate the budget check uses; the text as a whole can count a
        # little less (BPE merges across lines), so the reported figure never exceeds what was used.
        pinned_tokens=min(pinned_cost, used),
        prefix=prefix,
        prefix_tokens=prefix_tokens,
        prefix_hash="sha256:" + hashlib.sha256(prefix.encode()).hexdigest(),
        cut=round(choice.cut * 1000, 6),
    )


def _history_chains(units: Sequence[Unit], model: ValueModel, memos: Memos) -> _Chains:
    """:func:`_chains_of`, memoised in ``memos.chains`` (read-only)."""
    key = (tuple(units), id(model))
    found = memos.chains.get(key)
    if found is not None and found[0] is model:
        return found[1]
    chains = _chains_of(units, model)
    memos.chains[key] = (model, chains)
    return chains


def _chains_of(units: Sequence[Unit], model: ValueModel) -> _Chains:
    """The droppable history as two chains (docs/design.md §3.6 step 6): old user turns and older exchanges of the
    current turn, each kept newest first, so they are dropped oldest first. Level k of a chain keeps its k
    newest units; the j-th newest is worth ``value · decay^j``."""
    chains = []
    for kind, worth in (("old-turn", model.history_turn_value), ("exchange", model.history_exchange_value)):
        newest_first = tuple(
            sorted(
                (i for i, u in enumerate(units) if u.droppable and u.kind == kind),
                key=lambda i: units[i].order,
                reverse=True,
            )
        )
        if not newest_first:
            continue
        unit_values = [worth * model.history_decay**j for j in range(len(newest_first))]
        total = sum(unit_values)
        points, cost, share = [], 0, 0.0
        for k, i in enumerate(newest_first, start=1):
            cost += units[i].tokens
            share += unit_values[k - 1] / total
            points.append(Point(cost, share, k))
        chains.append((newest_first, hull(points), total))
    return chains


def _focus(
    loose: Sequence[Element],
    relevant: Sequence[int],
    level: Sequence[int],
    fixed: AbstractSet[int],
    rel: Mapping[str, float],
    query_words: frozenset[str],
    count: Callable[[str], int],
) -> dict[int, str]:
    """Texts of the condensed or summarised elements the query matched (``relevant``: their indexes),
    focused on the query: element index → the text to show instead of its stored level (docs/design.md §3.6 step
    4: prefer the sentences that match)."""
    out: dict[int, str] = {}
    for i in relevant:
        lvl = level[i]
        if lvl not in (1, 2) or i in fixed:
            continue
        e = loose[i]
        if not rel.get(e.id) or e.texts[lvl] == e.texts[0]:
            continue
        text = focused(e.texts[0], query_words, max_tokens=e.tokens[lvl], count=count)
        if text is not None and text != e.texts[lvl]:
            out[i] = text
    return out


def _may_show_handle(e: Element, pt: Parts) -> bool:
    """Whether one of the levels an element may be placed at (its hull) shows a handle."""
    marks = e.handle_tokens
    return bool(marks) and any(marks[q.level] for q in pt.hull)


def _marked(loose: Sequence[Element], level: Sequence[int], fixed: AbstractSet[int]) -> dict[int, str]:
    """The shortened elements that show a handle (element index → handle): placed below L0 with a text that
    is not the whole one, and not an index line that repeats pinned text (the text is in the window)."""
    at = [
        i
        for i, lvl in enumerate(level)
        if lvl > 0 and i not in fixed and loose[i].handle_tokens and loose[i].handle_tokens[lvl]
    ]
    if not at:
        return {}
    named = handles([loose[i].id for i in at])
    return {i: named[loose[i].id] for i in at}


def _next_worth(h: Sequence[Point], value: float, at: int) -> float:
    """The value per 1k tokens of the step a group at hull index ``at`` did not take (0 at its top)."""
    if at + 1 >= len(h):
        return 0.0
    prev_cost, prev_share = (h[at].cost, h[at].share) if at >= 0 else (0, 0.0)
    dc = h[at + 1].cost - prev_cost
    return (INFINITE if dc <= 0 else value * (h[at + 1].share - prev_share) / dc) * 1000


def _worth(h: Sequence[Point], value: float, at: int, before: str = "") -> tuple[float, str, str]:
    """:func:`_next_worth`, and how a reason (after ``before``) says it: when it came at the window's cut,
    and, to be followed by the cut, when it was under it."""
    worth = _next_worth(h, value, at)
    return (
        worth,
        f"{before}its next step, worth {worth:.3g} per 1k tokens, came at this window's cut",
        f"{before}its next step was worth {worth:.3g} per 1k tokens, under this window's cut of ",
    )


def _render(
    p: Prepared,
    loose: Sequence[Element],
    n0: int,
    level: Sequence[int],
    extra: Sequence[Element],
    shown: Mapping[int, str],
    marked: Mapping[int, str],
) -> tuple[list[str], list[tuple[str, str, list[tuple[Element, int, int]]]], list[str]]:
    """The text's blocks (section by section; the expand note after the prefix sections when an element is
    marked), what each section placed, and the prefix's blocks."""
    add: dict[str, list[tuple[Element, int, tuple[Any, ...]]]] = {}
    for e in extra:
        add.setdefault(e.section, []).append((e, -1, _render_key(e)))
    for i in range(n0, len(loose)):
        if level[i] >= 0:
            e = loose[i]
            add.setdefault(e.section, []).append((e, i, _render_key(e)))
    blocks: list[str] = []
    prefix_blocks: list[str] = []
    sections: list[tuple[str, str, list[tuple[Element, int, int]]]] = []
    noted = not marked
    for name, title in SECTIONS:
        if not noted and name not in PREFIX_SECTIONS:
            blocks.append(EXPAND_NOTE)
            noted = True
        entries = p.render.get(name, ())
        members = [entry for entry in entries if entry[1] < 0 or level[entry[1]] >= 0]
        if name in add or name in p.unsorted:
            members += add.get(name, ())
            members.sort(key=_third)
        if not members:
            continue
        placed = [(e, i, 0 if i < 0 else level[i]) for e, i, _ in members]
        lines = [HEADERS[name]]
        for e, i, lvl in placed:
            mark = f"[{marked[i]}] " if i in marked else ""
            if i in shown:
                lines.append(f"- {mark}{shown[i]}\n")
            elif e.verbatim:
                lines.append(f"{e.texts[lvl]}\n")
            else:
                lines.append(f"- {mark}{e.texts[lvl]}\n")
        lines.append("\n")
        block = "".join(lines)
        blocks.append(block)
        if name in PREFIX_SECTIONS:
            prefix_blocks.append(block)
        sections.append((name, title, placed))
    if not noted:
        blocks.append(EXPAND_NOTE)
    return blocks, sections, prefix_blocks
