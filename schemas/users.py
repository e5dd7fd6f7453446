"""Schemas for a user's data as a whole: events, export, erasure."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from schemas.common import ReadModel


class EventRead(ReadModel):
    id: uuid.UUID
    user_id: str | None
    actor: str
    actor_role: str
    action: str
    entity_type: str
    entity_id: str | None
    reason: str | None
    rule: str | None
    run_id: uuid.UUID | None = None
    before: Any
    after: Any
    created_at: datetime


class EventPage(ReadModel):
    items: list[EventRead]
    next_cursor: str | None


class EraseResult(ReadModel):
    erased: bool
    user_fingerprint: str
    rows: dict[str, int]
    erased_at: datetime
