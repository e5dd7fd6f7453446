"""Context items: what a write sends, what the server answers (schemas/items.py on the server)."""

import uuid
from datetime import datetime
from typing import Any, Literal, Required

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from ctxmem_client.models.base import FORBID, Model

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
WritableStatus = Literal["available", "verified", "missing"]
Order = Literal["asc", "desc"]


class ItemVariants(TypedDict, total=False):
    __pydantic_config__ = FORBID  # type: ignore[misc]
    condensed: str
    summary: str
    index: str


class ItemCreate(TypedDict, total=False):
    """One item to write: ``type`` and ``content`` are required, the server defaults the rest."""

    __pydantic_config__ = FORBID  # type: ignore[misc]
    type: Required[ItemType]
    content: Required[str]
    key: str
    value: Any
    domain: str
    source: Source
    authority: Authority
    scope: Scope
    session_id: str
    task_id: str
    stage_id: str
    step_id: str
    hard: bool
    kind: Kind
    status: WritableStatus
    confidence: float
    observed_at: datetime
    expires_at: datetime
    variants: ItemVariants
    related_ids: list[uuid.UUID]
    corrects: uuid.UUID
    embedding: list[float]


class ItemBatchCreate(TypedDict):
    __pydantic_config__ = FORBID  # type: ignore[misc]
    items: list[ItemCreate]


class ItemFilters(TypedDict, total=False):
    """The filters of ``GET …/items`` (lists are repeated query parameters)."""

    type: list[ItemType]
    scope: list[Scope]
    status: list[ItemStatus]
    key: str
    domain: str
    session_id: str
    task_id: str
    stage_id: str
    step_id: str
    view: Literal["all", "effective"]
    include_superseded: bool
    include_expired: bool
    include_deleted: bool
    extracted_by: str  # "any" (learned), "none" (written by clients), an extractor ("rules") or a version
    order: Order
    limit: int


ITEM_CREATE: TypeAdapter[ItemCreate] = TypeAdapter(ItemCreate)
ITEM_BATCH: TypeAdapter[ItemBatchCreate] = TypeAdapter(ItemBatchCreate)


class Variants(Model):
    condensed: str | None = None
    summary: str | None = None
    index: str | None = None


class Resolution(Model):
    """How a write was resolved against its slot."""

    outcome: Literal["new", "replaced", "rejected", "reinforced"]
    rule: str | None
    active_id: uuid.UUID
    retired_ids: list[uuid.UUID]
    overrides: list[uuid.UUID]
    detail: str


class LevelText(Model):
    level: int
    text: str
    tokens: int


class Evidence(Model):
    """The words a learned item or observation rests on: the stored message (``message_id``), or for messages
    sent to ``extract`` their place in the list (``message_index``); ``span`` is ``[start, end)`` in its text."""

    message_id: uuid.UUID | None
    session_id: str | None
    message_index: int | None = None
    span: list[int]
    quote: str


class Item(Model):
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
    variants: Variants | None
    related_ids: list[uuid.UUID]
    support_count: int
    corrects: uuid.UUID | None
    extracted_by: str | None = None  # learned from a conversation: the extractor and version (rules/1)
    evidence: Evidence | None = None  # … and the words it rests on
    resolution: Resolution | None = None
    at_level: LevelText | None = None


class ItemPage(Model):
    items: list[Item]
    next_cursor: str | None


class ItemBatch(Model):
    items: list[Item]
