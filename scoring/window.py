"""Window assembly (DESIGN §3.6): select → compress → order → render, over plain values.

The service fetches rows and the effective profile, turns them into ``Element``s (one per item, profile
entry or request field, each with its five levels precomputed) and history ``Unit``s, and calls
:func:`assemble`. Everything here is deterministic: the same input gives byte-identical output.

Pressure is relieved in this order, stopping as soon as the window fits:
  1. drop old user turns of the history, oldest first;
  2. raise items to L1, then L2, then L3 — within each level first the sections that give way first
     (tool results, hints, summaries, background), then the rest; within those, lower priority first;
  3. drop older exchanges of the current turn, oldest first;
  4. raise items to L4 (index lines), same order;
  5. drop items, same order, each with its reason.
Mode: ``full`` when nothing had to give way, ``compact`` once step 4 or 5 was needed, else ``balanced``.
Pinned elements (latest input, system rules, hard constraints, verified facts, decisions, goal, plan) are
always at L0; if they alone do not fit, the result is :class:`BudgetTooSmall`.

What depends on the elements alone (line costs per level, groups, priority ranks, render order) is worked
out by :func:`prepare`; :func:`assemble_prepared` then adds what one request brings (its pinned elements,
relevance to its query, items repeating its text), so a caller that assembles many windows over the same
elements — the service's per-user cache — pays per request only for the steps the budget forces.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter, sub
from typing import Any

from scoring.history import Unit

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
GIVE_WAY_FIRST = frozenset({"tool_results", "hints", "summaries", "background"})
# "- " before and a newline after each item line.
LINE_OVERHEAD = 2
LEVEL_NAMES = ("original", "condensed", "summary", "key fields", "index line")
DROPPED = {name: f"dropped: over budget ({name}, lowest priority first)" for name, _ in SECTIONS}


@dataclass(frozen=True, slots=True)
class Element:
    id: str
    section: str
    texts: tuple[str, ...]  # L0..L4
    tokens: tuple[int, ...]  # L0..L4
    pinned: bool = False
    reason: str = ""
    importance: tuple[Any, ...] = ()  # higher is more important (authority, confidence, recency, relevance)
    order: tuple[Any, ...] = ()  # render order inside the section
    group: str | None = None  # related items share a level
    repeats: str | None = None  # the pinned element it repeats: compressed hardest
    verbatim: bool = False  # rendered as is, without "- " (the latest input)


@dataclass(frozen=True)
class Placed:
    id: str
    level: int
    tokens: int
    reason: str


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
    omitted: tuple[tuple[str, str], ...]
    used: int
    text_tokens: int
    messages_tokens: int
    pinned_tokens: int
    prefix: str
    prefix_tokens: int
    prefix_hash: str


@dataclass(frozen=True)
class BudgetTooSmall:
    required: int
    budget: int


def _line_tokens(e: Element, level: int) -> int:
    return e.tokens[level] + (0 if e.verbatim else LINE_OVERHEAD)


def _render_line(e: Element, level: int) -> str:
    return f"{e.texts[level]}\n" if e.verbatim else f"- {e.texts[level]}\n"


def _render_key(e: Element) -> tuple[Any, ...]:
    return (e.order, e.id)


def _give_way_key(e: Element) -> tuple[Any, ...]:
    """Where a loose element of its own stands when giving way (lower goes first): the give-way-first
    sections, then later sections, then lower importance."""
    return (0 if e.section in GIVE_WAY_FIRST else 1, -SECTION_RANK[e.section], e.importance)


def _contains(ordered: list[tuple[Any, ...]], key: tuple[Any, ...]) -> bool:
    at = bisect_left(ordered, key)
    return at < len(ordered) and ordered[at] == key


class Prepared:
    """The elements of a window with everything that does not depend on the request worked out: line
    tokens per level, groups, what each group saves at each level, render order. Read-only once built
    (the give-way ranks are filled in on first use), so one instance can serve concurrent requests."""

    def __init__(self, elements: Sequence[Element]) -> None:
        self.pinned = tuple(e for e in elements if e.pinned)
        loose = self.loose = tuple(e for e in elements if not e.pinned)
        n = len(loose)
        self.index = {e.id: i for i, e in enumerate(loose)}
        overhead = [0 if e.verbatim else LINE_OVERHEAD for e in loose]
        lines = self.lines = tuple(
            [e.tokens[lvl] + o for e, o in zip(loose, overhead, strict=True)] for lvl in range(5)
        )
        self.sections = [e.section for e in loose]
        self.pinned_lines = sum(_line_tokens(e, 0) for e in self.pinned)
        self.pinned_sections = frozenset(e.section for e in self.pinned)
        self.loose_sections: dict[str, int] = {}
        for section in self.sections:
            self.loose_sections[section] = self.loose_sections.get(section, 0) + 1

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
        self.single = [m[0] if len(m) == 1 else -1 for m in self.members]  # the only member, -1 if several
        self.group_of = list(range(n))
        if len(self.members) != n:
            for g, m in enumerate(self.members):
                for i in m:
                    self.group_of[i] = g

        # An element repeating a pinned one starts at L4; the others start at L0 and, before a round of
        # raising to level L starts, all stand at L-1 (rounds run in order and only the last one stops midway).
        self.initial = [4 if e.repeats else 0 for e in loose]
        self.repeating = [i for i, start in enumerate(self.initial) if start == 4]
        diffs: list[list[int]] = [[]]
        for lvl in range(1, 5):
            diff = list(map(sub, lines[lvl - 1], lines[lvl]))
            for i in self.repeating:
                diff[i] = 0
            diffs.append(diff)
        moving = [0 if start else 1 for start in self.initial]
        if len(self.members) == n:  # only groups of one: group g is element g
            self.saving = tuple(diffs)
            self.nonrepeat = moving
        else:
            self.saving = (
                [],
                *(
                    [d[i] if i >= 0 else sum(d[j] for j in self.members[g]) for g, i in enumerate(self.single)]
                    for d in diffs[1:]
                ),
            )
            self.nonrepeat = [sum(moving[i] for i in m) for m in self.members]
        self.round_saving = [sum(d) for d in diffs]
        self.start_total = sum(lines[0]) + sum(lines[4][i] - lines[0][i] for i in self.repeating)

        by_section: dict[str, list[tuple[Element, int]]] = {}
        for e in self.pinned:
            by_section.setdefault(e.section, []).append((e, -1))
        for i, e in enumerate(loose):
            by_section.setdefault(e.section, []).append((e, i))
        self.render: dict[str, list[tuple[Element, int]]] = {}
        self.unsorted: set[str] = set()  # sections whose orders do not compare: sorted (and failing) at render
        for name, entries in by_section.items():
            keys = [_render_key(e) for e, _ in entries]
            try:
                self.render[name] = [entries[k] for k in sorted(range(len(entries)), key=keys.__getitem__)]
            except TypeError:
                self.render[name] = entries
                self.unsorted.add(name)
        self._ranks: tuple[list[int], list[int], dict[int, tuple[int, ...]], list[int], list[int]] | None = None
        self._omitted: tuple[list[tuple[str, str]], Callable[[bytearray], Sequence[int]]] | None = None
        self._parent: Prepared | None = None  # an extended set's: its ranks come from the parent's
        self._distinct: list[tuple[Any, ...]] = []  # the distinct give-way keys, in order (with ranks)
        self._sorted_ids: list[str] = []  # each group's smallest id, in order (with ranks)

    def extended(self, extra: Sequence[Element]) -> Prepared:
        """These elements plus ``extra`` loose ones (ungrouped, repeating nothing), as :func:`prepare`
        would give them, built from this one's parts: copies of its lists with the extras appended, so
        a request that adds a few elements to a large prepared set does not pay for preparing it again."""
        if any(e.pinned or e.group is not None or e.repeats for e in extra):
            raise ValueError("extra elements must be loose, ungrouped and repeat nothing")
        if not extra:
            return self
        new = object.__new__(Prepared)
        n, g0 = len(self.loose), len(self.members)
        new.pinned = self.pinned
        new.loose = self.loose + tuple(extra)
        new.index = dict(self.index)
        for k, e in enumerate(extra):
            if e.id in new.index:
                raise ValueError(f"duplicate element id {e.id!r}")
            new.index[e.id] = n + k
        extra_lines = [[e.tokens[lvl] + (0 if e.verbatim else LINE_OVERHEAD) for e in extra] for lvl in range(5)]
        new.lines = tuple(old + add for old, add in zip(self.lines, extra_lines, strict=True))
        new.sections = self.sections + [e.section for e in extra]
        new.pinned_lines, new.pinned_sections = self.pinned_lines, self.pinned_sections
        new.loose_sections = dict(self.loose_sections)
        for e in extra:
            new.loose_sections[e.section] = new.loose_sections.get(e.section, 0) + 1
        new.members = self.members + [(n + k,) for k in range(len(extra))]
        new.single = self.single + [n + k for k in range(len(extra))]
        new.group_of = self.group_of + [g0 + k for k in range(len(extra))]
        new.initial = self.initial + [0] * len(extra)
        new.repeating = self.repeating
        diffs = [[]] + [list(map(sub, extra_lines[lvl - 1], extra_lines[lvl])) for lvl in range(1, 5)]
        new.saving = tuple(old + add for old, add in zip(self.saving, diffs, strict=True))
        new.nonrepeat = self.nonrepeat + [1] * len(extra)
        new.round_saving = [total + sum(d) for total, d in zip(self.round_saving, diffs, strict=True)]
        new.start_total = self.start_total + sum(extra_lines[0])
        new.render = dict(self.render)
        new.unsorted = set(self.unsorted)
        for name in {e.section for e in extra}:
            entries = list(self.render.get(name, ())) + [(e, n + k) for k, e in enumerate(extra) if e.section == name]
            if name not in new.unsorted:
                try:
                    entries.sort(key=lambda entry: _render_key(entry[0]))
                except TypeError:
                    new.unsorted.add(name)
            new.render[name] = entries
        new._ranks = None
        new._omitted = None
        new._parent, new._distinct, new._sorted_ids = self, [], []
        return new

    def ranks(self) -> tuple[list[int], list[int], dict[int, tuple[int, ...]], list[int], list[int]]:
        """Per group: the rank of (gives way first, section, highest importance) and the rank of its smallest
        id; per group of several, the members holding its highest importance; the group of each id rank;
        and the give-way order without relevance. Worked out on first use: a window that fits needs none."""
        if self._ranks is None:
            if self._parent is not None:
                self._ranks = self._extended_ranks(self._parent)
                return self._ranks
            loose, members = self.loose, self.members
            keys: list[tuple[Any, ...]] = []
            min_ids: list[str] = []
            leaders: dict[int, tuple[int, ...]] = {}
            for g, i in enumerate(self.single):
                if i >= 0:
                    e = loose[i]
                    keys.append(_give_way_key(e))
                    min_ids.append(e.id)
                    continue
                group = [loose[j] for j in members[g]]
                first = all(e.section in GIVE_WAY_FIRST for e in group)
                top = max(e.importance for e in group)
                keys.append((0 if first else 1, -min(SECTION_RANK[e.section] for e in group), top))
                min_ids.append(min(e.id for e in group))
                leaders[g] = tuple(j for j in members[g] if loose[j].importance == top)
            n = len(keys)
            rank = [0] * n
            distinct: list[tuple[Any, ...]] = []
            for g in sorted(range(n), key=keys.__getitem__):
                if not distinct or keys[g] != distinct[-1]:
                    distinct.append(keys[g])
                rank[g] = len(distinct) - 1
            group_at = sorted(range(n), key=min_ids.__getitem__)
            self._distinct, self._sorted_ids = distinct, [min_ids[g] for g in group_at]
            self._ranks = self._with_base(rank, leaders, group_at)
        return self._ranks

    def _with_base(
        self, rank: list[int], leaders: dict[int, tuple[int, ...]], group_at: list[int]
    ) -> tuple[list[int], list[int], dict[int, tuple[int, ...]], list[int], list[int]]:
        n = len(rank)
        id_rank = [0] * n
        for r, g in enumerate(group_at):
            id_rank[g] = r
        base = [group_at[k % n] for k in sorted(r * n + i for r, i in zip(rank, id_rank, strict=True))]
        return rank, id_rank, leaders, group_at, base

    def _extended_ranks(
        self, parent: Prepared
    ) -> tuple[list[int], list[int], dict[int, tuple[int, ...]], list[int], list[int]]:
        """:meth:`ranks` of an :meth:`extended` set from its parent's: the extras are groups of one at the
        end, so the parent's ranks are shifted past the extras' new keys and their ids merged in."""
        prank, _, leaders, pgroup_at, _ = parent.ranks()
        g0 = len(prank)
        extra = self.loose[len(parent.loose) :]
        keys = [_give_way_key(e) for e in extra]
        old = parent._distinct
        added = sorted({k for k in keys if not _contains(old, k)})
        distinct = sorted(old + added) if added else old
        shift = [r + bisect_left(added, key) for r, key in enumerate(old)] if added else None
        rank = [shift[r] for r in prank] if shift is not None else list(prank)
        rank += [bisect_left(distinct, k) for k in keys]
        # Ids: merge the extras (groups g0, g0+1, …) into the parent's groups in id order.
        ids, group_at = list(parent._sorted_ids), list(pgroup_at)
        for k, e in sorted(enumerate(extra), key=lambda x: x[1].id):
            at = bisect_left(ids, e.id)
            ids.insert(at, e.id)
            group_at.insert(at, g0 + k)
        self._distinct, self._sorted_ids = distinct, ids
        return self._with_base(rank, leaders, group_at)

    def order(self, relevance: Sequence[float] | None) -> list[int]:
        """Groups in give-way order, least important first: later sections first (the give-way-first ones
        before all others), then lower importance, then lower relevance among the members holding the
        group's highest importance, then smaller id."""
        rank, id_rank, leaders, group_at, base = self.ranks()
        if not relevance or not any(relevance):
            return base
        if not leaders and len(relevance) == len(rank):
            lead = list(relevance)
        else:
            lead = [
                relevance[i] if i >= 0 else max(relevance[j] for j in leaders[g]) for g, i in enumerate(self.single)
            ]
        n = len(rank)
        if type(sum(lead)) is not int or min(lead) < 0:
            return sorted(range(n), key=lambda g: (rank[g], lead[g], id_rank[g]))
        # Integer relevance: one int per group, (rank, relevance, id rank), so the sort compares plain ints.
        span = max(lead) + 1
        keys = [(r * span + x) * n + i for r, x, i in zip(rank, lead, id_rank, strict=True)]
        keys.sort()
        return [group_at[k % n] for k in keys]

    def omitted(self, dropped: bytearray) -> tuple[tuple[str, str], ...]:
        """(id, reason) of the dropped loose elements, by id."""
        if not any(dropped):
            return ()
        if self._omitted is None:
            loose = self.loose
            by_id = sorted(range(len(loose)), key=lambda i: loose[i].id)
            pairs = [(loose[i].id, DROPPED[loose[i].section]) for i in by_id]
            gather: Callable[[bytearray], Sequence[int]] = (
                itemgetter(*by_id) if len(by_id) > 1 else (lambda flags: [flags[i] for i in by_id])
            )
            self._omitted = (pairs, gather)
        pairs, pick = self._omitted
        return tuple(compress(pairs, pick(dropped)))


