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
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
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
# The stable, cache-friendly prefix: it changes only when rules or the long-term profile change.
PREFIX_SECTIONS = ("rules", "profile")
GIVE_WAY_FIRST = frozenset({"tool_results", "hints", "summaries", "background"})
# "- " before and a newline after each item line.
LINE_OVERHEAD = 2
LEVEL_NAMES = ("original", "condensed", "summary", "key fields", "index line")


@dataclass(frozen=True)
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


@dataclass
class _State:
    """Levels, drops and a running token estimate, updated in O(1) per step."""

    level: dict[str, int]
    headers: dict[str, int]
    fixed_sections: set[str]
    total: int = 0
    visible: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)
    dropped_units: set[int] = field(default_factory=set)
    stage: int = 0  # highest pressure step applied

    lines: dict[str, tuple[int, ...]] = field(default_factory=dict)  # line tokens per level, per element

    def show(self, e: Element) -> None:
        if self.visible.get(e.section, 0) == 0 and e.section not in self.fixed_sections:
            self.total += self.headers[e.section]
        self.visible[e.section] = self.visible.get(e.section, 0) + 1
        line = self.lines[e.id] = tuple(_line_tokens(e, lvl) for lvl in range(5))
        self.total += line[self.level[e.id]]

    def set_level(self, e: Element, level: int) -> None:
        current = self.level[e.id]
        if level <= current or e.id in self.dropped:
            return
        line = self.lines[e.id]
        self.total += line[level] - line[current]
        self.level[e.id] = level

    def drop(self, e: Element, reason: str) -> None:
        if e.id in self.dropped:
            return
        self.dropped[e.id] = reason
        self.total -= self.lines[e.id][self.level[e.id]]
        self.visible[e.section] -= 1
        if self.visible[e.section] == 0 and e.section not in self.fixed_sections:
            self.total -= self.headers[e.section]

    def drop_unit(self, index: int, unit: Unit) -> None:
        self.dropped_units.add(index)
        self.total -= unit.tokens


def _line_tokens(e: Element, level: int) -> int:
    return e.tokens[level] + (0 if e.verbatim else LINE_OVERHEAD)


def _render_line(e: Element, level: int) -> str:
    return f"{e.texts[level]}\n" if e.verbatim else f"- {e.texts[level]}\n"


def assemble(
    *,
    elements: Sequence[Element],
    units: Sequence[Unit],
    budget: int,
    tools_tokens: int,
    count: Callable[[str], int],
) -> WindowOut | BudgetTooSmall:
    header_tokens = {name: count(f"## {title}\n") + 1 for name, title in SECTIONS}
    pinned = [e for e in elements if e.pinned]
    loose = [e for e in elements if not e.pinned]
    fixed_units = [i for i, u in enumerate(units) if not u.droppable]
    pinned_sections = {e.section for e in pinned}
    pinned_cost = (
        sum(_line_tokens(e, 0) for e in pinned)
        + sum(header_tokens[s] for s in pinned_sections)
        + sum(units[i].tokens for i in fixed_units)
        + tools_tokens
    )
    if pinned_cost > budget:
        return BudgetTooSmall(required=pinned_cost, budget=budget)

    state = _State(
        level={e.id: (4 if e.repeats else 0) for e in loose},
        headers=header_tokens,
        fixed_sections=pinned_sections,
        total=pinned_cost + sum(u.tokens for u in units if u.droppable),
    )
    for e in loose:
        state.show(e)
    groups = _groups(loose)

    def estimate() -> int:
        return state.total

    current_target = [budget]  # shared with the steps, so a round can be applied at once when it must
    steps = _steps(groups, units, state, current_target)

    def give_way_until(target: int) -> bool:
        """Apply steps until the estimate fits ``target``; False if no step was left to apply."""
        current_target[0] = target
        moved = False
        while estimate() > target:
            if next(steps, None) is None:
                return moved
            moved = True
        return True

    give_way_until(budget)
    while True:
        text, sections, prefix = _render(elements, state)
        kept = tuple(i for i in range(len(units)) if i not in state.dropped_units)
        messages_tokens = sum(units[i].tokens for i in kept)
        text_tokens = count(text)
        used = text_tokens + messages_tokens + tools_tokens
        if used <= budget:
            break
        # The estimate was optimistic (tokens can merge across line boundaries): tighten by the overshoot
        # and keep giving way; if nothing is left to give, the pinned content itself does not fit.
        if not give_way_until(estimate() - (used - budget)):
            return BudgetTooSmall(required=used, budget=budget)

    mode = "full" if state.stage == 0 else ("compact" if state.stage >= 4 else "balanced")
    omitted = tuple(sorted(state.dropped.items()))
    placed_sections = []
    for name, title, items in sections:
        placed = tuple(
            Placed(
                e.id,
                lvl,
                _line_tokens(e, lvl),
                e.reason
                if lvl == 0
                else f"{e.reason}; {LEVEL_NAMES[lvl]} (L{lvl})"
                + (f", repeats pinned {e.repeats}" if e.repeats and lvl == 4 else ""),
            )
            for e, lvl in items
        )
        placed_sections.append(SectionOut(name, title, header_tokens[name] + sum(p.tokens for p in placed), placed))
    prefix_tokens = count(prefix) if prefix else 0
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


