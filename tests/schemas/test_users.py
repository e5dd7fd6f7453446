"""schemas/users.py: events, event pages and the erasure result, read from rows."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.users import EraseResult, EventPage, EventRead

NOW = datetime(2026, 9, 1, tzinfo=UTC)


@dataclass
class EventRow:
    id: uuid.UUID
    user_id: str | None
    actor: str
    actor_role: str
    action: str
    entity_type: str
    entity_id: str | None
    reason: str | None
    rule: str | None
    before: Any
    after: Any
    created_at: datetime


def row(**changes: Any) -> EventRow:
    base: dict[str, Any] = {
        "id": uuid.uuid4(),
        "user_id": "u",
        "actor": "key:1",
        "actor_role": "agent",
        "action": "item.created",
        "entity_type": "context_item",
        "entity_id": "x",
        "reason": None,
        "rule": None,
        "before": None,
        "after": {"status": "active"},
        "created_at": NOW,
    }
    return EventRow(**{**base, **changes})


def test_event_read_from_a_row_without_a_run() -> None:
    r = row()
    e = EventRead.model_validate(r)
    assert (e.id, e.action, e.run_id, e.after) == (r.id, "item.created", None, {"status": "active"})


def test_event_of_an_erased_user_has_no_user_id() -> None:
    assert EventRead.model_validate(row(user_id=None, action="user.erased")).user_id is None


def test_event_page_round_trips_through_json() -> None:
    page = EventPage(items=[EventRead.model_validate(row())], next_cursor="abc")
    again = EventPage.model_validate_json(page.model_dump_json())
    assert again == page


def test_erase_result_needs_its_counts() -> None:
    result = EraseResult(erased=True, user_fingerprint="sha256:00", rows={"event": 2}, erased_at=NOW)
    assert result.rows == {"event": 2}
    with pytest.raises(ValidationError):
        EraseResult.model_validate({"erased": True, "user_fingerprint": "x", "erased_at": NOW})
