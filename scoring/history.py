"""Chat history fitting (docs/design.md §3.6 step 6): validate OpenAI-format messages, then cut them into units
that are kept or dropped whole — never splitting a tool call from its results.

Units, in the order they give way: old user turns (oldest first), then older exchanges of the current
turn (oldest first). System messages and the current turn's user message are never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# OpenAI counts about 3 tokens of framing per message plus 3 to prime the reply; 4 per message is the
# usual estimate for a list of messages.
MESSAGE_OVERHEAD = 4


class HistoryError(ValueError):
    def __init__(self, index: int, message: str) -> None:
        super().__init__(f"messages[{index}]: {message}")
        self.index = index


def validate(messages: Sequence[Mapping[str, Any]], *, complete: bool = True) -> None:
    """Orphan tool results, missing results, duplicate call ids and a tool message right after a user
    message are errors, named by index. With ``complete=False`` (a stored conversation, appended to in
    steps) the last message's tool calls may still wait for their results."""
    seen: set[str] = set()
    pending: dict[str, int] = {}
    previous: str | None = None
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "tool":
            if previous == "user":
                raise HistoryError(i, "a tool message cannot follow a user message")
            call_id = m.get("tool_call_id")
            if call_id not in pending:
                raise HistoryError(i, f"tool result for unknown or already answered call {call_id!r} (orphan)")
            del pending[call_id]
        else:
            if pending:
                call_id, at = next(iter(pending.items()))
                raise HistoryError(at, f"tool call {call_id!r} has no result before messages[{i}]")
            if role == "assistant":
                for call in m.get("tool_calls") or ():
                    call_id = call["id"]
                    if call_id in seen:
                        raise HistoryError(i, f"duplicate tool call id {call_id!r}")
                    seen.add(call_id)
                    pending[call_id] = i
        previous = role
    if pending and complete:
        call_id, at = next(iter(pending.items()))
        raise HistoryError(at, f"tool call {call_id!r} has no result")


@dataclass(frozen=True)
class Unit:
    """Messages kept or dropped together. ``kind``: system, old-turn, current-user, exchange."""

    kind: str
    indexes: tuple[int, ...]
    tokens: int
    order: int  # give-way order among droppable units: lower goes first

    @property
    def droppable(self) -> bool:
        return self.kind in ("old-turn", "exchange")


def message_tokens(m: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """Tokens of one message: its text, tool calls (name + arguments), name, plus the framing."""
    n = MESSAGE_OVERHEAD
    content = m.get("content")
    if isinstance(content, str):
        n += count(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                n += count(part["text"])
    for call in m.get("tool_calls") or ():
        fn = call.get("function") or {}
        n += count(str(fn.get("name", ""))) + count(str(fn.get("arguments", ""))) + 3
    if m.get("name"):
        n += count(str(m["name"]))
    return n


def units(messages: Sequence[Mapping[str, Any]], tokens: Sequence[int]) -> list[Unit]:
    """Cut validated messages into units (see module docstring)."""
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
    out: list[Unit] = []
    turn: list[int] = []
    order = 0

    def flush_turn() -> None:
        nonlocal order
        if turn:
            out.append(Unit("old-turn", tuple(turn), sum(tokens[i] for i in turn), order))
            order += 1
            turn.clear()

    exchanges: list[list[int]] = []
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "system":
            out.append(Unit("system", (i,), tokens[i], -1))
            continue
        if last_user is not None and i < last_user:
            if role == "user":
                flush_turn()
            turn.append(i)
            continue
        if i == last_user:
            flush_turn()
            out.append(Unit("current-user", (i,), tokens[i], -1))
            continue
        if role == "tool":
            exchanges[-1].append(i)
        else:
            exchanges.append([i])
    flush_turn()
    for ex in exchanges:
        out.append(Unit("exchange", tuple(ex), sum(tokens[i] for i in ex), order))
        order += 1
    return out


def without_latest_input(messages: Sequence[Mapping[str, Any]], latest_input: str) -> list[Mapping[str, Any]]:
    """The history without a last user message that is the latest input itself (its text, as a string or
    as text parts): the window holds the input once, as its own pinned section."""
    if messages:
        last = messages[-1]
        content = last.get("content")
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        if last.get("role") == "user" and isinstance(content, str) and content.strip() == latest_input.strip():
            return list(messages[:-1])
    return list(messages)


def transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """Messages as plain text, one line each — ``role: content``, a tool result's call id in brackets and a
    call's function and arguments after an arrow: how history that left the window is kept as an episode."""
    lines = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        calls = ", ".join(
            f"{c['function']['name']}({c['function'].get('arguments', '')})" for c in m.get("tool_calls") or ()
        )
        who = m["role"] + (f"[{m['tool_call_id']}]" if m.get("tool_call_id") else "")
        said = " ".join(part for part in (content or "", f"-> {calls}" if calls else "") if part)
        lines.append(f"{who}: {said}".strip())
    return "\n".join(lines)
