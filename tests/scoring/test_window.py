"""The pure window pipeline: properties over random item sets and budgets, and examples of each rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import history
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
