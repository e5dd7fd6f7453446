"""Context-item schemas: create (single and batch), read, page."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, Strict, StringConstraints, model_validator

from schemas.common import (
    Confidence,
    DateTime,
    Domain,
    Flag,
    Identifier,
    JsonValue,
    ReadModel,
    SafeText,
    SlotKey,
    StrictModel,
    check_nonblank,
)
from scoring.items import SCOPE_ID_FIELD, authority_allowed

ItemType = Literal[
    "rule",
    "goal",
    "constraint",
    "preference",
    "fact",
    "decision",
    "entity",
    "plan",
    "tool_result",
    "summary",
    "episode",
]
Source = Literal["system", "user", "tool", "summary", "model"]
Authority = Literal["system", "user", "tool", "summary", "inferred"]
Scope = Literal["step", "stage", "task", "session", "user", "global"]
Kind = Literal["fact", "opinion"]
ItemStatus = Literal["available", "verified", "missing", "superseded", "expired", "deleted"]
# Statuses a client may write; the rest are reached only through the service's own rules.
WritableStatus = Literal["available", "verified", "missing"]

# The schema's ceiling; the service's limit is the setting CTXMEM_MAX_CONTENT_CHARS (32,000 by default),
# checked with a message naming it. The request body limit (CTXMEM_MAX_BODY_BYTES) bounds both.
MAX_CONTENT_CHARS = 1_000_000
# A vector component as the index stores it: a 32-bit float (a larger value cannot be stored at all).
FLOAT32_MAX = 3.4028234663852886e38
FiniteFloat = Annotated[float, Strict(), Field(allow_inf_nan=False, ge=-FLOAT32_MAX, le=FLOAT32_MAX)]
Content = Annotated[
    SafeText, StringConstraints(min_length=1, max_length=MAX_CONTENT_CHARS), AfterValidator(check_nonblank)
]
VariantText = Annotated[SafeText, StringConstraints(min_length=1, max_length=MAX_CONTENT_CHARS)]


class ItemVariants(StrictModel):
    """Precompressed versions supplied by the client; the window uses them before deriving its own."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "condensed": "Orders replica lag: 45 s during the nightly batch.",
                    "summary": "Replica lag 45 s at night.",
                    "index": "replica lag",
                }
            ]
        },
    )

    condensed: VariantText | None = Field(
        None, description="Level 1: the content with filler removed, every fact kept", examples=["Lag 45 s nightly."]
    )
    summary: VariantText | None = Field(
        None, description="Level 2: one or two sentences", examples=["Replica lag 45 s at night."]
    )
    index: Annotated[SafeText, StringConstraints(min_length=1, max_length=500)] | None = Field(
        None, description="Level 4: a few words naming the item (its index line)", examples=["replica lag"]
    )


