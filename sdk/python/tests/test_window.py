"""``Window.to_openai()`` on windows shaped like the server's (the latest input is the text's last section)."""

from __future__ import annotations

from typing import Any

from ctxmem_client import Window

TOKENS = {"budget": 100, "used": 10, "pinned": 5, "text": 5, "messages": 5, "tools": 0, "sections": {}}


def _window(text: str, messages: list[dict[str, Any]], latest: str | None) -> Window:
    data = {
        "mode": "full",
        "text": text,
        "sections": [],
        "messages": messages,
        "omitted": [],
        "warnings": [],
        "tokens": TOKENS,
        "prefix_tokens": 0,
        "prefix_hash": "h",
        "state_version": "v",
    }
    window = Window.model_validate(data)
    return window.with_input(latest) if latest is not None else window


def test_the_input_moves_from_the_text_to_the_last_user_message() -> None:
    text = "## Constraints\n- No Redis Cluster.\n\n## Latest input\nWhich cache?\n\n"
    out = _window(text, [{"role": "user", "content": "Hi"}], "Which cache?").to_openai()
    assert out == [
        {"role": "system", "content": "## Constraints\n- No Redis Cluster."},
        {"role": "user", "content": "Hi"},
        {"role": "user", "content": "Which cache?"},
    ]


def test_a_text_holding_only_the_input_gives_no_system_message() -> None:
    out = _window("## Latest input\nHello\n\n", [], "Hello").to_openai()
    assert out == [{"role": "user", "content": "Hello"}]


def test_an_input_the_text_does_not_end_with_is_left_in_place() -> None:
    text = "## Constraints\n- x\n\n## Latest input\nSomething else\n\n"
    window = _window(text, [], "Hello")
    assert window.to_openai() == [{"role": "system", "content": text}]
    assert window.system_text() == text


def test_the_history_is_copied_not_shared() -> None:
    history = [{"role": "user", "content": "Hello"}]
    window = _window("## Latest input\nHello\n\n", history, "Hello")
    out = window.to_openai()
    out[0]["content"] = "changed"
    assert window.messages == history
