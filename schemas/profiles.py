"""Profile schemas: observations in, entries and the effective profile out."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from schemas.common import DateTime, Domain, Identifier, ReadModel, SafeText, SlotKey, StrictModel
from schemas.users import EventRead

Dimension = Literal["goal", "ability", "preference", "decision_style", "relationship"]
Polarity = Literal["like", "dislike", "neutral"]
Tier = Literal["current", "candidate", "long_term"]
EntryStatus = Literal["active", "weakened", "expired", "rejected"]
ObservationSource = Literal["system", "user", "tool", "summary", "model"]
Value = Annotated[SafeText, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]


class ObservationCreate(StrictModel):
    domain: Domain | None = Field(None, description="Omit for a global entry")
    dimension: Dimension
    key: SlotKey
    value: Value
    polarity: Polarity = "like"
    session_id: Identifier = Field(description="Independent sessions are what Count counts")
    context: Identifier = Field("default", description="The scene it came from, e.g. buy_laptop")
    explicit: bool = Field(False, description="The user said it (else inferred from behaviour)")
    stance: Literal["supports", "contradicts"] = "supports"
    confirmation: bool = Field(False, description="The user answered yes (supports) or no (contradicts) when asked")
    observed_at: DateTime | None = None
    source: ObservationSource = "model"
    note: Annotated[SafeText, StringConstraints(max_length=2000)] | None = None
    weight: float = Field(1.0, gt=0, le=1, allow_inf_nan=False)


class ObservationBatchCreate(StrictModel):
    observations: list[ObservationCreate] = Field(min_length=1)


class ConfirmBody(StrictModel):
    """Confirm or reject an entry on the user's behalf (records an explicit observation)."""

    session_id: Identifier = "operator"
    context: Identifier = "operator"
    note: Annotated[SafeText, StringConstraints(max_length=2000)] | None = None


class ProfileEntryRead(ReadModel):
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
    evidence_ids: list[uuid.UUID] = Field(default_factory=list)
    current_session_id: str | None
    confirmed_at: datetime | None
    first_evidence_at: datetime
    last_evidence_at: datetime
    last_supported_at: datetime | None
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


class ObservationRead(ReadModel):
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


class ProfileEntryBatch(ReadModel):
    items: list[ProfileEntryRead]


class EffectiveEntryRead(ReadModel):
    entry: ProfileEntryRead
    why: Literal["long_term", "current-statement"]
    overrides: list[uuid.UUID]


class OverriddenRead(ReadModel):
    id: uuid.UUID
    by: uuid.UUID


class EffectiveProfileRead(ReadModel):
    session_id: str | None
    domains: list[str] | None
    entries: list[EffectiveEntryRead]
    constraints: list[EffectiveEntryRead] = Field(description="Confirmed dislikes: do not recommend these")
    hints: list[ProfileEntryRead] = Field(description="Candidates and weakened beliefs: tentative, never defaults")
    overridden: list[OverriddenRead]


class ProfileRead(ReadModel):
    tiers: dict[str, dict[str, list[ProfileEntryRead]]] = Field(
        description="tier → domain ('global' for none) → entries"
    )
    effective: EffectiveProfileRead


class EntryEvidence(ReadModel):
    entry: ProfileEntryRead
    breakdown: dict[str, Any]
    observations: list[ObservationRead] = Field(description="Newest first")
    events: list[EventRead] = Field(description="Changes of this entry, newest first")