def _groups(loose: Sequence[Element]) -> list[list[Element]]:
    """Related items (same ``group``) move together; everything else is a group of one."""
    grouped: dict[str, list[Element]] = {}
    out: list[list[Element]] = []
    for e in loose:
        if e.group is None:
            out.append([e])
        else:
            if e.group not in grouped:
                grouped[e.group] = []
                out.append(grouped[e.group])
            grouped[e.group].append(e)
    return out


def _give_way_key(group: Sequence[Element]) -> tuple[Any, ...]:
    """Sort key, least important first: later sections first, then lower importance, then id."""
    rank = min(SECTION_RANK[e.section] for e in group)
    importance = max(e.importance for e in group)
    return (-rank, importance, min(e.id for e in group))


def _steps(groups: list[list[Element]], units: Sequence[Unit], state: _State, target: list[int]) -> Iterator[bool]:
    first = sorted((g for g in groups if all(e.section in GIVE_WAY_FIRST for e in g)), key=_give_way_key)
    later = sorted((g for g in groups if not all(e.section in GIVE_WAY_FIRST for e in g)), key=_give_way_key)
    droppable = sorted((i for i, u in enumerate(units) if u.droppable), key=lambda i: units[i].order)
    old_turns = [i for i in droppable if units[i].kind == "old-turn"]
    exchanges = [i for i in droppable if units[i].kind == "exchange"]

    for i in old_turns:
        state.stage = max(state.stage, 1)
        state.drop_unit(i, units[i])
        yield True
    ordered = (*first, *later)
    for level in (1, 2, 3):
        yield from _raise_all(ordered, level, 2, state, target)
    for i in exchanges:
        state.stage = max(state.stage, 3)
        state.drop_unit(i, units[i])
        yield True
    yield from _raise_all(ordered, 4, 4, state, target)
    for g in (*first, *later):
        state.stage = 5
        for e in g:
            state.drop(e, f"dropped: over budget ({e.section}, lowest priority first)")
        yield True


def _raise_all(
    groups: Sequence[list[Element]], level: int, stage: int, state: _State, target: list[int]
) -> Iterator[bool]:
    """Raise groups to ``level`` in give-way order, one step per group — or the whole round in one step
    when even all of it would not reach the target (the common case under heavy pressure)."""
    levels, lines = state.level, state.lines
    pending = []
    saving = 0
    for g in groups:
        moved = False
        for e in g:
            current = levels[e.id]
            if current < level and e.id not in state.dropped:
                line = lines[e.id]
                saving += line[current] - line[level]
                moved = True
        if moved:
            pending.append(g)
    if not pending:
        return
    if state.total - saving > target[0]:
        state.stage = max(state.stage, stage)
        for g in pending:
            for e in g:
                state.set_level(e, level)
        yield True
        return
    for g in pending:
        state.stage = max(state.stage, stage)
        for e in g:
            state.set_level(e, level)
        yield True


def _render(
    elements: Sequence[Element], state: _State
) -> tuple[str, list[tuple[str, str, list[tuple[Element, int]]]], str]:
    per_section: dict[str, list[Element]] = {}
    for e in elements:
        if e.id not in state.dropped:
            per_section.setdefault(e.section, []).append(e)
    blocks: list[str] = []
    prefix_blocks: list[str] = []
    sections: list[tuple[str, str, list[tuple[Element, int]]]] = []
    for name, title in SECTIONS:
        members = sorted(per_section.get(name, ()), key=lambda e: (e.order, e.id))
        if not members:
            continue
        placed = [(e, 0 if e.pinned else state.level[e.id]) for e in members]
        block = f"## {title}\n" + "".join(_render_line(e, lvl) for e, lvl in placed) + "\n"
        blocks.append(block)
        if name in PREFIX_SECTIONS:
            prefix_blocks.append(block)
        sections.append((name, title, placed))
    return "".join(blocks), sections, "".join(prefix_blocks)
