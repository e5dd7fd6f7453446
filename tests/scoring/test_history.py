"""Chat history fitting (docs/design.md §3.6 step 6): validation named by index, token counts of a message,
and the cut into units that are kept or dropped whole."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.history import MESSAGE_OVERHEAD, HistoryError, Unit, message_tokens, units, validate


def call(call_id: str, name: str = "f", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


SYS = {"role": "system", "content": "be brief"}
U1 = {"role": "user", "content": "first question"}
A1 = {"role": "assistant", "content": "first answer"}
U2 = {"role": "user", "content": "now look it up"}
A2 = {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]}
T1 = {"role": "tool", "tool_call_id": "c1", "content": "r1"}
T2 = {"role": "tool", "tool_call_id": "c2", "content": "r2"}
A3 = {"role": "assistant", "content": "found it"}


def test_a_well_formed_conversation_validates() -> None:
    validate([SYS, U1, A1, U2, A2, T1, T2, A3])
    validate([])


@pytest.mark.parametrize(
    ("messages", "index", "says"),
    [
        ([U1, T1], 1, "cannot follow a user message"),
        ([U1, A1, T1], 2, "orphan"),
        ([U2, A2, T1, T1], 3, "orphan"),  # answered twice
        ([U2, A2, T1, A3], 1, "'c2' has no result before messages[3]"),
        ([U2, A2, T1], 1, "'c2' has no result"),
        ([U2, A2, T1, T2, {"role": "assistant", "tool_calls": [call("c1")]}], 4, "duplicate tool call id 'c1'"),
    ],
)
def test_invalid_histories_are_named_by_index(messages: list[dict[str, Any]], index: int, says: str) -> None:
    with pytest.raises(HistoryError, match=f"^messages\\[{index}\\]: .*{re.escape(says)}") as err:
        validate(messages)
    assert err.value.index == index


def chars(s: str) -> int:
    return len(s)


def test_message_tokens_counts_text_calls_and_name_plus_framing() -> None:
    assert message_tokens({"role": "user", "content": "abcd"}, chars) == MESSAGE_OVERHEAD + 4
    assert message_tokens({"role": "assistant", "content": None}, chars) == MESSAGE_OVERHEAD
    parts = {"role": "user", "content": [{"type": "text", "text": "ab"}, {"type": "image_url"}, {"text": "cde"}]}
    assert message_tokens(parts, chars) == MESSAGE_OVERHEAD + 5  # only text parts count
    calls = {"role": "assistant", "content": "x", "tool_calls": [call("c", "lookup", '{"q":1}')]}
    assert message_tokens(calls, chars) == MESSAGE_OVERHEAD + 1 + len("lookup") + len('{"q":1}') + 3
    named = {"role": "user", "content": "", "name": "ann"}
    assert message_tokens(named, chars) == MESSAGE_OVERHEAD + 3


def test_units_of_a_conversation() -> None:
    messages = [SYS, U1, A1, U2, A2, T1, T2, A3]
    tokens = [1, 2, 3, 4, 5, 6, 7, 8]
    got = units(messages, tokens)
    assert got == [
        Unit("system", (0,), 1, -1),
        Unit("old-turn", (1, 2), 5, 0),
        Unit("current-user", (3,), 4, -1),
        Unit("exchange", (4, 5, 6), 18, 1),  # a tool call stays with its results
        Unit("exchange", (7,), 8, 2),
    ]
    assert [u.droppable for u in got] == [False, True, False, True, True]


def test_no_user_message_means_every_exchange_is_droppable() -> None:
    got = units([SYS, A1], [1, 1])
    assert [(u.kind, u.indexes, u.order) for u in got] == [("system", (0,), -1), ("exchange", (1,), 0)]


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Valid histories: system messages, then turns of a user message and exchanges (an assistant message
    with 0-2 tool calls, each answered), with a system message now and then between turns."""
    out: list[dict[str, Any]] = [SYS] * draw(st.integers(0, 2))
    n = 0
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            out.append({"role": "user", "content": "u" * draw(st.integers(0, 5))})
        for _ in range(draw(st.integers(0, 3))):
            ids = [f"c{n + k}" for k in range(draw(st.integers(0, 2)))]
            n += len(ids)
            out.append({"role": "assistant", "content": "a", "tool_calls": [call(i) for i in ids]})
            out.extend({"role": "tool", "tool_call_id": i, "content": "r"} for i in ids)
        if draw(st.booleans()):
            out.append(SYS)
    return out


