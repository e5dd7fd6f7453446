"""Observations in, profile entries and the effective profile out (schemas/profiles.py on the server)."""

import uuid
from datetime import datetime
from typing import Any, Literal, Required

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from ctxmem_client.models.base import FORBID, Model
from ctxmem_client.models.events import Event
from ctxmem_client.models.items import Evidence

Dimension = Literal["goal", "ability", "preference", "decision_style", "relationship"]
Polarity = Literal["like", "dislike", "neutral"]
Tier = Literal["current", "candidate", "long_term"]
EntryStatus = Literal["active", "weakened", "expired", "rejected"]


class ObservationCreate(TypedDict, total=False):
    """One piece of evidence about the user: ``dimension``, ``key``, ``value`` and ``session_id`` required."""

    __pydantic_config__ = FORBID  # type: ignore[misc]
    domain: str
    dimension: Required[Dimension]
    key: Required[str]
    value: Required[str]
    polarity: Polarity
    session_id: Required[str]
    context: str
    explicit: bool
    stance: Literal["supports", "contradicts"]
    confirmation: bool
    observed_at: datetime
    source: Literal["system", "user", "tool", "summary", "model"]
    note: str
    weight: float


class ObservationBatchCreate(TypedDict):
    __pydantic_config__ = FORBID  # type: ignore[misc]
    observations: list[ObservationCreate]


class ConfirmBody(TypedDict, total=False):
    """The explicit observation a confirm or reject records (every key optional)."""

    __pydantic_config__ = FORBID  # type: ignore[misc]
    session_id: str
    context: str
    note: str


OBSERVATION_CREATE: TypeAdapter[ObservationCreate] = TypeAdapter(ObservationCreate)
OBSERVATION_BATCH: TypeAdapter[ObservationBatchCreate] = TypeAdapter(ObservationBatchCreate)
CONFIRM_BODY: TypeAdapter[ConfirmBody] = TypeAdapter(ConfirmBody)


class ProfileEntry(Model):
    id: uuid.UUID
    user_id: str
    domain: str | None
    dimension: Dimension
    key: str
    value: str
    polarity: Polarity
    tier: Tier
    status: EntryStatus
    score: float
    breakdown: dict[str, Any]
    explicit: bool
    evidence_count: int
    evidence_ids: list[uuid.UUID] | None = None
    current_session_id: str | None
    confirmed_at: datetime | None
    first_evidence_at: datetime
    last_evidence_at: datetime
    last_supported_at: datetime | None
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


class Observation(Model):
    id: uuid.UUID
    entry_id: uuid.UUID
    session_id: str
    context: str
    explicit: bool
    stance: str
    confirmation: bool
    observed_at: datetime
    source: str
    note: str | None
    weight: float
    created_at: datetime
    extracted_by: str | None = None
    evidence: Evidence | None = None


class ProfileEntryBatch(Model):
    items: list[ProfileEntry]


class EffectiveEntry(Model):
    entry: ProfileEntry
    why: str
    overrides: list[uuid.UUID]


class Overridden(Model):
    id: uuid.UUID
    by: uuid.UUID


class EffectiveProfile(Model):
    session_id: str | None
    domains: list[str] | None
    entries: list[EffectiveEntry]
    constraints: list[EffectiveEntry]
    hints: list[ProfileEntry]
    overridden: list[Overridden]


class Profile(Model):
    tiers: dict[str, dict[str, list[ProfileEntry]]]
    effective: EffectiveProfile


class EntryEvidence(Model):
    entry: ProfileEntry
    breakdown: dict[str, Any]
    observations: list[Observation]
    events: list[Event]
