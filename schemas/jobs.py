"""Scheduled-job schemas."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, get_args

from pydantic import ConfigDict, Field

from schemas.common import DateTime, ReadModel, StrictModel

# The one list of job names (docs/design.md §3.5); the runner, the CLI, the routes and settings derive theirs.
JobName = Literal["expire", "promote", "decay", "purge", "reindex", "extract"]
JOB_NAMES: tuple[JobName, ...] = get_args(JobName)


class JobRunRequest(StrictModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"now": "2026-12-31T00:00:00Z"}]})

    now: DateTime | None = Field(
        None,
        description="Run as of this time (RFC 3339; simulate the future or the past); default: now",
        examples=["2026-12-31T00:00:00Z"],
    )


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
