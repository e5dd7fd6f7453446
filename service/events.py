"""The append-only event log. Every write records its event in the same transaction.

Every event is written here: a request's (and the CLI's) rows, built by ``event``, in one statement by
``record_events``; a set-based job's, one per changed row, by the ``INSERT ... SELECT`` that ``job_events``
composes into the job's own statement (jobs/repository.py). Both fill every column of ``event``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from scoring.expr import literal
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


def _jsonb(fields: Mapping[str, str]) -> str:
    return f"jsonb_build_object({', '.join(f'{literal(k)}, {v}' for k, v in fields.items())})"


def job_events(
    *,
    rows: str,
    action: str,
    entity_type: str,
    entity_id: str,
    reason: str,
    rule: str,
    before: Mapping[str, str],
    after: Mapping[str, str],
) -> str:
    """The ``INSERT ... SELECT`` of a set-based job's events, for a CTE of its statement: one event per row of
    ``rows`` (which has ``tenant_id`` and ``user_id``), by the run bound as ``:actor``, ``:run`` and ``:now``,
    whose id its ``after`` carries too. ``entity_id``, ``reason`` and the values of ``before`` and ``after``
    are SQL expressions over ``rows``' columns, written by the job, never input."""
    values = {
        "id": "ctxmem_uuid7()",
        "tenant_id": "tenant_id",
        "user_id": "user_id",
        "actor": ":actor",
        "actor_role": "'system'",
        "action": literal(action),
        "entity_type": literal(entity_type),
        "entity_id": entity_id,
        "reason": reason,
        "rule": literal(rule),
        "run_id": "CAST(:run AS uuid)",
        "before": _jsonb(before),
        "after": _jsonb({**after, "run_id": "CAST(:run AS text)"}),
        "created_at": ":now",
    }
    if values.keys() != _EVENT_BASE.keys():
        raise AssertionError(f"job_events must fill every column of event: {sorted(_EVENT_BASE)}")
    return f"INSERT INTO event ({', '.join(values)})\nSELECT {', '.join(values.values())}\nFROM {rows}"
