"""The pure window pipeline: properties over random item sets and budgets, and examples of each rule."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import history
from scoring import window as W
from scoring.window import BudgetTooSmall, Element, WindowOut, assemble


def count(text: str) -> int:
    """A stand-in tokenizer: one token per 4 characters, rounded up (not additive across lines either)."""
    return (len(text) + 3) // 4


T0 = datetime(2026, 11, 1, tzinfo=UTC)


def el(
    eid: str,
    section: str,
    text: str,
    *,
    pinned: bool = False,
    importance: int = 0,
    group: str | None = None,
    repeats: str | None = None,
) -> Element:
    levels = (text, text[: max(1, len(text) // 2)], text[: max(1, len(text) // 5)], text[:40], f"[ctx {eid}]")
    tokens = tuple(count(t) for t in levels)
    return Element(
        eid,
        section,
        levels,
        tokens,
        pinned=pinned,
        reason="pinned" if pinned else section,
        importance=(importance,),
        order=(T0 + timedelta(minutes=importance), eid),
        group=group,
        repeats=repeats,
    )


SECTIONS = [
    "rules",
    "profile",
    "goal",
    "constraints",
    "plan",
    "facts",
    "evidence",
    "tool_results",
    "hints",
    "summaries",
    "background",
]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Element], list[dict[str, Any]], int]:
    n = draw(st.integers(0, 30))
    elements = [el("input", "input", draw(st.text(min_size=1, max_size=200)), pinned=True)]
    for i in range(n):
        elements.append(
            el(
                f"i{i:02d}",
                draw(st.sampled_from(SECTIONS)),
                draw(st.text(min_size=1, max_size=600)),
                pinned=draw(st.booleans()) and draw(st.booleans()),
                importance=draw(st.integers(0, 5)),
                group=draw(st.sampled_from([None, None, "g1", "g2"])),
            )
        )
    messages: list[dict[str, Any]] = []
    for t in range(draw(st.integers(0, 4))):
        messages.append({"role": "user", "content": draw(st.text(max_size=80))})
        for c in range(draw(st.integers(0, 2))):
            cid = f"c{t}{c}"
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": cid, "function": {"name": "f", "arguments": "{}"}}],
                }
            )
            messages.append({"role": "tool", "tool_call_id": cid, "content": draw(st.text(max_size=200))})
        if draw(st.booleans()):
            messages.append({"role": "assistant", "content": draw(st.text(max_size=80))})
    budget = draw(st.integers(1, 6000))
    return elements, messages, budget


def run(
    elements: list[Element], messages: list[dict[str, Any]], budget: int, tools: int = 0
) -> WindowOut | BudgetTooSmall:
    history.validate(messages)
    tokens = [history.message_tokens(m, count) for m in messages]
    return assemble(
        elements=elements, units=history.units(messages, tokens), budget=budget, tools_tokens=tools, count=count
    )


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_properties(scenario: tuple[list[Element], list[dict[str, Any]], int]) -> None:
    elements, messages, budget = scenario
    out = run(elements, messages, budget)
    again = run(elements, messages, budget)
    assert out == again  # deterministic
    if isinstance(out, BudgetTooSmall):
        assert out.required > budget
        return
    assert out.used <= budget
    assert out.used == count(out.text) + out.messages_tokens
    for e in elements:
        if e.pinned:
            assert e.texts[0] in out.text  # verbatim
    kept = set(out.kept_messages)
    # no exchange split: a tool result is kept exactly when its call is
    calls = {c["id"]: i for i, m in enumerate(messages) for c in m.get("tool_calls") or ()}
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            assert (i in kept) == (calls[m["tool_call_id"]] in kept)
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if users:
        assert users[-1] in kept  # the current user turn is never dropped
    assert out.text.startswith(out.prefix)


def test_modes_and_levels() -> None:
    loose = [el(f"t{i}", "tool_results", "benchmark " * 60, importance=i) for i in range(5)]
    base = [el("input", "input", "which cache?", pinned=True), el("hc", "constraints", "no Redis Cluster", pinned=True)]
    full = run(base + loose, [], 10_000)
    assert isinstance(full, WindowOut) and full.mode == "full"
    levels = {p.id: p.level for s in full.sections for p in s.items}
    assert all(levels[f"t{i}"] == 0 for i in range(5))
    balanced = run(base + loose, [], full.used * 2 // 3)
    assert isinstance(balanced, WindowOut) and balanced.mode == "balanced"
    levels = {p.id: p.level for s in balanced.sections for p in s.items}
    assert levels["t0"] >= 1 and levels["t0"] >= levels["t4"]  # lower importance gives way first
    compact = run(base + loose, [], 60)
    assert isinstance(compact, WindowOut) and compact.mode == "compact"
    levels = {p.id: p.level for s in compact.sections for p in s.items}
    assert levels["t0"] == 4 and all(v >= 3 for k, v in levels.items() if k.startswith("t"))
    assert "no Redis Cluster" in compact.text
    tiny = run(base + loose, [], 30)
    assert isinstance(tiny, WindowOut)
    assert {i for i, _ in tiny.omitted} <= {f"t{i}" for i in range(5)} and tiny.omitted
    assert all("over budget" in r for _, r in tiny.omitted)
    too_small = run(base + loose, [], 5)
    assert isinstance(too_small, BudgetTooSmall) and too_small.required > 5


def test_related_items_share_a_level_and_repeats_compress_hardest() -> None:
    items = [
        el("input", "input", "q", pinned=True),
        el("fact", "facts", "The ops team is small.", pinned=True),
        el("dup", "background", "The ops team is small.", repeats="fact"),
        el("q1", "background", "question about QPS " * 20, importance=0, group="g"),
        el("r1", "tool_results", "qps=50000 " * 30, importance=5, group="g"),
        el("other", "background", "unrelated " * 30, importance=3),
    ]
    out = run(items, [], 10_000)
    assert isinstance(out, WindowOut)
    levels = {p.id: p.level for s in out.sections for p in s.items}
    assert levels["dup"] == 4 and levels["q1"] == 0
    squeezed = run(items, [], out.used - 40)
    assert isinstance(squeezed, WindowOut)
    levels = {p.id: p.level for s in squeezed.sections for p in s.items}
    assert levels["q1"] == levels["r1"] >= 1


def test_sections_are_ordered_and_prefix_is_stable() -> None:
    items = [
        el("input", "input", "now what?", pinned=True),
        el("bg", "background", "history"),
        el("rule", "rules", "Be concise.", pinned=True),
        el("p", "profile", "[global] preference.tone: likes terse"),
        el("goal", "goal", "Ship it", pinned=True),
    ]
    a = run(items, [], 1000)
    b = run([*items[:-1], el("goal", "goal", "A different goal", pinned=True)], [], 1000)
    assert isinstance(a, WindowOut) and isinstance(b, WindowOut)
    assert [s.id for s in a.sections] == ["rules", "profile", "goal", "background", "input"]
    assert a.prefix == b.prefix and a.prefix_hash == b.prefix_hash and a.text != b.text


def test_history_drops_old_turns_first_then_old_exchanges() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "old question " * 20},
        {"role": "assistant", "content": "old answer " * 20},
        {"role": "user", "content": "current question"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "result a " * 30},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "b", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "b", "content": "result b"},
    ]
    items = [el("input", "input", "go on", pinned=True)]
    full = run(items, msgs, 10_000)
    assert isinstance(full, WindowOut) and full.kept_messages == tuple(range(8))
    tokens = [history.message_tokens(m, count) for m in msgs]
    no_old = run(items, msgs, full.used - tokens[1])
    assert isinstance(no_old, WindowOut) and no_old.kept_messages == (0, 3, 4, 5, 6, 7)
    minimal = run(items, msgs, full.used - sum(tokens[1:3]) - sum(tokens[4:6]) + 3)
    assert isinstance(minimal, WindowOut) and minimal.kept_messages == (0, 3, 6, 7)


def test_history_validation_names_the_index() -> None:
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": ""}}],
    }
    cases = [
        ([{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "x", "content": "r"}], 1, "follow a user"),
        ([{"role": "assistant", "content": "a"}, {"role": "tool", "tool_call_id": "x", "content": "r"}], 1, "orphan"),
        ([call, {"role": "user", "content": "q"}], 0, "no result"),
        ([call], 0, "no result"),
        ([call, {"role": "tool", "tool_call_id": "x", "content": "r"}, call], 2, "duplicate"),
    ]
    for messages, index, words in cases:
        with pytest.raises(history.HistoryError, match=words) as caught:
            history.validate(messages)
        assert caught.value.index == index


# --- The prepared pipeline against a straightforward one -------------------------------------------------
#
# ``assemble`` works from precomputed arrays and skips whole rounds at once; the reference below applies the
# same rules one element and one step at a time, as the module docstring states them. They must agree on
# every output, byte for byte.


def reference_assemble(
    elements: list[Element], units: list[history.Unit], budget: int, tools_tokens: int, count: Callable[[str], int]
) -> WindowOut | BudgetTooSmall:
    headers = {name: count(f"## {title}\n") + 1 for name, title in W.SECTIONS}
    line = {e.id: tuple(e.tokens[lvl] + (0 if e.verbatim else W.LINE_OVERHEAD) for lvl in range(5)) for e in elements}
    pinned = [e for e in elements if e.pinned]
    loose = [e for e in elements if not e.pinned]
    fixed_sections = {e.section for e in pinned}
    pinned_cost = (
        sum(line[e.id][0] for e in pinned)
        + sum(headers[s] for s in fixed_sections)
        + sum(u.tokens for u in units if not u.droppable)
        + tools_tokens
    )
    if pinned_cost > budget:
        return BudgetTooSmall(required=pinned_cost, budget=budget)
    level = {e.id: 4 if e.repeats else 0 for e in loose}
    dropped: dict[str, str] = {}
    dropped_units: set[int] = set()
    stage = [0]

    def total() -> int:
        visible = [e for e in loose if e.id not in dropped]
        shown = {e.section for e in visible} - fixed_sections
        kept = sum(u.tokens for i, u in enumerate(units) if u.droppable and i not in dropped_units)
        return pinned_cost + kept + sum(headers[s] for s in shown) + sum(line[e.id][level[e.id]] for e in visible)

    groups: dict[str, list[Element]] = {}
    for e in loose:
        groups.setdefault(e.group or f"\0{e.id}", []).append(e)

    def key(g: list[Element]) -> tuple[Any, ...]:
        return (-min(W.SECTION_RANK[e.section] for e in g), max(e.importance for e in g), min(e.id for e in g))

    first = sorted((g for g in groups.values() if all(e.section in W.GIVE_WAY_FIRST for e in g)), key=key)
    later = sorted((g for g in groups.values() if not all(e.section in W.GIVE_WAY_FIRST for e in g)), key=key)
    ordered = [*first, *later]
    droppable = sorted((i for i, u in enumerate(units) if u.droppable), key=lambda i: units[i].order)
    target = [budget]

    def steps() -> Iterator[None]:
        for i in (i for i in droppable if units[i].kind == "old-turn"):
            stage[0] = max(stage[0], 1)
            dropped_units.add(i)
            yield
        for lvl in (1, 2, 3, 4):
            if lvl == 4:
                for i in (i for i in droppable if units[i].kind == "exchange"):
                    stage[0] = max(stage[0], 3)
                    dropped_units.add(i)
                    yield
            pending = [g for g in ordered if any(level[e.id] < lvl for e in g)]
            if not pending:
                continue
            saving = sum(line[e.id][level[e.id]] - line[e.id][lvl] for g in pending for e in g if level[e.id] < lvl)
            whole = total() - saving > target[0]
            for g in pending:
                stage[0] = max(stage[0], 2 if lvl < 4 else 4)
                for e in g:
                    level[e.id] = max(level[e.id], lvl)
                if not whole:
                    yield
            if whole:
                yield
        for g in ordered:
            stage[0] = 5
            for e in g:
                dropped[e.id] = f"dropped: over budget ({e.section}, lowest priority first)"
            yield

    gen = steps()

    def give_way_until(goal: int) -> bool:
        target[0] = goal
        moved = False
        while total() > goal:
            if next(gen, 0) == 0:
                return moved
            moved = True
        return True

    give_way_until(budget)
    while True:
        blocks, prefix_blocks, sections = [], [], []
        for name, title in W.SECTIONS:
            members = sorted((e for e in elements if e.section == name and e.id not in dropped), key=W._render_key)
            if not members:
                continue
            placed = [(e, 0 if e.pinned else level[e.id]) for e in members]
            block = f"## {title}\n" + "".join(W._render_line(e, lvl) for e, lvl in placed) + "\n"
            blocks.append(block)
            if name in W.PREFIX_SECTIONS:
                prefix_blocks.append(block)
            sections.append((name, title, placed))
        text = "".join(blocks)
        kept = tuple(i for i in range(len(units)) if i not in dropped_units)
        messages_tokens = sum(units[i].tokens for i in kept)
        used = count(text) + messages_tokens + tools_tokens
        if used <= budget:
            break
        if not give_way_until(total() - (used - budget)):
            return BudgetTooSmall(required=used, budget=budget)
    out_sections = []
    for name, title, placed_elements in sections:
        placed = tuple(
            W.Placed(
                e.id,
                lvl,
                line[e.id][lvl],
                e.reason
                if lvl == 0
                else f"{e.reason}; {W.LEVEL_NAMES[lvl]} (L{lvl})"
                + (f", repeats pinned {e.repeats}" if e.repeats and lvl == 4 else ""),
            )
            for e, lvl in placed_elements
        )
        out_sections.append(W.SectionOut(name, title, headers[name] + sum(p.tokens for p in placed), placed))
    prefix = "".join(prefix_blocks)
    return WindowOut(
        mode="full" if stage[0] == 0 else ("compact" if stage[0] >= 4 else "balanced"),
        text=text,
        sections=tuple(out_sections),
        kept_messages=tuple(sorted(idx for i in kept for idx in units[i].indexes)),
        omitted=tuple(sorted(dropped.items())),
        used=used,
        text_tokens=count(text),
        messages_tokens=messages_tokens,
        pinned_tokens=pinned_cost,
        prefix=prefix,
        prefix_tokens=count(prefix) if prefix else 0,
        prefix_hash="sha256:" + hashlib.sha256(prefix.encode()).hexdigest(),
    )


@st.composite
def pressured(draw: st.DrawFn) -> tuple[list[Element], list[dict[str, Any]], int, dict[str, float], int]:
    """Scenarios under every kind of pressure: budgets relative to the full window, token counts that are
    sometimes below what the text really costs (so the rendered text overshoots the estimate, at times
    even with everything dropped), related items, items repeating pinned text, relevance ties. The last
    value is what the tokenizer charges per newline on top of ``count``: lines then cost more than their
    elements say, as when tokens merge differently across line boundaries."""
    elements, messages, _ = draw(scenarios())
    out, relevance = [elements[0]], {}
    low = draw(st.sampled_from([-3, -3, -12]))
    whole = draw(st.booleans())
    for e in elements[1:]:
        tokens = tuple(max(0, n + draw(st.integers(low, 2))) for n in e.tokens)
        repeats = "input" if not e.pinned and draw(st.integers(0, 6)) == 0 else None
        importance = (draw(st.integers(0, 1)), T0 + timedelta(minutes=draw(st.integers(0, 2))))
        out.append(replace(e, tokens=tokens, repeats=repeats, importance=importance, verbatim=draw(st.booleans())))
        relevance[e.id] = draw(st.integers(0, 3)) if whole else draw(st.integers(0, 3)) / 3
    full = sum(e.tokens[0] + 4 for e in out) + sum(len(str(m.get("content") or "")) // 4 + 6 for m in messages)
    budget = max(1, int(full * draw(st.floats(0.02, 1.3))))
    return out, messages, budget, relevance, draw(st.sampled_from([0, 0, 1, 3]))


@settings(max_examples=1000, deadline=None)
@given(pressured())
def test_assemble_equals_the_straightforward_pipeline(scenario: Any) -> None:
    elements, messages, budget, relevance, per_newline = scenario

    def counting(text: str) -> int:
        return count(text) + per_newline * text.count("\n")

    tokens = [history.message_tokens(m, count) for m in messages]
    units = history.units(messages, tokens)
    with_relevance = [
        replace(e, importance=(*e.importance, relevance[e.id])) if e.id in relevance else e for e in elements
    ]
    expected = reference_assemble(with_relevance, units, budget, 7, counting)
    assert assemble(elements=with_relevance, units=units, budget=budget, tools_tokens=7, count=counting) == expected
    # The service's way: elements prepared once without the request's part, which comes per call.
    base = [replace(e, repeats=None) for e in elements if e.id != "input"]
    prepared = W.prepare(base)
    # ... and what a request adds to a prepared set (recalled items): the same as preparing all at once.
    k = 0
    while k < len(base) and not base[-1 - k].pinned and base[-1 - k].group is None:
        k += 1
    k = min(k, 3)
    extended = W.prepare(base[: len(base) - k]).extended(base[len(base) - k :])
    fields = ("loose", "index", "lines", "sections", "loose_sections", "members", "single", "group_of", "initial",
              "repeating", "saving", "nonrepeat", "round_saving", "start_total", "render", "unsorted")  # fmt: skip
    for name in fields:
        assert getattr(extended, name) == getattr(prepared, name), name
    assert extended.ranks() == prepared.ranks()  # worked out from its parent's
    request = [e for e in elements if e.id == "input"]
    repeats = {e.id: e.repeats for e in elements if e.repeats}
    for i in range(4):  # a prepared set is reused across requests: nothing may stick to it
        again = W.assemble_prepared(
            prepared if i % 2 else extended,
            extra=request,
            relevance=[relevance[e.id] for e in prepared.loose],
            repeats=repeats,
            units=units,
            budget=budget,
            tools_tokens=7,
            count=counting,
        )
        assert again == expected


@settings(max_examples=150, deadline=None)
@given(pressured())
def test_counting_by_blocks_equals_counting_the_text(scenario: Any) -> None:
    """With a count that is additive over the window's blocks (as o200k_base is: see the service tests),
    counting block by block gives the same window."""
    elements, messages, budget, _, _ = scenario

    def additive(text: str) -> int:
        return len(text) + 2 * text.count("\n")

    units = history.units(messages, [history.message_tokens(m, additive) for m in messages])
    whole = assemble(elements=elements, units=units, budget=budget, tools_tokens=0, count=additive)
    by_blocks = W.assemble_prepared(
        W.prepare(elements),
        units=units,
        budget=budget,
        tools_tokens=0,
        count=additive,
        count_blocks=lambda blocks: sum(additive(b) for b in blocks),
    )
    assert by_blocks == whole
