"""Window request and response (DESIGN §3.6)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from schemas.common import Domain, Identifier, JsonValue, ReadModel, SafeText, StrictModel

LongText = Annotated[SafeText, StringConstraints(min_length=1, max_length=32_000)]


class FunctionCall(StrictModel):
    model_config = ConfigDict(extra="allow")
    name: Annotated[SafeText, StringConstraints(min_length=1, max_length=256)]
    arguments: Annotated[SafeText, StringConstraints(max_length=200_000)] = ""


class ToolCall(StrictModel):
    model_config = ConfigDict(extra="allow")
    id: Annotated[SafeText, StringConstraints(min_length=1, max_length=256)]
    type: Literal["function"] = "function"
    function: FunctionCall


class ContentPart(StrictModel):
    model_config = ConfigDict(extra="allow")
    type: Annotated[SafeText, StringConstraints(max_length=64)]
    text: Annotated[SafeText, StringConstraints(max_length=200_000)] | None = None


class ChatMessage(StrictModel):
    """An OpenAI chat message (extra fields are kept and passed through)."""

    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Annotated[SafeText, StringConstraints(max_length=200_000)] | list[ContentPart] | None = None
    name: Annotated[SafeText, StringConstraints(max_length=256)] | None = None
    tool_calls: Annotated[list[ToolCall], Field(max_length=128)] | None = None
    tool_call_id: Annotated[SafeText, StringConstraints(min_length=1, max_length=256)] | None = None

    @model_validator(mode="after")
    def _shape(self) -> ChatMessage:
        if self.role == "tool" and self.tool_call_id is None:
            raise ValueError("a tool message needs tool_call_id")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages carry tool_calls")
        return self


class WindowRequest(StrictModel):
    input: LongText = Field(description="The latest user message (always in the window, verbatim)")
    max_tokens: int | None = Field(None, ge=1, le=2_000_000, description="Budget for everything returned")
    context_limit: int | None = Field(None, ge=1, le=2_000_000, description="The model's context size")
    reserve_tokens: int = Field(0, ge=0, le=2_000_000, description="Expected output + largest tool output + margin")
    watermark: float | None = Field(None, gt=0, le=1, allow_inf_nan=False, description="Default 0.6")
    session_id: Identifier | None = None
    task_id: Identifier | None = None
    stage_id: Identifier | None = None
    step_id: Identifier | None = None
    goal: LongText | None = None
    plan: LongText | None = None
    query: LongText | None = Field(None, description="What relevance is judged against; defaults to input")
    domains: Annotated[list[Domain], Field(max_length=32)] | None = None
    messages: Annotated[list[ChatMessage], Field(max_length=1000)] = Field(default_factory=list)
    tools: Annotated[list[JsonValue], Field(max_length=256)] = Field(default_factory=list)
    archive_dropped: bool = Field(False, description="Store dropped history as an episode item")

    @model_validator(mode="after")
    def _budget(self) -> WindowRequest:
        if (self.max_tokens is None) == (self.context_limit is None):
            raise ValueError("send either max_tokens or context_limit (with reserve_tokens), not both")
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


class WindowTokens(ReadModel):
    budget: int
    used: int
    pinned: int
    text: int
    messages: int
    tools: int
    sections: dict[str, int]


class WindowResponse(ReadModel):
    mode: Literal["full", "balanced", "compact"]
    text: str
    sections: list[WindowSection]
    messages: list[dict[str, Any]]
    omitted: list[Omitted]
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
