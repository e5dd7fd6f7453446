"""A user's timeline, export and erasure; job runs; health (schemas/users.py and schemas/jobs.py)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from ctxmem_client.models.base import Model

EventKind = Literal["item", "profile", "observation"]
JobName = Literal["expire", "promote", "decay", "purge", "reindex", "extract"]


class Event(Model):
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


class EventPage(Model):
    items: list[Event]
    next_cursor: str | None


class EraseResult(Model):
    erased: bool
    user_fingerprint: str
    rows: dict[str, int]
    erased_at: datetime


class JobRun(Model):
    id: uuid.UUID
    name: str
    tenant_id: str | None
    trigger: str
    tick: datetime | None
    as_of: datetime
    started_at: datetime
    finished_at: datetime | None
    status: str
    rows: dict[str, int]
    error: str | None


class JobRunPage(Model):
    items: list[JobRun]


class Health(Model):
    """``GET /healthz``: ``ok`` while the process serves requests."""

    status: str


class Readiness(Model):
    """``GET /readyz``: ``ready`` or ``not-ready``, with the checks (database, vector index, tokenizer)."""

    status: str
    checks: dict[str, Any]

    @property
    def ready(self) -> bool:
        return self.status == "ready"
