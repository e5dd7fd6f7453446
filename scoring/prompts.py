"""Ready-to-send prompts (docs/design.md §4): a window as the messages of one model call, in OpenAI's or
Anthropic's format, with nothing in it twice.

The window's text is the system part. Its last section is always the latest input; that section is taken
off the text and sent once, as the last user message. The text keeps its stable prefix (rules, the
long-term profile) first, so a provider's prompt cache can reuse it from one turn to the next; for
Anthropic, whose cache is opt-in, the prefix is its own system block marked ``cache_control``. The fitted
history goes between the two, as it was sent (OpenAI) or converted block by block (Anthropic).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from scoring.window import HEADERS

FORMATS = ("openai", "anthropic")
# The fields of a Chat Completions message. A stored or sent message may carry others (ctxmem keeps them,
# e.g. an adapter's own record of the original item); a prompt to send as is leaves them out.
OPENAI_MESSAGE_FIELDS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "audio"})


def split_input(text: str, latest_input: str) -> str:
    """The window text without its last section, the latest input (rendered verbatim, so it is exactly
    this suffix)."""
    block = f"{HEADERS['input']}{latest_input}\n\n"
    if not text.endswith(block):
        raise ValueError("the window text does not end with its latest input")
    return text[: -len(block)].rstrip("\n")


def openai_prompt(*, text: str, messages: Sequence[Mapping[str, Any]], latest_input: str) -> dict[str, Any]:
    """``{"messages": [...]}`` for the Chat Completions API: the window text as the system message, the
    fitted history as sent (its messages' fields that are not OpenAI's left out), the latest input as the
    last user message."""
    context = split_input(text, latest_input)
    out: list[dict[str, Any]] = [{"role": "system", "content": context}] if context else []
    out += [{k: v for k, v in m.items() if k in OPENAI_MESSAGE_FIELDS} for m in messages]
    out.append({"role": "user", "content": latest_input})
    return {"messages": out}


def anthropic_prompt(
    *, text: str, prefix: str, messages: Sequence[Mapping[str, Any]], latest_input: str
) -> dict[str, Any]:
    """``{"system": [...], "messages": [...]}`` for the Messages API (no ``system`` when there is none).
    System and developer messages of the history join the system blocks after the window text; assistant
    tool calls become ``tool_use`` blocks and tool messages ``tool_result`` blocks of the next user turn;
    consecutive messages of one role are one turn (tool results must directly follow their calls); the
    latest input ends the last user turn."""
    context = split_input(text, latest_input)
    system: list[dict[str, Any]] = []
    stable = prefix.rstrip("\n")
    if stable and context.startswith(stable):
        system.append({"type": "text", "text": stable, "cache_control": {"type": "ephemeral"}})
        context = context[len(stable) :]
    if context.strip("\n"):
        system.append({"type": "text", "text": context.strip("\n")})
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for m in messages:
        role = m["role"]
        if role in ("system", "developer"):
            said = _text(m.get("content"))
            if said:
                system.append({"type": "text", "text": said})
        elif role == "tool":
            add("user", [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": _text(m.get("content"))}])
        elif role == "assistant":
            blocks = _blocks(m.get("content"))
            for call in m.get("tool_calls") or ():
                fn = call.get("function") or {}
                blocks.append(
                    {"type": "tool_use", "id": call["id"], "name": fn.get("name", ""), "input": _arguments(fn)}
                )
            add("assistant", blocks)
        else:
            add("user", _blocks(m.get("content")))
    add("user", [{"type": "text", "text": latest_input}])
    return {"system": system, "messages": turns} if system else {"messages": turns}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("text"))
    return ""


def _blocks(content: Any) -> list[dict[str, Any]]:
    """OpenAI content (a string or parts) as Anthropic content blocks: text, and images given by URL."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for part in content or ():
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text" and part.get("text"):
            out.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url" and isinstance(part.get("image_url"), Mapping):
            url = str(part["image_url"].get("url", ""))
            if url.startswith("data:") and ";base64," in url:
                media, data = url[5:].split(";base64,", 1)
                out.append({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
            elif url:
                out.append({"type": "image", "source": {"type": "url", "url": url}})
    return out


def _arguments(fn: Mapping[str, Any]) -> dict[str, Any]:
    """A call's JSON-encoded arguments as the object Anthropic wants (``{}`` for none; arguments that are
    not a JSON object are kept whole under ``"arguments"``)."""
    raw = fn.get("arguments") or ""
    if not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}
