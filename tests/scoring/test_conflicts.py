"""Table-driven tests of the pure slot resolver: every rule and every tie-break."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scoring.conflicts import (
    REINFORCEMENT_CAP,
    Contender,
    check_correction,
    decide,
    normalize_value,
    overridden,
    reinforced_confidence,
    resolve,
)
from scoring.scopes import ScopeContext, Scoped

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def c(
    id: str,
    authority: str = "user",
    at: int = 0,
    conf: float = 0.9,
    norm: str = "json:300",
    hard: bool = False,
) -> Contender:
    return Contender(
        id=id, authority=authority, observed_at=T0 + timedelta(days=at), confidence=conf, norm=norm, hard=hard
    )


DECIDE_CASES = [
    # (name, a, b, winner, rule)
    ("system beats user", c("1", "system"), c("2", "user", at=5), "1", "authority"),
    ("user beats newer model guess", c("1", "user"), c("2", "inferred", at=99, conf=1.0), "1", "authority"),
    ("tool beats summary", c("1", "summary", at=3), c("2", "tool"), "2", "authority"),
    ("summary beats inferred", c("1", "inferred", at=3), c("2", "summary"), "2", "authority"),
    ("equal authority: later observed wins", c("1", at=1), c("2", at=2), "2", "recency"),
    ("backdated newcomer loses on recency", c("9", at=5), c("1", at=2), "9", "recency"),
    ("equal time: higher confidence", c("1", conf=0.95), c("2", conf=0.6), "1", "confidence"),
    ("all equal: later id", c("1"), c("2"), "2", "id"),
    ("all equal: later id, reversed args", c("2"), c("1"), "2", "id"),
]


@pytest.mark.parametrize(("name", "a", "b", "winner", "rule"), DECIDE_CASES, ids=[x[0] for x in DECIDE_CASES])
def test_decide(name: str, a: Contender, b: Contender, winner: str, rule: str) -> None:
    got, got_rule = decide(a, b)
    assert (got.id, got_rule) == (winner, rule)
    # symmetric: the argument order never changes the outcome
    got2, rule2 = decide(b, a)
    assert (got2.id, rule2) == (winner, rule)


RESOLVE_CASES = [
    # (name, current, newcomer, outcome, rule, winner, loser)
    ("empty slot", None, c("2"), "new", None, "2", None),
    ("same value reinforces", c("1"), c("2", at=1), "reinforced", "reinforcement", "1", "2"),
    (
        "same value, lower authority reinforces",
        c("1"),
        c("2", "tool"),
        "reinforced",
        "reinforcement",
        "1",
        "2",
    ),
    (
        "same value, higher authority replaces",
        c("1", "inferred"),
        c("2", "user"),
        "replaced",
        "authority",
        "2",
        "1",
    ),
    (
        "newer value replaces",
        c("1", norm="json:300"),
        c("2", at=1, norm="json:500"),
        "replaced",
        "recency",
        "2",
        "1",
    ),
    (
        "backdated value is rejected",
        c("1", at=5, norm="json:500"),
        c("2", at=1),
        "rejected",
        "recency",
        "1",
        "2",
    ),
    (
        "model guess is rejected",
        c("1", norm="json:500"),
        c("2", "inferred", at=30),
        "rejected",
        "authority",
        "1",
        "2",
    ),
    (
        "system newcomer replaces user",
        c("1", norm="json:5"),
        c("2", "system"),
        "replaced",
        "authority",
        "2",
        "1",
    ),
    (
        "tie on time: confidence",
        c("1", conf=0.99, norm="a"),
        c("2", conf=0.5, norm="b"),
        "rejected",
        "confidence",
        "1",
        "2",
    ),
    ("full tie: later id wins", c("1", norm="a"), c("2", norm="b"), "replaced", "id", "2", "1"),
    (
        "hard constraint kept against lower authority",
        c("1", "user", hard=True, norm="a"),
        c("2", "tool", at=9, norm="b"),
        "rejected",
        "authority",
        "1",
        "2",
    ),
    (
        "hard constraint replaced by equal authority, newer",
        c("1", "user", hard=True, norm="a"),
        c("2", "user", at=1, norm="b"),
        "replaced",
        "recency",
        "2",
        "1",
    ),
]


@pytest.mark.parametrize(
    ("name", "current", "newcomer", "outcome", "rule", "winner", "loser"),
    RESOLVE_CASES,
    ids=[x[0] for x in RESOLVE_CASES],
)
def test_resolve(
    name: str,
    current: Contender | None,
    newcomer: Contender,
    outcome: str,
    rule: str | None,
    winner: str,
    loser: str | None,
) -> None:
    r = resolve(current, newcomer)
    assert (r.outcome, r.rule, r.winner_id, r.loser_id) == (outcome, rule, winner, loser)
    assert r.detail


def test_normalize_value() -> None:
    assert normalize_value({"b": 1, "a": [1, 2]}, "x") == normalize_value({"a": [1, 2], "b": 1}, "y")
    assert normalize_value(300, "budget 300") != normalize_value(500, "budget 300")
    assert normalize_value(None, "  Budget   IS 300 ") == normalize_value(None, "budget is 300")
    assert normalize_value(None, "Straße") == normalize_value(None, "STRASSE")
    assert normalize_value("300", "x") != normalize_value(300, "x")  # JSON types matter
    assert normalize_value(None, "预算 300") == normalize_value(None, "预算  300")


@pytest.mark.parametrize(
    ("current", "incoming", "expected"),
    [
        (0.5, 0.5, 0.625),
        (0.9, 0.9, 0.945),
        (0.0, 1.0, 0.5),
        (0.99, 1.0, 0.99),
        (1.0, 0.2, 1.0),
        (0.6, 0.0, 0.6),
    ],
)
def test_reinforced_confidence(current: float, incoming: float, expected: float) -> None:
    assert reinforced_confidence(current, incoming) == pytest.approx(expected)
    assert reinforced_confidence(current, incoming) >= current


def test_reinforcement_never_reaches_certainty() -> None:
    conf = 0.5
    for _ in range(100):
        conf = reinforced_confidence(conf, 1.0)
    assert conf == REINFORCEMENT_CAP


@pytest.mark.parametrize(
    ("target_authority", "hard", "newcomer", "admin", "allowed"),
    [
        ("user", False, "user", False, True),
        ("inferred", False, "user", False, True),
        ("tool", True, "user", False, True),
        ("system", False, "user", False, False),
        ("system", False, "user", True, True),
        ("system", True, "user", True, False),  # hard system rule: needs system authority even for admin
        ("system", True, "system", True, True),
        ("user", True, "user", False, True),
    ],
)
def test_check_correction(target_authority: str, hard: bool, newcomer: str, admin: bool, allowed: bool) -> None:
    check = check_correction(
        target_authority=target_authority, target_hard=hard, newcomer_authority=newcomer, is_admin=admin
    )
    assert check.allowed is allowed
    assert check.reason


IN_T1 = ScopeContext(session_id="s1", task_id="t1")


def test_a_task_item_hides_the_broader_items_of_its_key_that_apply_in_its_task() -> None:
    task = Scoped("n", "budget", "task", "t1")
    broader = [
        Scoped("u", "budget", "user", ""),
        Scoped("g", "budget", "global", ""),
        Scoped("s1", "budget", "session", "s1"),
        Scoped("s2", "budget", "session", "s2"),  # another session: does not apply in t1's context
    ]
    assert [o.id for o in overridden(task, IN_T1, broader)] == ["u", "g", "s1"]


def test_narrower_equal_scoped_and_the_item_itself_are_not_overridden() -> None:
    task = Scoped("n", "budget", "task", "t1")
    others = [task, Scoped("t", "budget", "task", "t1"), Scoped("st", "budget", "step", "p1")]
    assert overridden(task, ScopeContext(task_id="t1", step_id="p1"), others) == []


@pytest.mark.parametrize("scope", ["user", "global"])
def test_an_item_that_applies_everywhere_overrides_nothing(scope: str) -> None:
    item = Scoped("n", "budget", scope, "")
    assert overridden(item, IN_T1, [Scoped("g", "budget", "global", "")]) == []
