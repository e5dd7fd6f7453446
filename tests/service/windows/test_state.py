"""service/windows/state.py: what a window derives from a user's standing rows, and how long that holds:
live items (expired tool results named, other expired items dropped), scope overrides, the span of time the
state is valid in, its version, and the retrieved items it lets in. Rows are plain mappings, as fetched."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scoring.scopes import ScopeContext
from scoring.window_policy import Omission, Omitted
from service.caches import ProcessCaches
from service.settings import Settings
from service.windows.service import value_model
from service.windows.state import UserState, profile_part, retrieved_elements, standing

NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)
ITEMS_VERSION = (1, 2)


def count(text: str) -> int:
    return len(text.split())


def row(content: str = "a fact", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": uuid.uuid4(),
        "type": "fact",
        "status": "active",
        "authority": "user",
        "hard": False,
        "scope": "user",
        "scope_ref": None,
        "key": None,
        "content": content,
        "token_cost": count(content),
        "level_texts": ["c1", "c2", "c3", "c4"],
        "level_tokens": [1, 1, 1, 1],
        "confidence": 1.0,
        "observed_at": NOW - timedelta(days=1),
        "expires_at": None,
        "related_ids": [],
        "updated_at": NOW - timedelta(days=1),
        "version": 1,
    }
    return {**base, **fields}


def state(rows: list[dict[str, Any]], settings: Settings, *, now: datetime = NOW, **kw: Any) -> UserState:
    model = value_model(ProcessCaches(), settings)
    return UserState(
        rows,
        profile_part([], user_id="u", session_id="s1", domains=None, count=count, model=model),
        items_version=ITEMS_VERSION,
        now=now,
        user_id="u",
        scope=kw.pop("scope", ScopeContext(session_id="s1")),
        domains=None,
        count=count,
        model=model,
        applicable=len(rows),
        **kw,
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"type": "rule"}, True),
        ({"type": "constraint"}, True),
        ({"type": "goal"}, True),
        ({"type": "fact", "status": "verified"}, True),
        ({"type": "fact", "status": "missing"}, True),
        ({"type": "fact"}, False),
        ({"type": "tool_result"}, False),
    ],
)
def test_standing_rows_are_the_pinned_types_and_statuses(fields: dict[str, str], expected: bool) -> None:
    assert standing(row(**fields)) is expected


def test_expired_tool_results_are_named_and_other_expired_items_dropped(settings: Settings) -> None:
    gone_tool = row("old result", type="tool_result", expires_at=NOW - timedelta(hours=1))
    gone_fact = row("old fact", expires_at=NOW - timedelta(hours=2))
    live = row("still true")
    s = state([gone_tool, gone_fact, live], settings)
    assert s.ids == [str(live["id"])]
    assert s.omitted == (Omission(str(gone_tool["id"]), "stale tool result (past expires_at)", Omitted.STALE),)
    assert len(s.warnings) == 1 and s.warnings[0].startswith(f"stale tool result {gone_tool['id']} excluded")
    assert s.known == {str(r["id"]) for r in (gone_tool, gone_fact, live)}


def test_the_state_holds_from_the_last_expiry_until_the_next_or_midnight(settings: Settings) -> None:
    past = NOW - timedelta(hours=3)
    soon = NOW + timedelta(hours=2)
    s = state([row(expires_at=past), row(expires_at=soon), row()], settings)
    assert (s.valid_from, s.valid_until) == (past, soon)
    assert s.valid_at(NOW) and s.valid_at(past) and not s.valid_at(soon)
    assert not s.valid_at(past - timedelta(seconds=1))
    quiet = state([row()], settings)
    assert quiet.valid_from is None
    assert quiet.valid_until == datetime(2026, 9, 2, tzinfo=UTC)  # ages count in whole days


def test_a_narrower_scope_overrides_a_broader_one_with_the_same_key(settings: Settings) -> None:
    broad = row("formal", type="preference", key="tone")
    narrow = row("casual", type="preference", key="tone", scope="session", scope_ref="s1")
    elsewhere = row("terse", type="preference", key="tone", scope="session", scope_ref="s2")
    s = state([broad, narrow, elsewhere], settings)
    assert s.ids == [str(narrow["id"])]
    overridden = Omission(str(broad["id"]), f"overridden inside this scope by {narrow['id']}", Omitted.OVERRIDDEN)
    assert overridden in s.omitted
    assert s.key_winner["tone"][1] == str(narrow["id"])


def test_the_version_follows_the_rows_and_nothing_else(settings: Settings) -> None:
    rows = [row("one"), row("two")]
    a = state(rows, settings)
    assert state(list(reversed(rows)), settings).state_version == a.state_version  # order does not matter
    assert state(rows, settings, now=NOW + timedelta(hours=1)).state_version == a.state_version
    assert state([*rows, row("three")], settings).state_version != a.state_version
    touched = [rows[0], {**rows[1], "updated_at": NOW}]
    assert state(touched, settings).state_version != a.state_version
    assert a.state_version.startswith("sv1:")


def test_the_newest_goal_is_pinned_unless_the_request_brings_one(settings: Settings) -> None:
    old_goal = row("old goal", type="goal")
    new_goal = row("new goal", type="goal")
    s = state([old_goal, new_goal, row()], settings)
    assert s.latest == {"goal": 1}
    pinned = s.variant(pin_goal=True, pin_plan=True)
    assert s.variant(pin_goal=True, pin_plan=False) is pinned  # no plan item: one variant
    assert s.variant(pin_goal=False, pin_plan=False) is not pinned


def test_retrieved_items_are_let_in_unless_overridden_and_recalled_ones_capped(settings: Settings) -> None:
    narrow = row("casual", type="preference", key="tone", scope="session", scope_ref="s1")
    s = state([narrow], settings)
    broad = row("formal", type="preference", key="tone")
    applies = row("a retrieved fact")
    others = [row(f"from another session {i}", scope="session", scope_ref="s9") for i in range(3)]
    rows = [(broad, True), (applies, True), *((o, False) for o in others)]
    elements, omitted, applicable = retrieved_elements(rows, s, user_id="u", count=count, recall_limit=2)
    assert applicable == 2
    why = f"overridden inside this scope by {narrow['id']}"
    assert omitted == [Omission(str(broad["id"]), why, Omitted.OVERRIDDEN)]
    assert [e.id for e in elements] == [str(applies["id"]), str(others[0]["id"]), str(others[1]["id"])]
    assert {e.section for e in elements[1:]} == {"background"}
    assert elements[1].reason.startswith("recalled: relevant to the query (fact from session s9)")
