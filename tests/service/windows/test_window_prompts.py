"""Ready-to-send windows (issue #15 step 3): format openai / anthropic returns prompt, the messages of the
model call as the official SDKs type them — the window text as the system part, the fitted history, the
latest input exactly once — and a tool result that the history holds is not shown twice."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import Any

import httpx
from anthropic.types import MessageParam, TextBlockParam
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from schemas.windows import WindowResponse
from tests.conftest import TenantKeys

INPUT = "Which venue should we book for the offsite?"
CALL = {"id": "call_7", "type": "function", "function": {"name": "venue_search", "arguments": '{"city": "Porto"}'}}
RESULT = "Casa do Rio: 40 seats, garden, free on 12 June; Armazem 8: 25 seats, no garden."
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You plan team events."},
    {"role": "user", "content": "We are planning the offsite in Porto."},
    {"role": "assistant", "content": "Let me look for venues.", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_7", "content": RESULT},
    {"role": "assistant", "content": "Two venues are free."},
]


# Module-level adapters: a validated TypedDict's iterables are validated lazily, by the adapter's schema,
# which must outlive them.
OPENAI_MESSAGES = TypeAdapter(list[ChatCompletionMessageParam])
ANTHROPIC_MESSAGES = TypeAdapter(list[MessageParam])
ANTHROPIC_SYSTEM = TypeAdapter(list[TextBlockParam])


def consumed(value: Any) -> Any:
    """A validated TypedDict value with its lazy iterables (content parts, blocks) validated too."""
    if isinstance(value, Mapping):
        return {k: consumed(v) for k, v in value.items()}
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, Iterable):
        return [consumed(v) for v in value]
    return value


def everything_said(value: Any) -> str:
    if isinstance(value, Mapping):
        return "\n".join(everything_said(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(everything_said(v) for v in value)
    return value if isinstance(value, str) else ""


async def window(client: httpx.AsyncClient, tenant: TenantKeys, user: str, **body: Any) -> dict[str, Any]:
    body = {"input": INPUT, "max_tokens": 3000, "detail": "full", **body}
    r = await client.post(f"/v1/users/{user}/window", json=body, headers=tenant.agent)
    assert r.status_code == 200, r.text
    WindowResponse.model_validate_json(r.content)
    out: dict[str, Any] = r.json()
    return out


async def seed(client: httpx.AsyncClient, tenant: TenantKeys, user: str) -> None:
    items = [
        {"type": "rule", "content": "Never book a venue without a garden.", "source": "user"},
        {"type": "constraint", "content": "Budget at most 4,000 EUR.", "hard": True, "source": "user"},
        {"type": "tool_result", "content": RESULT, "source": "tool"},  # the same result the history holds
        {"type": "fact", "content": "The team is 32 people.", "source": "user"},
    ]
    r = await client.post(f"/v1/users/{user}/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text


async def test_openai_prompt_is_system_text_history_and_the_input_once(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await seed(client, tenant, "p1")
    w = await window(client, tenant, "p1", messages=HISTORY, format="openai")
    messages = consumed(OPENAI_MESSAGES.validate_python(w["prompt"]["messages"]))
    assert set(w["prompt"]) == {"messages"}
    system, *history, last = messages
    assert system["role"] == "system" and w["text"].startswith(system["content"])
    assert "## Latest input" not in system["content"] and "Never book a venue without a garden." in system["content"]
    assert history == w["messages"] == HISTORY
    assert last == {"role": "user", "content": INPUT}
    assert everything_said(messages).count(INPUT) == 1
    # The tool result is in the history: the item that repeats it is left out, and says why.
    assert everything_said(messages).count(RESULT) == 1
    assert [o["reason"] for o in w["omitted"]] == ["left out: the same tool result is in the history (messages[3])"]
    # Without that history message the item is shown.
    alone = await window(client, tenant, "p1", messages=HISTORY[:2], format="openai")
    assert RESULT in alone["prompt"]["messages"][0]["content"] and alone["omitted"] == []


async def test_anthropic_prompt_types_check_and_turns_alternate(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(client, tenant, "p2")
    w = await window(client, tenant, "p2", messages=HISTORY, format="anthropic")
    prompt = w["prompt"]
    assert set(prompt) == {"system", "messages"}
    system = consumed(ANTHROPIC_SYSTEM.validate_python(prompt["system"]))
    messages = consumed(ANTHROPIC_MESSAGES.validate_python(prompt["messages"]))
    assert system[0]["cache_control"] == {"type": "ephemeral"}  # the stable prefix: rules, long-term profile
    assert system[0]["text"].startswith("## Rules") and system[-1]["text"] == "You plan team events."
    roles = [m["role"] for m in messages]
    assert roles[0] == "user" and all(a != b for a, b in pairwise(roles))
    use = next(b for m in messages for b in m["content"] if b["type"] == "tool_use")
    assert use == {"type": "tool_use", "id": "call_7", "name": "venue_search", "input": {"city": "Porto"}}
    result = next(b for m in messages for b in m["content"] if b["type"] == "tool_result")
    assert result == {"type": "tool_result", "tool_use_id": "call_7", "content": RESULT}
    assert messages[-1]["role"] == "user" and messages[-1]["content"][-1] == {"type": "text", "text": INPUT}
    said = everything_said({"system": system, "messages": messages})
    assert said.count(INPUT) == 1 and said.count(RESULT) == 1


async def test_the_default_format_has_no_prompt_and_a_stored_conversation_sends_the_input_once(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    assert (await window(client, tenant, "p3"))["prompt"] is None
    turns = [*HISTORY[1:], {"role": "user", "content": INPUT}]
    r = await client.post("/v1/users/p3/sessions/s1/messages", json={"messages": turns}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    w = await window(client, tenant, "p3", session_id="s1", format="openai")
    messages = w["prompt"]["messages"]
    # A user with no memory: the window text is only the input, so there is no system message.
    assert messages == [*HISTORY[1:], {"role": "user", "content": INPUT}]
    assert everything_said(messages).count(INPUT) == 1


async def test_an_unknown_format_is_a_422_naming_the_formats(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post(
        "/v1/users/p4/window", json={"input": "x", "max_tokens": 100, "format": "gemini"}, headers=tenant.agent
    )
    assert r.status_code == 422 and "'openai'" in r.text and "'anthropic'" in r.text, r.text


async def test_a_history_that_ends_with_the_input_holds_it_once(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    history = [*HISTORY, {"role": "user", "content": INPUT}]
    for fmt in ("window", "openai", "anthropic"):
        w = await window(client, tenant, "p5", messages=history, format=fmt)
        assert w["messages"] == HISTORY, fmt
        assert everything_said({"text": w["text"], "messages": w["messages"]}).count(INPUT) == 1
        if w["prompt"] is not None:
            assert everything_said(w["prompt"]).count(INPUT) == 1, fmt