def prepare(elements: Sequence[Element]) -> Prepared:
    """The request-independent part of :func:`assemble` over ``elements`` (ids must be unique)."""
    return Prepared(elements)


class _Run:
    """One assembly's moving parts: levels, drops and a running token estimate, updated in O(1) per step."""

    __slots__ = ("dropped", "dropped_units", "level", "stage", "total", "visible")

    def __init__(self, level: list[int], total: int, visible: dict[str, int]) -> None:
        self.level = level
        self.total = total
        self.visible = visible
        self.dropped = bytearray(len(level))
        self.dropped_units: set[int] = set()
        self.stage = 0  # highest pressure step applied


def assemble(
    *,
    elements: Sequence[Element],
    units: Sequence[Unit],
    budget: int,
    tools_tokens: int,
    count: Callable[[str], int],
) -> WindowOut | BudgetTooSmall:
    return assemble_prepared(prepare(elements), units=units, budget=budget, tools_tokens=tools_tokens, count=count)


def assemble_prepared(
    prepared: Prepared,
    *,
    extra: Sequence[Element] = (),
    relevance: Sequence[float] | None = None,
    repeats: Mapping[str, str] | None = None,
    units: Sequence[Unit],
    budget: int,
    tools_tokens: int,
    count: Callable[[str], int],
    count_blocks: Callable[[Sequence[str]], int] | None = None,
) -> WindowOut | BudgetTooSmall:
    """:func:`assemble` over the prepared elements plus this request's: ``extra`` pinned elements,
    ``relevance`` (a number per loose element, in ``prepared.loose`` order, that breaks ties of importance
    when choosing what gives way: higher stays longer) and ``repeats`` (loose element id → the pinned element it
    repeats, for elements that do not say so themselves).

    ``count_blocks`` counts a text given as its section blocks. Each block ends with a blank line and the
    next starts with ``## ``; a BPE whose pre-tokenizer never puts a newline and a following ``#`` into one
    piece (o200k_base, cl100k_base) counts the text as the sum of its blocks, so a caller can count each
    block once and reuse it. Without it the joined text is counted."""
    p = prepared
    if any(not e.pinned for e in extra):
        raise ValueError("extra elements must be pinned")
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

    lines, loose = p.lines, p.loose
    repeated = {
        p.index[i]: pinned for i, pinned in (repeats or {}).items() if i in p.index and not loose[p.index[i]].repeats
    }
    level = list(p.initial)
    total = pinned_cost + sum(u.tokens for u in units if u.droppable) + p.start_total
    total += sum(header_tokens[s] for s in p.loose_sections if s not in pinned_sections)
    for i in repeated:
        level[i] = 4
        total += lines[4][i] - lines[0][i]
    run = _Run(level, total, dict(p.loose_sections))

    target = [budget]  # shared with the steps, so that they stop as soon as the window fits
    steps = _steps(p, run, units, relevance, repeated, target, header_tokens, pinned_sections)

    def give_way_until(goal: int) -> bool:
        """Apply steps until the estimate fits ``goal``; False if no step was left to apply."""
        target[0] = goal
        moved = False
        while run.total > goal:
            if next(steps, None) is None:
                return moved
            moved = True
        return True

    give_way_until(budget)
    while True:
        blocks, sections, prefix_blocks = _render(p, run, extra)
        text = "".join(blocks)
        kept = tuple(i for i in range(len(units)) if i not in run.dropped_units)
        messages_tokens = sum(units[i].tokens for i in kept)
        text_tokens = count(text) if count_blocks is None else count_blocks(blocks)
        used = text_tokens + messages_tokens + tools_tokens
        if used <= budget:
            break
        # The estimate was optimistic (tokens can merge across line boundaries): tighten by the overshoot
        # and keep giving way; if nothing is left to give, the pinned content itself does not fit.
        if not give_way_until(run.total - (used - budget)):
            return BudgetTooSmall(required=used, budget=budget)

    mode = "full" if run.stage == 0 else ("compact" if run.stage >= 4 else "balanced")
    omitted = p.omitted(run.dropped)
    placed_sections = []
    for name, title, items in sections:
        placed = []
        for e, i, lvl in items:
            reason = e.reason
            if lvl:
                reason = f"{reason}; {LEVEL_NAMES[lvl]} (L{lvl})"
                twin = e.repeats or repeated.get(i)
                if twin and lvl == 4:
                    reason += f", repeats pinned {twin}"
            placed.append(Placed(e.id, lvl, _line_tokens(e, 0) if i < 0 else lines[lvl][i], reason))
        section_tokens = header_tokens[name] + sum(x.tokens for x in placed)
        placed_sections.append(SectionOut(name, title, section_tokens, tuple(placed)))
    prefix = "".join(prefix_blocks)
    prefix_tokens = (count(prefix) if count_blocks is None else count_blocks(prefix_blocks)) if prefix else 0
    unit_msgs = tuple(sorted(idx for i in kept for idx in units[i].indexes))
    return WindowOut(
        mode=mode,
        text=text,
        sections=tuple(placed_sections),
        kept_messages=unit_msgs,
        omitted=omitted,
        used=used,
        text_tokens=text_tokens,
        messages_tokens=messages_tokens,
        pinned_tokens=pinned_cost,
        prefix=prefix,
        prefix_tokens=prefix_tokens,
        prefix_hash="sha256:" + hashlib.sha256(prefix.encode()).hexdigest(),
    )


