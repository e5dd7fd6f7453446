"""Profile schemas: observations in, entries and the effective profile out."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, Strict, StringConstraints
from pydantic.config import JsonDict

from schemas.common import (
    DateTime,
    Domain,
    Flag,
    Identifier,
    ReadModel,
    SafeText,
    SlotKey,
    StrictModel,
    check_nonblank,
    to_nfc,
)
from schemas.items import Evidence
from schemas.users import EventRead

Dimension = Literal["goal", "ability", "preference", "decision_style", "relationship"]
Polarity = Literal["like", "dislike", "neutral"]
Tier = Literal["current", "candidate", "long_term"]
EntryStatus = Literal["active", "weakened", "expired", "rejected"]
ObservationSource = Literal["system", "user", "tool", "summary", "model"]
# Stored in NFC: an entry is keyed by its value, and "Café" in NFC and in NFD must be one entry. Blank is
# refused after stripping (the length bounds are checked before it).
Value = Annotated[
    SafeText,
    StringConstraints(min_length=1, max_length=200, strip_whitespace=True),
    AfterValidator(check_nonblank),
    AfterValidator(to_nfc),
]


_OBSERVATION_EXAMPLE: JsonDict = {
    "domain": "laptop",
    "dimension": "preference",
    "key": "brand",
    "value": "ThinkPad",
    "session_id": "s-7",
    "context": "buy_laptop",
    "explicit": True,
}


class ObservationCreate(StrictModel):
    """One piece of evidence about the user: the profile entry (domain, dimension, key, value) it is about,
    and whether it supports or contradicts it."""

    model_config = ConfigDict(json_schema_extra={"examples": [_OBSERVATION_EXAMPLE]})

    domain: Domain | None = Field(None, description="Omit for a global entry", examples=["laptop"])
    dimension: Dimension = Field(
        description="What kind of belief: goal, ability, preference, decision_style or relationship",
        examples=["preference"],
    )
    key: SlotKey = Field(description="The entry's name within its domain and dimension", examples=["brand"])
    value: Value = Field(description="The believed value (1 to 200 characters)", examples=["ThinkPad"])
    polarity: Polarity = Field("like", description="like, dislike or neutral", examples=["dislike"])
    session_id: Identifier = Field(
        description="The session it was observed in: independent sessions are what Count counts", examples=["s-7"]
    )
    context: Identifier = Field(
        "default", description="The scene it came from, e.g. buy_laptop", examples=["buy_laptop"]
    )
    explicit: Flag = Field(False, description="The user said it (else inferred from behaviour)", examples=[True])
    stance: Literal["supports", "contradicts"] = Field(
        "supports", description="supports the belief, or contradicts it (a denial)", examples=["contradicts"]
    )
    confirmation: Flag = Field(
        False, description="The user answered yes (supports) or no (contradicts) when asked", examples=[True]
    )
    observed_at: DateTime | None = Field(
        None, description="When it was observed (RFC 3339); defaults to now", examples=["2026-09-01T08:30:00Z"]
    )
    source: ObservationSource = Field(
        "model", description="Who observed it: system, user, tool, summary or model", examples=["user"]
    )
    note: Annotated[SafeText, StringConstraints(max_length=2000)] | None = Field(
        None, description="Free text kept with the evidence (shown to operators)", examples=["said so in chat"]
    )
    weight: Annotated[float, Strict()] = Field(
        1.0,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="How much this piece of evidence counts (0 to 1]",
        examples=[0.5],
    )


class ObservationBatchCreate(StrictModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"observations": [_OBSERVATION_EXAMPLE]}]})

    observations: list[ObservationCreate] = Field(
        min_length=1, description="1 to the batch limit (CTXMEM_MAX_BATCH_ITEMS) observations, in one transaction"
    )


class ConfirmBody(StrictModel):
    """Confirm or reject an entry on the user's behalf (records an explicit observation)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"note": "confirmed by the user on the phone"}]})

    session_id: Identifier = Field(
        "operator", description="The session recorded with the observation", examples=["support-call-12"]
    )
    context: Identifier = Field("operator", description="The context recorded with it", examples=["support"])
    note: Annotated[SafeText, StringConstraints(max_length=2000)] | None = Field(
        None,
        description="Why, in a few words (kept with the evidence)",
        examples=["confirmed by the user on the phone"],
    )


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
    evidence_ids: list[uuid.UUID] | None = Field(
        None,
        description="The observations behind it: on write responses and GET /profile/{entry_id}; null in listings, "
        "which give evidence_count only",
    )
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
    extracted_by: str | None = Field(None, description="Learned from a conversation: the extractor and version")
    evidence: Evidence | None = Field(None, description="Learned observations: the message and the words")


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
