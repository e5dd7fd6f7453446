"""Scheduled-job schemas."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import Field

from schemas.common import DateTime, ReadModel, StrictModel

JobName = Literal["expire", "promote", "decay", "purge", "reindex"]


class JobRunRequest(StrictModel):
    now: DateTime | None = Field(None, description="Run as of this time (simulate the future or the past)")


class JobRunRead(ReadModel):
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


class JobRunPage(ReadModel):
    items: list[JobRunRead]
