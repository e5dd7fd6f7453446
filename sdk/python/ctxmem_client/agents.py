"""An OpenAI Agents SDK ``Session`` on a ctxmem conversation: ``pip install 'ctxmem-client[agents]'``.

``CtxmemSession(session_id, client.user("alice"))`` (an ``AsyncClient``'s user) keeps the items of a run in
``…/sessions/{session_id}/messages``, so a ctxmem window with that ``session_id`` fits the same history and
the turns that fall out of it become ``episode`` items of the user's long-term memory.

Each Agents SDK item (a Responses API input item) is stored as one OpenAI chat message:

- a message (``{"role", "content"}``, with or without ``"type": "message"``) → that role, its text (a list
  of ``input_text`` / ``output_text`` parts is joined);
- ``function_call`` → an assistant message with one ``tool_calls`` entry (id = ``call_id``; parallel calls
  are consecutive assistant messages);
- ``function_call_output`` with a string output → a ``tool`` message answering ``call_id``;
- anything else (reasoning, hosted tool calls, images, files…) has no chat form: an assistant message with
  no content.

So that ``get_items`` returns exactly what ``add_items`` received, a message whose chat form does not give the
item back (an id, a status, annotations, a non-text part, a non-chat item) also carries the item itself, as
the extra field ``agents_item``; ctxmem keeps extra fields, and passes them through to a window's ``prompt``.
An endpoint that refuses unknown message fields needs ``keep_original=False``: then only the chat form is
stored and read back (items come back as easy messages, ``function_call`` and ``function_call_output``
items, without ids or statuses), and an item with no chat form raises ``ValueError``.

``pop_item`` takes back the newest message (``DELETE …/sessions/{s}/messages/last``); a message a window has
already archived into an episode stays (it is long-term memory), so then there is nothing to pop.
``clear_session`` ends the session: its messages are removed and the turns no window archived yet are kept
as one episode item.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, cast

from agents.items import TResponseInputItem
from agents.memory.session_settings import SessionSettings, resolve_session_limit

from ctxmem_client.async_client import AsyncUser
from ctxmem_client.errors import NotFound

ORIGINAL = "agents_item"
CHAT_ROLES = ("user", "system", "developer", "assistant")
TEXT_PARTS = ("input_text", "output_text")


def to_chat(item: dict[str, Any], *, keep_original: bool = True) -> dict[str, Any]:
    """The chat message that stores ``item`` (with the item itself under ``agents_item`` when needed)."""
    message = _chat_form(item)
    if message is None:
        if not keep_original:
            raise ValueError(f"an item of type {item.get('type')!r} has no chat form; use keep_original=True")
        message = {"role": "assistant", "content": None}
    if keep_original and from_chat(message) != item:
        message[ORIGINAL] = item
    return message


def from_chat(message: dict[str, Any]) -> dict[str, Any]:
    """The Agents SDK item a stored chat message holds."""
    if ORIGINAL in message:
        return cast(dict[str, Any], message[ORIGINAL])
    role = message["role"]
    if role == "tool":
        return {"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}
    calls = message.get("tool_calls")
    if role == "assistant" and calls:
        function = calls[0]["function"]
        return {
            "type": "function_call",
            "call_id": calls[0]["id"],
            "name": function["name"],
            "arguments": function["arguments"],
        }
    return {"role": role, "content": message.get("content")}


def _chat_form(item: dict[str, Any]) -> dict[str, Any] | None:
    kind = item.get("type")
    role = item.get("role")
    if kind in (None, "message") and role in CHAT_ROLES:
        content = item.get("content")
        if isinstance(content, str):
            return {"role": role, "content": content}
        if isinstance(content, list):
            texts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") in TEXT_PARTS]
            return {"role": role, "content": "".join(texts)}
        return None
    if kind == "function_call":
        call = {
            "id": item["call_id"],
            "type": "function",
            "function": {"name": item["name"], "arguments": item["arguments"]},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if kind == "function_call_output":
        output = item.get("output")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return {"role": "tool", "tool_call_id": item["call_id"], "content": text}
    return None


class CtxmemSession:
    """The Agents SDK ``Session`` protocol on one ctxmem conversation (see the module for the mapping)."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        user: AsyncUser,
        *,
        keep_original: bool = True,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.user = user
        self.keep_original = keep_original
        self.session_settings = session_settings or SessionSettings()

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first; with ``limit`` the latest ``limit`` of them."""
        items = [
            cast(TResponseInputItem, from_chat(stored.message))
            async for stored in self.user.iter_messages(self.session_id, limit=200)
        ]
        latest = resolve_session_limit(limit, self.session_settings)
        if latest is None:
            return items
        return items[-latest:] if latest > 0 else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        messages = [to_chat(cast(dict[str, Any], item), keep_original=self.keep_original) for item in items]
        await self.user.append_messages(self.session_id, messages)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (``DELETE …/sessions/{s}/messages/last``); None when the session
        has none a window has not archived (archived turns are long-term memory and stay)."""
        popped = await self.user.pop_message(self.session_id)
        if popped.removed is None:
            return None
        return cast(TResponseInputItem, from_chat(popped.removed.message))

    async def clear_session(self) -> None:
        """End the ctxmem session: its messages go, unarchived turns stay as one episode item."""
        with contextlib.suppress(NotFound):
            await self.user.end_session(self.session_id)


__all__ = ["CtxmemSession", "from_chat", "to_chat"]
