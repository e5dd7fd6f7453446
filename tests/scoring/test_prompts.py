"""scoring/prompts.py: a window as one model call's messages, OpenAI's and Anthropic's shapes, the input once."""

from __future__ import annotations

import pytest

from scoring.prompts import anthropic_prompt, openai_prompt, split_input

TEXT = "## Rules\n- Be brief.\n\n## Facts\n- The team is small.\n\n## Latest input\nWhat now?\n\n"
PREFIX = "## Rules\n- Be brief.\n\n"


def call(i: str, args: str) -> dict[str, object]:
    return {"id": i, "type": "function", "function": {"name": "f", "arguments": args}}


def test_the_input_section_is_taken_off_the_text_exactly() -> None:
    assert split_input(TEXT, "What now?") == "## Rules\n- Be brief.\n\n## Facts\n- The team is small."
    with pytest.raises(ValueError, match="latest input"):
        split_input(TEXT, "Something else?")


def test_openai_prompt_keeps_the_history_as_sent() -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    out = openai_prompt(text=TEXT, messages=history, latest_input="What now?")
    assert out["messages"] == [
        {"role": "system", "content": "## Rules\n- Be brief.\n\n## Facts\n- The team is small."},
        *history,
        {"role": "user", "content": "What now?"},
    ]


def test_anthropic_prompt_converts_calls_results_parts_and_merges_turns() -> None:
    history = [
        {"role": "developer", "content": "Answer in English."},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        {"role": "assistant", "content": "Checking.", "tool_calls": [call("a", '{"q": 1}'), call("b", "not json")]},
        {"role": "tool", "tool_call_id": "a", "content": "one"},
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "two"}]},
    ]  # fmt: skip
    out = anthropic_prompt(text=TEXT, prefix=PREFIX, messages=history, latest_input="What now?")
    assert out["system"] == [
        {"type": "text", "text": "## Rules\n- Be brief.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "## Facts\n- The team is small."},
        {"type": "text", "text": "Answer in English."},
    ]
    user, assistant, results = out["messages"]
    assert user == {"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
    ]}  # fmt: skip
    assert assistant["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "a", "name": "f", "input": {"q": 1}},
        {"type": "tool_use", "id": "b", "name": "f", "input": {"arguments": "not json"}},
    ]
    # Both results and the input are one user turn, right after the calls.
    assert results == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "one"},
        {"type": "tool_result", "tool_use_id": "b", "content": "two"},
        {"type": "text", "text": "What now?"},
    ]}  # fmt: skip


def test_without_memory_there_is_no_system_part() -> None:
    only_input = "## Latest input\nhi\n\n"
    assert openai_prompt(text=only_input, messages=[], latest_input="hi") == {
        "messages": [{"role": "user", "content": "hi"}]
    }
    assert anthropic_prompt(text=only_input, prefix="", messages=[], latest_input="hi") == {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    }


def test_openai_prompt_leaves_out_fields_that_are_not_openais() -> None:
    history = [{"role": "user", "content": "hi", "agents_item": {"id": "msg_1"}}]
    out = openai_prompt(text=TEXT, messages=history, latest_input="What now?")
    assert out["messages"][1] == {"role": "user", "content": "hi"}
