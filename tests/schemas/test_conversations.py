"""schemas/conversations.py: an append holds 1 to 1,000 well-formed chat messages, extra fields kept."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from schemas.conversations import MessagesAppend


def append(messages: list[dict[str, Any]]) -> MessagesAppend:
    return MessagesAppend.model_validate({"messages": messages})


def test_an_append_holds_one_to_a_thousand_messages() -> None:
    assert len(append([{"role": "user", "content": "hi"}] * 1000).messages) == 1000
    with pytest.raises(ValidationError, match="at least 1 item"):
        append([])
    with pytest.raises(ValidationError, match="at most 1000 items"):
        append([{"role": "user", "content": "hi"}] * 1001)


@pytest.mark.parametrize(
    ("message", "says"),
    [
        ({"role": "robot", "content": "x"}, "Input should be"),
        ({"role": "tool", "content": "x"}, "a tool message needs tool_call_id"),
        (
            {
                "role": "user",
                "content": "x",
                "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
            },
            "only assistant messages carry tool_calls",
        ),
        ({"role": "user", "content": "a\x00b"}, "NUL"),
    ],
)
def test_a_malformed_message_is_refused(message: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        append([message])


def test_extra_fields_of_a_message_are_kept() -> None:
    (m,) = append([{"role": "user", "content": "hi", "agents_item": {"id": "msg_1"}}]).messages
    assert m.model_dump(exclude_none=True) == {"role": "user", "content": "hi", "agents_item": {"id": "msg_1"}}


@pytest.mark.parametrize(
    "extra",
    [{"note": "a\ud800b"}, {"\x00key": 1}, {"deep": {"x": [float("inf")]}}, {"part": "NUL \x00 inside"}],
)
def test_fields_passed_through_must_be_storable_json(extra: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match=r"must not contain|finite"):
        append([{"role": "user", "content": "hi", **extra}])
    with pytest.raises(ValidationError, match=r"must not contain|finite"):
        append([{"role": "user", "content": [{"type": "text", "text": "hi", **extra}]}])
