"""Window request and response (docs/design.md §3.6)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from schemas.common import (
    Count,
    Domain,
    Flag,
    Identifier,
    JsonValue,
    Number,
    ReadModel,
    SafeText,
    StrictModel,
    check_json,
)

LongText = Annotated[SafeText, StringConstraints(min_length=1, max_length=32_000)]


class PassThrough(StrictModel):
    """A model of OpenAI's chat format that keeps the fields it does not name (they are passed through, and
    stored with a conversation): they must be JSON that PostgreSQL can store, as every other value."""

    @model_validator(mode="after")
    def _extra_is_json(self) -> Self:
        if self.model_extra:
            check_json(self.model_extra)
        return self


class FunctionCall(PassThrough):
    model_config = ConfigDict(
        extra="allow", json_schema_extra={"examples": [{"name": "get_weather", "arguments": '{"city": "Lisbon"}'}]}
    )
    name: Annotated[SafeText, StringConstraints(min_length=1, max_length=256)] = Field(
        description="The function the model called", examples=["get_weather"]
    )
    arguments: Annotated[SafeText, StringConstraints(max_length=200_000)] = Field(
        description="The call's arguments as a JSON-encoded string, as OpenAI sends them (not a JSON object); "
        '"{}" for none',
        examples=['{"city": "Lisbon"}'],
    )


class ToolCall(PassThrough):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]
        },
    )
    id: Annotated[SafeText, StringConstraints(min_length=1, max_length=256)] = Field(
        description="The call's id; the tool message answering it carries it as tool_call_id", examples=["call_1"]
    )
    type: Literal["function"] = Field("function", description="Always function", examples=["function"])
    function: FunctionCall = Field(description="Which function, with which arguments")


class ContentPart(PassThrough):
    model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [{"type": "text", "text": "Hello"}]})
    type: Annotated[SafeText, StringConstraints(max_length=64)] = Field(
        description="The part's type, e.g. text or image_url (only text parts are counted as text)", examples=["text"]
    )
    text: Annotated[SafeText, StringConstraints(max_length=200_000)] | None = Field(
        None, description="The text of a text part", examples=["What is the weather in Lisbon?"]
    )


class ChatMessage(PassThrough):
    """An OpenAI chat message (extra fields are kept and passed through)."""

    model_config = ConfigDict(
        extra="allow", json_schema_extra={"examples": [{"role": "user", "content": "Find me a flight to Lisbon."}]}
    )
    role: Literal["system", "developer", "user", "assistant", "tool"] = Field(
        description="Who speaks: system, developer, user, assistant or tool", examples=["user"]
    )
    content: Annotated[SafeText, StringConstraints(max_length=200_000)] | list[ContentPart] | None = Field(
        None, description="A string, or a list of content parts", examples=["Find me a flight to Lisbon."]
    )
    name: Annotated[SafeText, StringConstraints(max_length=256)] | None = Field(
        None, description="An optional name of the speaker", examples=["alice"]
    )
    tool_calls: Annotated[list[ToolCall], Field(max_length=128)] | None = Field(
        None, description="Assistant messages only: the tools the model called"
    )
    tool_call_id: Annotated[SafeText, StringConstraints(min_length=1, max_length=256)] | None = Field(
        None, description="Tool messages only (required there): the id of the call this answers", examples=["call_1"]
    )

    @model_validator(mode="after")
    def _shape(self) -> ChatMessage:
        if self.role == "tool" and self.tool_call_id is None:
            raise ValueError("a tool message needs tool_call_id")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages carry tool_calls")
        return self


# With detail "summary", the omitted items listed at most (the most relevant to the query).
OMITTED_LISTED = 20


class WindowRequest(StrictModel):
    """The context for the agent's next model call. Send exactly one budget: ``max_tokens``, or
    ``context_limit`` (with ``reserve_tokens``)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "input": "Which cache should we pick for session data, given our small team?",
                    "max_tokens": 900,
                    "session_id": "s-42",
                    "messages": [
                        {"role": "user", "content": "We need to cache sessions."},
                        {"role": "assistant", "content": "How large is your team?"},
                    ],
                },
                {"input": "Book the cheapest flight.", "context_limit": 128000, "reserve_tokens": 4000},
            ]
        }
    )

    input: LongText = Field(
        description="The latest user message (always in the window, verbatim)", examples=["Book the cheapest flight."]
    )
    max_tokens: Count | None = Field(
        None, ge=1, le=2_000_000, description="Budget for everything returned (or send context_limit)", examples=[900]
    )
    context_limit: Count | None = Field(
        None,
        ge=1,
        le=2_000_000,
        description="The model's context size; the budget is then the smaller of context_limit - reserve_tokens "
        "and watermark x context_limit (or send max_tokens)",
        examples=[128000],
    )
    reserve_tokens: Count = Field(
        0, ge=0, le=2_000_000, description="Expected output + largest tool output + margin", examples=[4000]
    )
    watermark: Number | None = Field(
        None,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="Share of context_limit to fill (default CTXMEM_WINDOW_WATERMARK, 0.6)",
        examples=[0.6],
    )
    session_id: Identifier | None = Field(
        None,
        description="The conversation: its session-scoped items apply, and its turns are context",
        examples=["s-42"],
    )
    task_id: Identifier | None = Field(None, description="The task whose task-scoped items apply", examples=["t-trip"])
    stage_id: Identifier | None = Field(
        None, description="The stage whose stage-scoped items apply", examples=["booking"]
    )
    step_id: Identifier | None = Field(None, description="The step whose step-scoped items apply", examples=["step-3"])
    goal: LongText | None = Field(
        None,
        description="This request's goal, pinned in the window (else the user's active goal items)",
        examples=["Pick a cache"],
    )
    plan: LongText | None = Field(
        None,
        description="This request's plan, pinned in the window (else the user's plan items)",
        examples=["1. compare 2. decide"],
    )
    query: LongText | None = Field(
        None, description="What relevance is judged against; defaults to input", examples=["session cache choice"]
    )
    domains: Annotated[list[Domain], Field(max_length=32)] | None = Field(
        None, description="Only items in these domains (and items without one) are candidates", examples=[["work"]]
    )
    messages: Annotated[list[ChatMessage], Field(max_length=1000)] = Field(
        default_factory=list,
        description="The chat history so far (OpenAI format, oldest first); the newest turns that fit are kept",
    )
    tools: Annotated[list[JsonValue], Field(max_length=256)] = Field(
        default_factory=list,
        description="The tool definitions you will send with the call: their tokens are counted against the budget",
        examples=[[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]],
    )
    archive_dropped: Flag = Field(
        False, description="Store the history that did not fit as an episode item (needs a key that may write)"
    )
    format: Literal["window", "openai", "anthropic"] = Field(
        "window",
        description="openai / anthropic: also return prompt, the messages of the model call ready to send as they "
        "are (the window text as the system part, the fitted history, the latest input once as the last user "
        "message); window: the text and messages only",
        examples=["openai"],
    )
    detail: Literal["summary", "full"] = Field(
        "summary",
        description="How much the response says about what was left out. summary: the omitted items relevant to "
        f"the query (best first, at most {OMITTED_LISTED}) and counts of all of them by reason in omitted_summary; "
        "full: every omitted item with its reason. What was kept is listed in full either way",
        examples=["full"],
    )

    @model_validator(mode="after")
    def _budget(self) -> WindowRequest:
        if self.max_tokens is None and self.context_limit is None:
            raise ValueError(
                "a budget is needed: send max_tokens (the tokens the window may use), or context_limit "
                "(the model's context size, with reserve_tokens for its output)"
            )
        if self.max_tokens is not None and self.context_limit is not None:
            raise ValueError("send max_tokens or context_limit, not both: they are two ways to give the budget")
        if self.context_limit is not None and self.reserve_tokens >= self.context_limit:
            raise ValueError("reserve_tokens must be smaller than context_limit")
        return self


