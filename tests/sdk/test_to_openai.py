"""``Window.to_openai()`` on real windows, checked with the official ``openai`` package's message types: the
window text is the system message, the fitted history follows, and the latest input is there exactly once,
as the last user message."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from ctxmem_client import Client, Window
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from tests.sdk.conftest import Keys, Live

OPENAI_MESSAGES: TypeAdapter[list[ChatCompletionMessageParam]] = TypeAdapter(list[ChatCompletionMessageParam])
INPUT = "Which cache should we use?\n## Not a heading: part of the input"


def _valid(messages: list[dict[str, Any]]) -> None:
    """Valid OpenAI chat messages, every key of ours one the type knows (nothing dropped by validation)."""
    assert _plain(OPENAI_MESSAGES.validate_python(messages)) == messages


def _plain(value: Any) -> Any:
    """Validated values with the lazy iterators pydantic makes of ``Iterable`` fields read out as lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or hasattr(value, "__next__"):
        return [_plain(v) for v in value]
    return value


def _occurrences(messages: list[dict[str, Any]], text: str) -> int:
    return sum(str(m.get("content") or "").count(text) for m in messages)


@pytest.fixture
def me(live: Live, keys: Keys) -> Any:
    with Client(live.url, keys.agent) as client:
        user = client.user(f"u-{uuid.uuid4().hex[:10]}")
        user.add_item(type="constraint", content="Never use Redis Cluster.", hard=True, source="user")
        user.add_item(type="tool_result", content="memcached p99 3 ms; redis p99 2 ms", source="tool")
        yield user


HISTORY = [
    {"role": "user", "content": "We need a cache for the catalogue."},
    {"role": "assistant", "content": "Let me check the benchmarks."},
]


def test_history_then_the_input_as_the_last_user_message(me: Any) -> None:
    window = me.window(input=INPUT, max_tokens=2000, messages=HISTORY)
    out = window.to_openai()
    _valid(out)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[0]["content"].startswith("## ") and "## Latest input" not in out[0]["content"]
    assert "Never use Redis Cluster." in out[0]["content"]
    assert out[1:3] == HISTORY and out[-1] == {"role": "user", "content": INPUT}
    assert _occurrences(out, INPUT) == 1
    assert window.text == f"{out[0]['content']}\n\n## Latest input\n{INPUT}\n\n"


def test_the_same_messages_as_the_servers_openai_prompt(me: Any) -> None:
    window = me.window(input=INPUT, max_tokens=2000, messages=HISTORY, format="openai")
    assert window.prompt is not None and window.to_openai() == window.prompt["messages"]
    assert me.window(input=INPUT, max_tokens=2000, messages=HISTORY).prompt is None


def test_the_servers_prompt_has_the_input_once_when_the_history_ends_with_it(me: Any) -> None:
    messages = [*HISTORY, {"role": "user", "content": INPUT}]
    window = me.window(input=INPUT, max_tokens=2000, messages=messages, format="openai")
    assert _occurrences(window.to_openai(), INPUT) == 1
    assert window.prompt is not None and _occurrences(window.prompt["messages"], INPUT) == 1


def test_an_input_already_last_in_the_history_is_not_repeated(me: Any) -> None:
    messages = [*HISTORY, {"role": "user", "content": INPUT}]
    out = me.window(input=INPUT, max_tokens=2000, messages=messages).to_openai()
    _valid(out)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[-1] == {"role": "user", "content": INPUT} and _occurrences(out, INPUT) == 1


def test_in_a_tool_loop_the_history_ends_with_the_tool_result(me: Any) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "bench", "arguments": '{"what": "cache"}'}}
    messages = [
        *HISTORY,
        {"role": "user", "content": [{"type": "text", "text": INPUT}]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "memcached wins"},
    ]
    out = me.window(input=INPUT, max_tokens=2000, messages=messages).to_openai()
    _valid(out)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert "## Latest input" not in out[0]["content"]
    assert out[3]["content"] == [{"type": "text", "text": INPUT}]


def test_a_window_without_its_input_is_sent_as_it_is(me: Any) -> None:
    fetched = me.window(input=INPUT, max_tokens=2000, messages=HISTORY)
    by_hand = Window.model_validate(fetched.model_dump())
    assert by_hand.input is None
    out = by_hand.to_openai()
    _valid(out)
    assert out[0] == {"role": "system", "content": fetched.text} and out[1:] == HISTORY
    assert _occurrences(out, INPUT) == 1
    assert by_hand.with_input(INPUT).to_openai() == fetched.to_openai()
