"""schemas/windows.py: the window request's budget rules and the chat message shapes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from schemas.windows import ChatMessage, ToolCall, WindowRequest, WindowResponse, WindowTokens


def request(**fields: Any) -> WindowRequest:
    return WindowRequest.model_validate({"input": "hi", **fields})


def test_exactly_one_budget_is_needed() -> None:
    with pytest.raises(ValidationError, match="a budget is needed: send max_tokens"):
        request()
    with pytest.raises(ValidationError, match="not both"):
        request(max_tokens=100, context_limit=1000)
    assert request(max_tokens=100).context_limit is None
    assert request(context_limit=1000).max_tokens is None


@given(st.integers(1, 10_000), st.integers(0, 10_000))
def test_reserve_must_be_smaller_than_the_context(limit: int, reserve: int) -> None:
    if reserve < limit:
        assert request(context_limit=limit, reserve_tokens=reserve).reserve_tokens == reserve
    else:
        with pytest.raises(ValidationError, match="reserve_tokens must be smaller than context_limit"):
            request(context_limit=limit, reserve_tokens=reserve)


@pytest.mark.parametrize(
    "fields",
    [
        {"max_tokens": 0},
        {"max_tokens": 2_000_001},
        {"context_limit": 100, "watermark": 0},
        {"context_limit": 100, "watermark": 1.01},
        {"max_tokens": 10, "reserve_tokens": -1},
        {"max_tokens": 10, "domains": ["d"] * 33},
        {"max_tokens": 10, "input": ""},
        {"max_tokens": 10, "input": "x" * 32_001},
        {"max_tokens": 10, "session_id": "has space"},
        {"max_tokens": 10, "tools": [{"x": float("nan")}]},
        {"max_tokens": 10, "budget": 5},
    ],
)
def test_window_request_refuses(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        WindowRequest.model_validate({"input": "hi", **fields})


def test_window_request_defaults() -> None:
    r = request(max_tokens=10)
    assert (r.reserve_tokens, r.watermark, r.messages, r.tools, r.archive_dropped) == (0, None, [], [], False)


def test_every_schema_example_is_a_valid_request() -> None:
    for example in WindowRequest.model_config["json_schema_extra"]["examples"]:  # type: ignore[index]
        WindowRequest.model_validate(example)


def test_a_tool_message_needs_the_id_of_the_call_it_answers() -> None:
    with pytest.raises(ValidationError, match="needs tool_call_id"):
        ChatMessage.model_validate({"role": "tool", "content": "42"})
    assert ChatMessage.model_validate({"role": "tool", "content": "42", "tool_call_id": "c1"}).tool_call_id == "c1"


@pytest.mark.parametrize("role", ["user", "system", "developer", "tool"])
def test_only_assistant_messages_carry_tool_calls(role: str) -> None:
    call = {"id": "c1", "function": {"name": "f", "arguments": "{}"}}
    msg: dict[str, Any] = {"role": role, "tool_calls": [call], "tool_call_id": "c0"}
    with pytest.raises(ValidationError, match="only assistant messages carry tool_calls"):
        ChatMessage.model_validate(msg)
    assert ChatMessage.model_validate({"role": "assistant", "tool_calls": [call]}).tool_calls


def test_tool_call_arguments_are_a_json_string_not_an_object() -> None:
    with pytest.raises(ValidationError):
        ToolCall.model_validate({"id": "c", "function": {"name": "f", "arguments": {"city": "Lisbon"}}})
    assert ToolCall.model_validate({"id": "c", "function": {"name": "f", "arguments": "{}"}}).type == "function"


def test_chat_messages_keep_extra_fields_for_pass_through() -> None:
    m = ChatMessage.model_validate(
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}], "x": 1}
    )
    dumped = m.model_dump(exclude_none=True)
    assert dumped["x"] == 1
    assert dumped["content"][0]["image_url"] == {"url": "u"}


def test_window_response_defaults_say_nothing_gave_way() -> None:
    tokens = WindowTokens(budget=10, used=0, pinned=0, text=0, messages=0, tools=0, sections={})
    r = WindowResponse(
        mode="full",
        text="",
        sections=[],
        messages=[],
        omitted=[],
        warnings=[],
        tokens=tokens,
        prefix_tokens=0,
        prefix_hash="h",
        state_version="v",
    )
    assert (r.cut, r.not_retrieved, r.archived_item_id) == (0.0, 0, None)
    assert r.omitted_summary.model_dump() == {"count": 0, "listed": 0, "reasons": {}}
    with pytest.raises(ValidationError):
        WindowResponse.model_validate({**r.model_dump(), "mode": "huge"})
