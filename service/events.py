"""The append-only event log. Every write records its event in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from service.db.bulk import copy_rows
from service.db.models import Event
from service.ids import uuid7

_EVENT = Event.__table__  # type: ignore[attr-defined]
_EVENT_BASE: dict[str, Any] = dict.fromkeys(c.name for c in _EVENT.columns)


async def record_event(
    session: AsyncSession,
    *,
    tenant_id: str,
    user_id: str | None,
    actor: str,
    actor_role: str,
    action: str,
    entity_type: str,
    entity_id: str | None,
    now: datetime,
    reason: str | None = None,
    rule: str | None = None,
    before: Any = None,
    after: Any = None,
) -> None:
    await record_events(
        session,
        [
            {
                "tenant_id": tenant_id,
                "user_id": user_id,
                "actor": actor,
                "actor_role": actor_role,
                "action": action,
                "entity_type": entity_type,
                "entity_id": entity_id,
                "reason": reason,
                "rule": rule,
                "before": before,
                "after": after,
                "created_at": now,
            }
        ],
    )


async def record_events(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Insert many events in one statement (ids are assigned here, time-ordered)."""
    if not rows:
        return
    # Every column in every row, written with one COPY (see service/db/bulk.py).
    await copy_rows(session, _EVENT, [{**_EVENT_BASE, "id": uuid7(), **row} for row in rows])