class ItemCreate(StrictModel):
    """One context item. Only ``type`` and ``content`` are required; the rest has defaults by source,
    type and scope."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "type": "constraint",
                    "content": "Never book flights that land after 22:00.",
                    "source": "user",
                    "hard": True,
                },
                {
                    "type": "fact",
                    "content": "PostgreSQL replication lag on the orders replica reached 45 seconds.",
                    "source": "tool",
                    "key": "orders.replica.lag_seconds",
                    "value": 45,
                    "domain": "ops",
                },
            ]
        },
    )

    type: ItemType = Field(
        description="What the item is: rule, goal, constraint, preference, fact, decision, entity, plan, "
        "tool_result, summary or episode (a conversation turn). Sets its default expiry and window section.",
        examples=["fact"],
    )
    content: Content = Field(
        description="The text the model will read (at most CTXMEM_MAX_CONTENT_CHARS characters, 32,000 by default; "
        "the server counts its tokens). The window may show a compressed level of it, never a rewritten one.",
        examples=["The user's team has three engineers."],
    )
    key: SlotKey | None = Field(
        None,
        description="A slot name: items with the same key (and scope) compete, and the winner is chosen by "
        "authority, then recency. Omit for free-standing items.",
        examples=["team.size"],
    )
    value: JsonValue = Field(
        None, description="The slot's value as JSON (compared to decide replaced or reinforced)", examples=[3]
    )
    domain: Domain | None = Field(
        None, description="A topic label a window or listing can filter on", examples=["work"]
    )
    source: Source = Field(
        "model",
        description="Who produced it: system, user, tool, summary or model; the default is the least trusted. "
        "It sets the default authority and confidence.",
        examples=["user"],
    )
    authority: Authority | None = Field(
        None,
        description="Defaults from source; may lower it, never raise it. Only admin keys may write system.",
        examples=["user"],
    )
    scope: Scope = Field(
        "user",
        description="Where it applies: step, stage, task, session (needs the matching *_id), user (everywhere "
        "for this user) or global",
        examples=["session"],
    )
    session_id: Identifier | None = Field(None, description="Required with scope session", examples=["s-42"])
    task_id: Identifier | None = Field(None, description="Required with scope task", examples=["t-trip"])
    stage_id: Identifier | None = Field(None, description="Required with scope stage", examples=["booking"])
    step_id: Identifier | None = Field(None, description="Required with scope step", examples=["step-3"])
    hard: Flag = Field(
        False, description="A hard constraint (type constraint only): always in the window, verbatim", examples=[True]
    )
    kind: Kind = Field(
        "fact", description="fact (true or false) or opinion (someone's view; shown as such)", examples=["opinion"]
    )
    status: WritableStatus = Field(
        "available",
        description="available, verified (checked against a source) or missing (known to be unknown); the "
        "other statuses (superseded, expired, deleted) are reached only through the service's rules",
        examples=["verified"],
    )
    confidence: Confidence | None = Field(
        None, description="0 to 1; defaults by source (system 1.0 … model 0.5)", examples=[0.9]
    )
    observed_at: DateTime | None = Field(
        None,
        description="When it was true (RFC 3339 with a time zone); defaults to now; may be past",
        examples=["2026-09-01T08:30:00Z"],
    )
    expires_at: DateTime | None = Field(
        None,
        description="When it stops applying; defaults by type and scope (tool results soonest)",
        examples=["2026-12-31T00:00:00Z"],
    )
    variants: ItemVariants | None = Field(
        None, description="Your own compressed versions; the window prefers them to the ones it derives"
    )
    related_ids: Annotated[list[uuid.UUID], Field(max_length=100)] = Field(
        default_factory=list,
        description="Items that must be shown together with this one (up to 100)",
        examples=[["0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00"]],
    )
    corrects: uuid.UUID | None = Field(
        None,
        description="A user correction: retires this item at once (system items: admin keys only)",
        examples=["0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00"],
    )
    embedding: Annotated[list[FiniteFloat], Field(min_length=1, max_length=8192)] | None = Field(
        None,
        description="Your own vector for this item (its dimension must match the configured embedder)",
        examples=[[0.12, -0.03, 0.4]],
    )

    @model_validator(mode="after")
    def _rules(self) -> ItemCreate:
        id_field = SCOPE_ID_FIELD.get(self.scope)
        if id_field is not None and getattr(self, id_field) is None:
            raise ValueError(f"scope {self.scope!r} needs {id_field}")
        if self.hard and self.type != "constraint":
            raise ValueError("only constraints can be hard")
        if self.authority is not None and not authority_allowed(self.source, self.authority):
            raise ValueError(f"authority {self.authority!r} is above what source {self.source!r} earns")
        if self.expires_at is not None and self.observed_at is not None and self.expires_at <= self.observed_at:
            raise ValueError("expires_at must be after observed_at")
        if self.corrects is not None and self.source != "user":
            raise ValueError("corrects is only for user-sourced items (source 'user')")
        if len(set(self.related_ids)) != len(self.related_ids):
            raise ValueError("related_ids contains duplicates")
        return self


class ItemBatchCreate(StrictModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "items": [
                        {"type": "preference", "content": "Prefers window seats.", "source": "user"},
                        {"type": "goal", "content": "Plan a week in Lisbon in May.", "source": "user"},
                    ]
                }
            ]
        },
    )

    items: list[ItemCreate] = Field(
        min_length=1, description="1 to the batch limit (CTXMEM_MAX_BATCH_ITEMS) items, written in one transaction"
    )


class Resolution(ReadModel):
    """How a write was resolved against its slot (docs/design.md §3.2)."""

    outcome: Literal["new", "replaced", "rejected", "reinforced"]
    rule: str | None = Field(
        description="authority, recency, confidence, id, correction or reinforcement; null for a first value"
    )
    active_id: uuid.UUID = Field(description="The item that holds the slot after this write")
    retired_ids: list[uuid.UUID] = Field(description="Items this write retired (may include itself)")
    overrides: list[uuid.UUID] = Field(description="Broader-scope items this one overrides inside its scope")
    detail: str


class LevelText(ReadModel):
    level: int = Field(
        description="0 original, 1 condensed, 2 summary, 3 key fields, 4 index line", examples=[1], ge=0, le=4
    )
    text: str = Field(description="The item's text at this level, as a window shows it")
    tokens: int = Field(description="Its tokens")


class Evidence(ReadModel):
    """The words a learned item or observation rests on (docs/design.md §3.9)."""

    message_id: uuid.UUID | None = Field(
        description="The stored conversation message (null: a message sent to POST …/extract, not stored)"
    )
    session_id: str | None = Field(description="The conversation it was said in")
    message_index: int | None = Field(
        None, description="For messages sent to POST …/extract: the message's place in the request's list"
    )
    span: list[int] = Field(description="[start, end): where the quote is in the message's text (NFC)")
    quote: str = Field(description="The user's words, verbatim")


class ItemRead(ReadModel):
    id: uuid.UUID
    user_id: str
    type: ItemType
    content: str
    key: str | None
    value: Any
    domain: str | None
    source: Source
    authority: Authority
    scope: Scope
    session_id: str | None
    task_id: str | None
    stage_id: str | None
    step_id: str | None
    hard: bool
    kind: Kind
    status: ItemStatus
    status_reason: str | None
    confidence: float
    observed_at: datetime
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    valid_to: datetime | None
    deleted_at: datetime | None
    superseded_by: uuid.UUID | None
    token_cost: int
    token_model: str
    variants: ItemVariants | None
    related_ids: list[uuid.UUID]
    support_count: int
    corrects: uuid.UUID | None
    extracted_by: str | None = Field(
        None, description="Learned from a conversation: the extractor and its version (null: written by a client)"
    )
    evidence: Evidence | None = Field(None, description="Learned items: the message and the words it rests on")
    resolution: Resolution | None = Field(None, description="Only on write responses")
    overrides: list[uuid.UUID] | None = Field(None, description="Only in view=effective listings")
    at_level: LevelText | None = Field(
        None, description="Only from GET …/items/{item_id}?level=N: the item's text at that compression level"
    )


class ItemPage(ReadModel):
    items: list[ItemRead]
    next_cursor: str | None


class ItemBatchResult(ReadModel):
    items: list[ItemRead]
