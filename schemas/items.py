"""Context-item schemas: create (single and batch), read, page."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from schemas.common import (
    Confidence,
    DateTime,
    Domain,
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

MAX_CONTENT_CHARS = 32_000
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Content = Annotated[
    SafeText, StringConstraints(min_length=1, max_length=MAX_CONTENT_CHARS), AfterValidator(check_nonblank)
]
VariantText = Annotated[SafeText, StringConstraints(min_length=1, max_length=MAX_CONTENT_CHARS)]


class ItemVariants(StrictModel):
    """Precompressed versions supplied by the client; the window uses them before deriving its own."""

    condensed: VariantText | None = None
    summary: VariantText | None = None
    index: Annotated[SafeText, StringConstraints(min_length=1, max_length=500)] | None = None


class ItemCreate(StrictModel):
    type: ItemType
    content: Content
    key: SlotKey | None = None
    value: JsonValue = None
    domain: Domain | None = None
    source: Source = Field("model", description="Who produced it; the default is the least trusted.")
    authority: Authority | None = Field(
        None,
        description="Defaults from source; may lower it, never raise it. Only admin keys may write system.",
    )
    scope: Scope = "user"
    session_id: Identifier | None = None
    task_id: Identifier | None = None
    stage_id: Identifier | None = None
    step_id: Identifier | None = None
    hard: bool = False
    kind: Kind = "fact"
    status: WritableStatus = "available"
    confidence: Confidence | None = Field(None, description="Defaults by source (system 1.0 … model 0.5).")
    observed_at: DateTime | None = Field(None, description="When it was true; defaults to now; may be past.")
    expires_at: DateTime | None = Field(None, description="Defaults by type and scope.")
    variants: ItemVariants | None = None
    related_ids: Annotated[list[uuid.UUID], Field(max_length=100)] = Field(default_factory=list)
    corrects: uuid.UUID | None = Field(
        None, description="A user correction: retires this item at once (system items: admin keys only)."
    )
    embedding: Annotated[list[FiniteFloat], Field(min_length=1, max_length=8192)] | None = Field(
        None, description="Your own vector for this item (its dimension must match the configured embedder)"
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
    items: list[ItemCreate] = Field(min_length=1)


class Resolution(ReadModel):
    """How a write was resolved against its slot (DESIGN §3.2)."""

    outcome: Literal["new", "replaced", "rejected", "reinforced"]
    rule: str | None = Field(
        description="authority, recency, confidence, id, correction or reinforcement; null for a first value"
    )
    active_id: uuid.UUID = Field(description="The item that holds the slot after this write")
    retired_ids: list[uuid.UUID] = Field(description="Items this write retired (may include itself)")
    overrides: list[uuid.UUID] = Field(description="Broader-scope items this one overrides inside its scope")
    detail: str


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
    resolution: Resolution | None = Field(None, description="Only on write responses")
    overrides: list[uuid.UUID] | None = Field(None, description="Only in view=effective listings")


class ItemPage(ReadModel):
    items: list[ItemRead]
    next_cursor: str | None


class ItemBatchResult(ReadModel):
    items: list[ItemRead]