def _steps(
    p: Prepared,
    run: _Run,
    units: Sequence[Unit],
    relevance: Sequence[float] | None,
    repeated: Mapping[int, str],
    target: list[int],
    header_tokens: Mapping[str, int],
    pinned_sections: frozenset[str],
) -> Iterator[bool]:
    """The pressure steps in order (module docstring). A step is applied and, once the estimate fits the
    current target, the generator pauses; it resumes where it stopped if the target is lowered."""
    droppable = sorted((i for i, u in enumerate(units) if u.droppable), key=lambda i: units[i].order)
    lines, members = p.lines, p.members
    # Groups whose members all start at L4 have nothing to raise.
    nonrepeat = list(p.nonrepeat)
    adjust: list[dict[int, int]] = [{} for _ in range(5)]
    for i in repeated:
        g = p.group_of[i]
        nonrepeat[g] -= 1
        for lvl in range(1, 5):
            adjust[lvl][g] = adjust[lvl].get(g, 0) + lines[lvl - 1][i] - lines[lvl][i]
    raisable = sum(1 for n in nonrepeat if n)
    order: list[int] | None = None
    applied = False  # a step was applied since the last pause

    for i in droppable:
        if units[i].kind == "old-turn":
            run.stage = max(run.stage, 1)
            run.dropped_units.add(i)
            run.total -= units[i].tokens
            applied = True
            if run.total <= target[0]:
                applied = False
                yield True
    for lvl in (1, 2, 3, 4):
        if lvl == 4:
            for i in droppable:
                if units[i].kind == "exchange":
                    run.stage = max(run.stage, 3)
                    run.dropped_units.add(i)
                    run.total -= units[i].tokens
                    applied = True
                    if run.total <= target[0]:
                        applied = False
                        yield True
        if not raisable:
            continue
        stage = 2 if lvl < 4 else 4
        saving = p.round_saving[lvl] - sum(adjust[lvl].values())
        if run.total - saving > target[0]:
            # Even all of this round would not reach the target: apply it at once, as one step.
            run.stage = max(run.stage, stage)
            run.total -= saving
            run.level = [lvl] * len(run.level)
            for i in p.repeating:
                run.level[i] = 4
            for i in repeated:
                run.level[i] = 4
            applied = True
            if run.total <= target[0]:
                applied = False
                yield True
            continue
        if order is None:
            order = p.order(relevance)
        saving_of, adjust_of, level = p.saving[lvl], adjust[lvl], run.level
        for g in order:
            if not nonrepeat[g]:
                continue
            run.stage = max(run.stage, stage)
            run.total -= saving_of[g] - adjust_of.get(g, 0)
            for i in members[g]:
                if level[i] < lvl:
                    level[i] = lvl
            applied = True
            if run.total <= target[0]:
                applied = False
                yield True
    if order is None:
        order = p.order(relevance)
    level, visible, dropped = run.level, run.visible, run.dropped
    for g in order:
        run.stage = 5
        for i in members[g]:
            if dropped[i]:
                continue
            dropped[i] = 1
            run.total -= lines[level[i]][i]
            section = p.sections[i]
            visible[section] -= 1
            if visible[section] == 0 and section not in pinned_sections:
                run.total -= header_tokens[section]
        applied = True
        if run.total <= target[0]:
            applied = False
            yield True
    if applied:
        yield True  # the caller counts the steps applied since the last pause as progress


def _render(
    p: Prepared, run: _Run, extra: Sequence[Element]
) -> tuple[list[str], list[tuple[str, str, list[tuple[Element, int, int]]]], list[str]]:
    level, dropped = run.level, run.dropped
    extra_in: dict[str, list[Element]] = {}
    for e in extra:
        extra_in.setdefault(e.section, []).append(e)
    blocks: list[str] = []
    prefix_blocks: list[str] = []
    sections: list[tuple[str, str, list[tuple[Element, int, int]]]] = []
    for name, title in SECTIONS:
        entries = p.render.get(name, ())
        members = [(e, i) for e, i in entries if i < 0 or not dropped[i]]
        if name in extra_in or name in p.unsorted:
            members += [(e, -1) for e in extra_in.get(name, ())]
            members.sort(key=lambda entry: _render_key(entry[0]))
        if not members:
            continue
        placed = [(e, i, 0 if i < 0 else level[i]) for e, i in members]
        block = HEADERS[name] + "".join(_render_line(e, lvl) for e, _, lvl in placed) + "\n"
        blocks.append(block)
        if name in PREFIX_SECTIONS:
            prefix_blocks.append(block)
        sections.append((name, title, placed))
    return blocks, sections, prefix_blocks
