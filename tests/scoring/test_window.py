"""The pure window pipeline: properties over random item sets and budgets, and examples of each rule."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import history
from scoring import window as W
from scoring.window import BudgetTooSmall, Element, WindowOut, assemble
from scoring.window_policy import Omitted


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
    tokens_of: Callable[[str], int] = count,
    handled: bool = False,
) -> Element:
    levels = (text, text[: max(1, len(text) // 2)], text[: max(1, len(text) // 5)], text[:40], f"[ctx {eid}]")
    tokens = tuple(tokens_of(t) for t in levels)
    marks = W.handle_costs(eid, levels, tokens, tokens_of) if handled and not pinned else ()
    return Element(
        eid,
        section,
        levels,
        tokens,
        pinned=pinned,
        reason="pinned" if pinned else section,
        value=1.0 + importance,
        order=(T0 + timedelta(minutes=importance), eid),
        group=group,
        repeats=repeats,
        handle_tokens=marks,
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
                handled=draw(st.booleans()),
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
    elements: list[Element],
    messages: list[dict[str, Any]],
    budget: int,
    tools: int = 0,
    relevance: dict[str, float] | None = None,
    counter: Callable[[str], int] = count,
) -> WindowOut | BudgetTooSmall:
    history.validate(messages)
    tokens = [history.message_tokens(m, counter) for m in messages]
    return assemble(
        elements=elements,
        units=history.units(messages, tokens),
        budget=budget,
        tools_tokens=tools,
        count=counter,
        relevance=relevance,
    )


def levels_of(out: WindowOut) -> dict[str, int]:
    return {p.id: p.level for s in out.sections for p in s.items}


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
    assert 0 <= out.pinned_tokens <= out.used
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
    assert isinstance(full, WindowOut) and full.mode == "full" and full.cut == 0
    assert all(levels_of(full)[f"t{i}"] == 0 for i in range(5))
    assert all(p.reason.endswith("kept whole") for s in full.sections for p in s.items if p.id.startswith("t"))
    squeezed = run(base + loose, [], full.used * 2 // 3)
    assert isinstance(squeezed, WindowOut) and squeezed.mode in ("balanced", "compact") and squeezed.cut > 0
    levels = levels_of(squeezed)
    # the most valuable stay whole; what gives way is the least valuable
    assert levels["t4"] == 0 and (levels.get("t0", 5) >= levels["t4"])
    compact = run(base + loose, [], 60)
    assert isinstance(compact, WindowOut) and compact.mode == "compact"
    assert "no Redis Cluster" in compact.text
    assert compact.omitted and all(o.kind is Omitted.OVER_BUDGET for o in compact.omitted)
    assert all(("over budget" in o.reason and "cut" in o.reason) or "did not fit" in o.reason for o in compact.omitted)
    too_small = run(base + loose, [], 5)
    assert isinstance(too_small, BudgetTooSmall) and too_small.required > 5


def test_an_irrelevant_item_is_dropped_before_a_relevant_one_is_compressed() -> None:
    """The replication-lag case: sixty unrelated user-stated notes and one tool fact the query is about."""
    notes = [
        el(f"n{i:02d}", "facts", f"Note {i}: the user mentioned gardening, a recipe for soup and spring holidays.")
        for i in range(60)
    ]
    lag = el(
        "lag",
        "tool_results",
        "PostgreSQL replication lag on the orders replica reached 45 seconds during the nightly batch.",
    )
    elements = [el("input", "input", "How bad was the orders replica lag?", pinned=True), *notes, lag]
    out = run(elements, [], 600, relevance={"lag": 1.0})
    assert isinstance(out, WindowOut)
    levels = levels_of(out)
    assert levels["lag"] == 0 and lag.texts[0] in out.text
    reason = next(p.reason for s in out.sections for p in s.items if p.id == "lag")
    assert reason == "tool_results; relevance 1.00; kept whole"
    # what gave way were the unrelated notes: left out or compressed, each saying what it lost to
    assert any(o.id.startswith("n") for o in out.omitted) or any(v > 0 for k, v in levels.items() if k != "lag")


def test_a_generous_budget_compresses_nothing_relevant() -> None:
    items = [el(f"r{i}", "background", f"relevant finding number {i} " * (5 + i)) for i in range(8)]
    items += [el(f"u{i}", "background", f"unrelated chatter {i} " * 12) for i in range(30)]
    elements = [el("input", "input", "findings?", pinned=True), *items]
    relevance = {f"r{i}": 1.0 - i / 10 for i in range(8)}
    whole = sum(e.tokens[0] + 2 for e in elements) + 40
    for budget in (whole * 2 // 3, whole // 2):
        out = run(elements, [], budget, relevance=relevance)
        assert isinstance(out, WindowOut) and out.mode != "full"
        levels = levels_of(out)
        assert all(levels[f"r{i}"] == 0 for i in range(8)), levels  # only unrelated items gave way
    out = run(elements, [], whole)
    assert isinstance(out, WindowOut) and out.mode == "full"


def test_related_items_share_a_level_and_repeats_are_index_lines() -> None:
    items = [
        el("input", "input", "q", pinned=True),
        el("fact", "facts", "The ops team is small.", pinned=True),
        el("dup", "background", "The ops team is small.", repeats="pinned fact"),
        el("q1", "background", "question about QPS " * 20, importance=0, group="g"),
        el("r1", "tool_results", "qps=50000 " * 30, importance=5, group="g"),
        el("other", "background", "unrelated " * 30, importance=3),
    ]
    out = run(items, [], 10_000)
    assert isinstance(out, WindowOut)
    levels = levels_of(out)
    assert levels["dup"] == 4 and levels["q1"] == 0 and out.mode == "full"
    reason = next(p.reason for s in out.sections for p in s.items if p.id == "dup")
    assert reason.endswith("index line (L4), repeats pinned fact")
    for budget in range(out.used - 1, 20, -7):
        squeezed = run(items, [], budget)
        if isinstance(squeezed, BudgetTooSmall):
            break
        levels = levels_of(squeezed)
        assert levels.get("q1") == levels.get("r1")  # together, or both left out
        assert levels.get("dup", 4) == 4


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


def test_history_drops_old_turns_oldest_first_and_keeps_exchanges_whole() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "oldest question " * 20},
        {"role": "assistant", "content": "oldest answer " * 20},
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
    assert isinstance(full, WindowOut) and full.kept_messages == tuple(range(10)) and full.mode == "full"
    seen = []
    for budget in range(full.used, 0, -5):
        out = run(items, msgs, budget)
        if isinstance(out, BudgetTooSmall):
            break
        kept = set(out.kept_messages)
        assert {0, 5} <= kept  # the system message and the current user message stay
        assert (6 in kept) == (7 in kept) and (8 in kept) == (9 in kept)  # a call and its result go together
        assert (1 in kept) <= (3 in kept) and (6 in kept) <= (8 in kept)  # the oldest go first
        seen.append(out.kept_messages)
    assert (0, 5) in seen  # everything droppable went before the budget ran out


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


# --- Properties of the selection -------------------------------------------------------------------------


def additive(text: str) -> int:
    """A tokenizer whose count of a window is the sum of its lines' (newlines are free), so the selection's
    own estimate is what the text costs and the properties are about the selection alone."""
    return len(text) - text.count("\n")


@st.composite
def selections(draw: st.DrawFn) -> tuple[list[Element], dict[str, float], int]:
    n = draw(st.integers(1, 25))
    elements = [el("input", "input", "the question", pinned=True, tokens_of=additive)]
    relevance: dict[str, float] = {}
    for i in range(n):
        eid = f"i{i:02d}"
        text = draw(st.text(alphabet="abcde .", min_size=1, max_size=300))
        elements.append(
            el(
                eid,
                draw(st.sampled_from(SECTIONS)),
                text,
                importance=draw(st.integers(0, 3)),
                group=draw(st.sampled_from([None, None, None, "g1"])),
                tokens_of=additive,
            )
        )
        if draw(st.booleans()):
            relevance[eid] = draw(st.floats(0, 1))
    budget = draw(st.integers(20, 4000))
    return elements, relevance, budget


def placement(out: WindowOut | BudgetTooSmall) -> dict[str, int]:
    """Element id → level, 5 for left out (so a larger number is always a worse place)."""
    assert isinstance(out, WindowOut)
    return {**{o.id: 5 for o in out.omitted}, **levels_of(out)}


@settings(max_examples=300, deadline=None)
@given(selections(), st.integers(1, 2000))
def test_raising_the_budget_never_lowers_a_level(
    scenario: tuple[list[Element], dict[str, float], int], more: int
) -> None:
    elements, relevance, budget = scenario
    small = run(elements, [], budget, relevance=relevance, counter=additive)
    if isinstance(small, BudgetTooSmall):
        return
    large = run(elements, [], budget + more, relevance=relevance, counter=additive)
    assert small.used <= budget and isinstance(large, WindowOut) and large.used <= budget + more
    before, after = placement(small), placement(large)
    assert all(after[i] <= before[i] for i in before), (before, after)


@settings(max_examples=300, deadline=None)
@given(selections(), st.data())
def test_raising_relevance_never_lowers_that_elements_level(
    scenario: tuple[list[Element], dict[str, float], int], data: st.DataObject
) -> None:
    elements, relevance, budget = scenario
    loose = [e for e in elements if not e.pinned and e.group is None]
    if not loose:
        return
    target = data.draw(st.sampled_from(loose)).id
    before = run(elements, [], budget, relevance=relevance, counter=additive)
    if isinstance(before, BudgetTooSmall):
        return
    raised = {**relevance, target: min(1.0, relevance.get(target, 0.0) + data.draw(st.floats(0.01, 1)))}
    after = run(elements, [], budget, relevance=raised, counter=additive)
    assert placement(after)[target] <= placement(before)[target]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdef ", min_size=5, max_size=400), st.integers(20, 800), st.integers(0, 3))
def test_a_worthless_element_never_outranks_a_more_valuable_one_of_the_same_cost(
    text: str, budget: int, importance: int
) -> None:
    low = replace(el("low", "background", text, tokens_of=additive), value=0.1)
    high = replace(el("high", "background", text, importance=importance, tokens_of=additive), value=0.2 + importance)
    filler = [el(f"f{i}", "summaries", "filler text " * (i + 2), tokens_of=additive) for i in range(4)]
    elements = [el("input", "input", "q", pinned=True, tokens_of=additive), low, high, *filler]
    out = run(elements, [], budget, relevance={"high": 0.5}, counter=additive)
    if isinstance(out, BudgetTooSmall):
        return
    where = placement(out)
    assert where["high"] <= where["low"]


@settings(max_examples=150, deadline=None)
@given(selections())
def test_counting_by_blocks_equals_counting_the_text(scenario: tuple[list[Element], dict[str, float], int]) -> None:
    """With a count that is additive over the window's blocks (as o200k_base is: see the service tests),
    counting block by block gives the same window."""
    elements, relevance, budget = scenario
    whole = assemble(elements=elements, units=[], budget=budget, tools_tokens=0, count=additive, relevance=relevance)
    by_blocks = W.assemble_prepared(
        W.prepare(elements),
        relevance=relevance,
        units=[],
        budget=budget,
        tools_tokens=0,
        count=additive,
        count_blocks=lambda blocks: sum(additive(b) for b in blocks),
    )
    assert by_blocks == whole


@settings(max_examples=150, deadline=None)
@given(selections())
def test_retrieved_elements_give_the_same_window_as_prepared_ones(
    scenario: tuple[list[Element], dict[str, float], int],
) -> None:
    """The service prepares its standing elements once and adds the ones retrieved for a query per request:
    the window is the same as with all of them prepared together."""
    elements, relevance, budget = scenario
    pinned = [e for e in elements if e.pinned]
    loose = [e for e in elements if not e.pinned]
    ungrouped = [e for e in loose if e.group is None]
    extra = ungrouped[len(ungrouped) // 2 :]
    base = [e for e in loose if e not in extra]
    together = assemble(elements=elements, units=[], budget=budget, tools_tokens=0, count=additive, relevance=relevance)
    apart = W.assemble_prepared(
        W.prepare(base),
        extra=pinned,
        loose_extra=extra,
        relevance=relevance,
        units=[],
        budget=budget,
        tools_tokens=0,
        count=additive,
    )
    if isinstance(together, BudgetTooSmall):
        assert isinstance(apart, BudgetTooSmall)
        return
    assert isinstance(apart, WindowOut)
    assert placement(apart) == placement(together) and apart.text == together.text and apart.used == together.used


def test_a_compressed_item_the_query_matches_shows_its_matching_sentences() -> None:
    long = (
        "We talked about the office move for a long while and nobody agreed on anything at all. "
        "The parking garage closes at ten in the evening on weekdays. "
        "Lunch options near the new building are limited but improving slowly. "
        "The Kafka cluster keeps seven days of retention for the orders topic. "
        "Everyone wants more meeting rooms than the floor plan allows for."
    )
    summary = "We talked about the office move for a long while and nobody agreed on anything at all."
    texts = (long, summary, summary, summary, "[ctx long]")
    item = Element("long", "background", texts, tuple(count(t) for t in texts), reason="background", order=(T0, "long"))
    fillers = [el(f"f{i}", "background", "unrelated words here " * 12) for i in range(3)]
    elements = [el("input", "input", "How long is Kafka retention?", pinned=True), item, *fillers]
    prepared = W.prepare(elements)

    def window(budget: int, query: str | None = None) -> WindowOut:
        out = W.assemble_prepared(prepared, relevance={"long": 0.6}, units=[], budget=budget, tools_tokens=0,
                                  count=count, query=query)  # fmt: skip
        assert isinstance(out, WindowOut)
        return out

    budget = next(b for b in range(30, 200) if levels_of(window(b)).get("long") in (1, 2))
    plain, focused = window(budget), window(budget, "How long is Kafka retention?")
    assert summary in plain.text and "Kafka cluster" not in plain.text
    assert "Kafka cluster keeps seven days" in focused.text and focused.used <= budget
    reason = next(p.reason for s in focused.sections for p in s.items if p.id == "long")
    assert "the sentences that match the query" in reason


def _uuid(n: int) -> str:
    return f"0190a5c2-7d3e-7c4a-9b1e-{n:012x}"


def test_every_shortened_item_names_its_handle_once_the_note_says_how_to_expand() -> None:
    """Eight long tool facts under a tight budget: each shortened line starts with its handle (the id's last
    8 hex digits), whole lines carry none, and the note comes once, after the cache-friendly prefix."""
    facts = [
        el(
            _uuid(0xA0000 + i),
            "tool_results",
            f"Review {i} of the orders replica lag, finding {i}: " + "the replica fell behind by seconds. " * 30,
            importance=i % 3,
            handled=True,
        )
        for i in range(8)
    ]
    base = [el("input", "input", "what did the reviews find?", pinned=True), el("r", "rules", "Be terse.", pinned=True)]
    whole = run([*base, *facts], [], 100_000)
    assert isinstance(whole, WindowOut) and whole.mode == "full"
    assert W.EXPAND_NOTE not in whole.text and "[000" not in whole.text
    out = run([*base, *facts], [], whole.used // 3)
    assert isinstance(out, WindowOut) and out.used <= whole.used // 3
    levels = levels_of(out)
    shortened = [f.id for f in facts if levels.get(f.id, 0) > 0]
    assert shortened
    lines = out.text.splitlines()
    for f in facts:
        mine = [ln for ln in lines if f.id[-8:] in ln]
        if levels.get(f.id, -1) > 0:
            assert len(mine) == 1 and mine[0].startswith(f"- [{f.id[-8:]}] ")
        else:
            assert not mine
    assert out.text.count(W.EXPAND_NOTE) == 1
    assert out.text.startswith(out.prefix) and out.text[len(out.prefix) :].startswith(W.EXPAND_NOTE)
    # The handle is paid in the element's line: what the sections report adds up to what the text costs.
    assert sum(s.tokens for s in out.sections) + count(W.EXPAND_NOTE) >= count(out.text) - len(out.sections)


def test_handles_are_stable_and_lengthen_only_where_a_window_holds_two_alike() -> None:
    ids = [_uuid(0x1_0000_1111), _uuid(0x2_0000_1111), _uuid(0x3)]
    named = W.handles(ids)
    assert named[ids[2]] == ids[2][-8:]
    assert named[ids[0]] == ids[0][-9:] and named[ids[1]] == ids[1][-9:]
    assert len(set(named.values())) == 3 and all(i.endswith(h) for i, h in named.items())
    assert W.handles([ids[0], ids[2]]) == {ids[0]: ids[0][-8:], ids[2]: ids[2][-8:]}


def test_handle_costs_count_the_handle_only_on_shortened_levels() -> None:
    texts = ("a long text " * 20, "a long text", "a long text " * 20, "key = 1", "[ctx: x, 60 tokens]")
    costs = W.handle_costs(_uuid(7), texts, [count(t) for t in texts], count)
    assert costs[0] == 0 and costs[2] == 0  # L0, and a level that is the whole text: nothing to expand
    assert all(c > 0 for c in (costs[1], costs[3], costs[4]))


def test_a_text_is_a_handle_only_when_it_is_the_end_of_an_id() -> None:
    """What search takes as a handle: the last 8 or more characters of an id as text, bare or as a window
    shows it in brackets, in any case; every handle ``handles`` gives is one."""
    iid = _uuid(0x4C1B0A2E)
    for text in (iid[-8:], f"[{iid[-8:]}]", f"  {iid[-8:].upper()} ", iid[-13:], iid[-20:], iid, f"[{iid}]"):
        handle = W.as_handle(text)
        assert handle is not None and iid.endswith(handle), text
    assert all(W.as_handle(h) == h for h in W.handles([iid, _uuid(0x1_4C1B0A2E)]).values())
    not_handles = (
        iid[-7:],  # too short
        iid + "0",  # too long
        "2026-12-03",  # a date: its dashes are not where an id has them
        "4c1b-0a2e",
        "deadbeefs",  # not hex
        "expand 4c1b0a2e",  # a sentence holding a handle
        "[4c1b0a2e",
        "0190a5c27d3e7c4a9b1e2f6d8a4c1b00",  # 32 hex digits: a window never shows an id without its dashes
        "",
    )
    assert [t for t in not_handles if W.as_handle(t) is not None] == []