@given(conversations(), st.data())
def test_units_partition_the_history_and_keep_calls_with_results(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    validate(messages)
    tokens = data.draw(st.lists(st.integers(0, 50), min_size=len(messages), max_size=len(messages)))
    got = units(messages, tokens)
    # every message in exactly one unit, each unit's tokens its messages' sum
    assert sorted(i for u in got for i in u.indexes) == list(range(len(messages)))
    assert all(u.tokens == sum(tokens[i] for i in u.indexes) for u in got)
    unit_of = {i: u for u in got for i in u.indexes}
    # a tool result is dropped or kept with the assistant message that called it
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            caller = max(j for j in range(i) if messages[j]["role"] == "assistant")
            assert unit_of[i] is unit_of[caller]
    # system messages and the last user message are never dropped; everything else may be
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    for i, m in enumerate(messages):
        kept = m["role"] == "system" or (users and i == users[-1])
        assert unit_of[i].droppable == (not kept)
    # give-way order: 0, 1, 2... over droppable units, old turns before exchanges, oldest first
    droppable = sorted((u for u in got if u.droppable), key=lambda u: u.order)
    assert [u.order for u in droppable] == list(range(len(droppable)))
    kinds = [u.kind for u in droppable]
    assert kinds == sorted(kinds, key=lambda k: k != "old-turn")
    assert all(a.indexes[0] < b.indexes[0] for a, b in pairwise(droppable))
    assert all(u.order == -1 for u in got if not u.droppable)


def test_an_open_end_lets_the_last_tool_call_wait_for_its_result_but_nothing_else() -> None:
    from scoring.history import HistoryError, validate

    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    waiting = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [call]}]
    validate(waiting, complete=False)
    with pytest.raises(HistoryError, match="has no result"):
        validate(waiting)
    with pytest.raises(HistoryError, match="has no result before"):
        validate([*waiting, {"role": "user", "content": "again"}], complete=False)
    with pytest.raises(HistoryError, match="orphan"):
        validate([{"role": "assistant", "content": "a"}, {"role": "tool", "tool_call_id": "x", "content": "r"}],
                 complete=False)  # fmt: skip


def test_a_transcript_is_one_line_per_message_with_calls_and_their_results() -> None:
    from scoring.history import transcript

    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "venue"}'}}
    text = transcript(
        [
            {"role": "user", "content": [{"type": "text", "text": "Is it"}, {"type": "text", "text": "free?"}]},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "free on Friday"},
        ]
    )
    assert text == 'user: Is it free?\nassistant: -> lookup({"q": "venue"})\ntool[c1]: free on Friday'


def test_the_latest_input_is_taken_off_the_end_of_the_history_only() -> None:
    from scoring.history import without_latest_input

    turn = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert without_latest_input([*turn, {"role": "user", "content": " What now? "}], "What now?") == turn
    parts = {"role": "user", "content": [{"type": "text", "text": "What "}, {"type": "text", "text": "now?"}]}
    assert without_latest_input([*turn, parts], "What now?") == turn
    assert without_latest_input(turn, "hello") == turn  # an assistant message is never the input
    asked_before = [{"role": "user", "content": "What now?"}, {"role": "assistant", "content": "This."}]
    assert without_latest_input(asked_before, "What now?") == asked_before
