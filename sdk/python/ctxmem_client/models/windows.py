"""``POST …/window``: the context for the agent's next model call (schemas/windows.py on the server)."""

import uuid
from typing import Any, Literal, Required

from pydantic import PrivateAttr, TypeAdapter
from typing_extensions import TypedDict

from ctxmem_client.models.base import FORBID, Model

# The heading the server puts over the request's input, always the window text's last section
# (scoring/window.py, SECTIONS): "## Latest input\n" + the input verbatim + "\n", then a blank line.
LATEST_INPUT_HEADER = "## Latest input\n"


class WindowRequest(TypedDict, total=False):
    """``input`` and one budget (``max_tokens``, or ``context_limit`` with ``reserve_tokens``) are needed.
    ``messages`` is the chat history in OpenAI format, oldest first; ``tools`` the tool definitions."""

    __pydantic_config__ = FORBID  # type: ignore[misc]
    input: Required[str]
    max_tokens: int
    context_limit: int
    reserve_tokens: int
    watermark: float
    session_id: str
    task_id: str
    stage_id: str
    step_id: str
    goal: str
    plan: str
    query: str
    domains: list[str]
    messages: list[dict[str, Any]]
    tools: list[Any]
    archive_dropped: bool
    format: Literal["window", "openai", "anthropic"]
    # summary (the server's default): only the omitted items relevant to the query are listed, all are
    # counted in omitted_summary; full: every omitted item with its reason.
    detail: Literal["summary", "full"]


WINDOW_REQUEST: TypeAdapter[WindowRequest] = TypeAdapter(WindowRequest)


class WindowItem(Model):
    id: str
    level: int
    tokens: int
    reason: str
    value: float = 0.0


class WindowSection(Model):
    id: str
    title: str
    tokens: int
    items: list[WindowItem]


class Omitted(Model):
    id: str
    reason: str


class OmittedSummary(Model):
    count: int
    listed: int
    reasons: dict[str, int]


class WindowTokens(Model):
    budget: int
    used: int
    pinned: int
    text: int
    messages: int
    tools: int
    sections: dict[str, int]


class Window(Model):
    mode: Literal["full", "balanced", "compact"]
    text: str
    sections: list[WindowSection]
    messages: list[dict[str, Any]]
    omitted: list[Omitted]
    warnings: list[str]
    tokens: WindowTokens
    # Every omitted item counted by kind of reason (None from a server older than detail levels).
    omitted_summary: OmittedSummary | None = None
    prefix_tokens: int
    prefix_hash: str
    state_version: str
    archived_item_id: uuid.UUID | None = None
    cut: float = 0.0
    not_retrieved: int = 0
    # Only with format openai or anthropic: the model call's body ({messages} or {system, messages}).
    prompt: dict[str, Any] | None = None
    # The request's input, set by the client that asked for this window (not part of the response).
    _input: str | None = PrivateAttr(default=None)

    @property
    def input(self) -> str | None:
        """The latest input this window was assembled for (None for a window not fetched by this client)."""
        return self._input

    def with_input(self, value: str) -> "Window":
        self._input = value
        return self

    def system_text(self) -> str:
        """The window text without its final "## Latest input" section (and the blank lines before it), when
        that section holds exactly this window's input; otherwise the text unchanged."""
        block = self._input_block()
        return self.text[: -len(block)].rstrip("\n") if block is not None else self.text

    def to_openai(self) -> list[dict[str, Any]]:
        """The messages to send to an OpenAI-compatible chat model, with the latest input exactly once:

        1. ``{"role": "system", "content": system_text()}`` (left out if that is empty);
        2. the fitted ``messages``, unchanged (copied);
        3. ``{"role": "user", "content": input}``, unless the last user message of the fitted history already
           is the input (the agent sent it as part of ``messages``, or is in the middle of a tool loop).

        The same messages as the server's ``prompt`` with ``format="openai"``, worked out here so that any
        window gives them. When the text's last section is not exactly "## Latest input" followed by the
        input (a window built by hand without ``with_input``, or a server that renders it differently),
        nothing is removed from the text and no user message is added: the input is then once, inside the
        system message.
        """
        out: list[dict[str, Any]] = []
        system = self.system_text()
        if system:
            out.append({"role": "system", "content": system})
        out.extend(dict(m) for m in self.messages)
        found = self._input_block() is not None
        if found and self._input is not None and not _last_user_says(self.messages, self._input):
            out.append({"role": "user", "content": self._input})
        return out

    def _input_block(self) -> str | None:
        if self._input is None:
            return None
        block = f"{LATEST_INPUT_HEADER}{self._input}\n\n"
        return block if self.text.endswith(block) else None


def _last_user_says(messages: list[dict[str, Any]], text: str) -> bool:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text_of(message.get("content")) == text
    return False


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    return None
