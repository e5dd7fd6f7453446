"""The append-only event log. Every write records its event in the same transaction.

One builder (``event``) makes every row, whoever writes it; one writer (``record_events``) inserts a
request's events in one statement. Set-based jobs insert theirs with ``INSERT ... SELECT`` in
jobs/repository.py, over the same columns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from service.db.bulk import copy_rows
from service.db.models import Event
from service.ids import uuid7

_EVENT = Event.__table__  # type: ignore[attr-defined]
_EVENT_BASE: dict[str, Any] = dict.fromkeys(c.name for c in _EVENT.columns)


class Author(Protocol):
    """Who an event is by: a request's principal, or an operator (the CLI, tenant provisioning)."""

    @property
    def tenant_id(self) -> str: ...

    @property
    def actor(self) -> str: ...

    @property
    def role(self) -> str: ...


@dataclass(frozen=True)
class Operator:
    """An author with no API key behind it."""

    tenant_id: str
    actor: str
    role: str = "admin"


def event(
    by: Author,
    *,
    user_id: str | None,
    action: str,
    entity_type: str,
    entity_id: Any,
    now: datetime,
    reason: str | None = None,
    rule: str | None = None,
    before: Any = None,
    after: Any = None,
) -> dict[str, Any]:
    """One event row, ready for ``record_events``."""
    return {
        "tenant_id": by.tenant_id,
        "user_id": user_id,
        "actor": by.actor,
        "actor_role": by.role,
        "action": action,
        "entity_type": entity_type,
        "entity_id": None if entity_id is None else str(entity_id),
        "reason": reason,
        "rule": rule,
        "before": before,
        "after": after,
        "created_at": now,
    }


async def record_events(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Insert many events (built by ``event``) in one statement; ids are assigned here, time-ordered."""
    if not rows:
        return
    # Every column in every row, written with one COPY (see service/db/bulk.py).
    await copy_rows(session, _EVENT, [{**_EVENT_BASE, "id": uuid7(), **row} for row in rows])