class WindowItem(ReadModel):
    id: str
    level: int = Field(description="0 original, 1 condensed, 2 summary, 3 key fields, 4 index line")
    tokens: int
    reason: str = Field(description="Why it holds this level: its relevance, and what it lost to when compressed")
    value: float = Field(0.0, description="Its value for this request (worth x relevance factor); 0 when pinned")


class WindowSection(ReadModel):
    id: str
    title: str
    tokens: int
    items: list[WindowItem]


class Omitted(ReadModel):
    id: str
    reason: str


class OmittedSummary(ReadModel):
    count: int = Field(description="Every candidate item left out of this window")
    listed: int = Field(description="How many of them omitted lists (all of them with detail full)")
    reasons: dict[str, int] = Field(
        description="How many were left out for each kind of reason (the reason up to its first ';', without "
        "the item it names)",
        examples=[{"dropped: over budget (background)": 212, "stale tool result (past expires_at)": 3}],
    )


class WindowTokens(ReadModel):
    budget: int = Field(description="The budget this window was assembled under")
    used: int = Field(description="Tokens of everything returned: text + messages + tools (at most budget)")
    pinned: int = Field(
        description="Tokens of what is always kept (pinned sections, the input, system messages, the current "
        "user turn, tools): estimated line by line, never more than used"
    )
    text: int = Field(description="Tokens of text, counted as a whole")
    messages: int = Field(description="Tokens of the fitted messages")
    tools: int = Field(description="Tokens of the tool definitions sent")
    sections: dict[str, int] = Field(description="Tokens per section of text, by section id")


class WindowResponse(ReadModel):
    mode: Literal["full", "balanced", "compact"]
    text: str
    sections: list[WindowSection]
    messages: list[dict[str, Any]]
    omitted: list[Omitted] = Field(
        description="Candidate items left out, each with why: with detail summary only those relevant to the "
        "query, best first; with detail full all of them"
    )
    omitted_summary: OmittedSummary = Field(default_factory=lambda: OmittedSummary(count=0, listed=0, reasons={}))
    warnings: list[str]
    tokens: WindowTokens
    prefix_tokens: int
    prefix_hash: str
    state_version: str
    archived_item_id: uuid.UUID | None = None
    cut: float = Field(
        0.0,
        description="Value per 1,000 tokens of the first step the budget could not take (0: nothing gave way)",
    )
    not_retrieved: int = Field(
        0,
        description="The user's items that apply here but were not candidates (neither standing, among the newest, "
        "nor retrieved for the query): counted, not listed",
    )
    prompt: dict[str, Any] | None = Field(
        None,
        description="Only with format openai or anthropic: the request body's messages for that API, to send as "
        "they are ({messages} for OpenAI's Chat Completions; {system, messages} for Anthropic's Messages)",
    )
