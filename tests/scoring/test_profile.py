"""scoring/profile.py: what one observation does to an entry's tier and status, and the decay steps.
(The replay over a whole evidence set: test_profile_replay.py; the effective view: test_effective_profile.py.)"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.fourc import SCORE_DECIMALS, Evidence, FourCScore
from scoring.profile import (
    DECAY_END_STATUS,
    DECAYING_STATUSES,
    EntryState,
    decay_period_days,
    decay_step,
    decayed_score,
    transition,
)

AT = datetime(2026, 9, 1, tzinfo=UTC)
TIERS = ("current", "candidate", "long_term")
STATUSES = ("active", "weakened", "expired", "rejected")


def ev(*, supports: bool = True, explicit: bool = False, confirmation: bool = False) -> Evidence:
    return Evidence(
        id="o",
        session_id="s",
        context="c",
        explicit=explicit,
        supports=supports,
        confirmation=confirmation,
        observed_at=AT,
    )


def score(sessions: int) -> FourCScore:
    return FourCScore(
        score=0.0,
        count=0.0,
        continuity=0.0,
        cross_context=0.0,
        confirmation=0.0,
        penalty=0.0,
        sessions=sessions,
        span_days=0.0,
        contexts=1,
        contradicting_sessions=0,
        evidence_ids=(),
    )


def step(tier: str, status: str, e: Evidence, sessions: int = 1) -> tuple[str, str, str | None]:
    t = transition(EntryState(tier, status), e, score(sessions))
    return t.tier, t.status, t.rule


@pytest.mark.parametrize(
    ("state", "evidence", "sessions", "expected"),
    [
        # an explicit denial rejects, whatever the tier; a second one changes nothing
        (("long_term", "active"), ev(supports=False, explicit=True), 1, ("long_term", "rejected", "denial")),
        (("current", "active"), ev(supports=False, confirmation=True), 1, ("current", "rejected", "denial")),
        (("current", "rejected"), ev(supports=False, explicit=True), 1, ("current", "rejected", None)),
        # inferred contradiction weakens, never revives or un-rejects
        (("candidate", "active"), ev(supports=False), 1, ("candidate", "weakened", "contradiction")),
        (("candidate", "rejected"), ev(supports=False), 1, ("candidate", "rejected", None)),
        (("long_term", "expired"), ev(supports=False), 1, ("long_term", "expired", None)),
        # a rejection stands against inferred support, yields to explicit support
        (("long_term", "rejected"), ev(), 5, ("long_term", "rejected", None)),
        (("long_term", "rejected"), ev(explicit=True), 1, ("current", "active", "restated")),
        (("current", "rejected"), ev(confirmation=True), 1, ("long_term", "active", "confirmation")),
        # a confirmation promotes at once
        (("current", "weakened"), ev(confirmation=True), 1, ("long_term", "active", "confirmation")),
        (("long_term", "active"), ev(confirmation=True), 1, ("long_term", "active", None)),
        # explicit support revives; a second independent session makes a candidate
        (("candidate", "weakened"), ev(explicit=True), 1, ("candidate", "active", "restated")),
        (("candidate", "weakened"), ev(), 1, ("candidate", "weakened", None)),
        (("current", "active"), ev(), 1, ("current", "active", None)),
        (("current", "active"), ev(), 2, ("candidate", "active", "second-session")),
        (("current", "expired"), ev(explicit=True), 3, ("candidate", "active", "second-session")),
        (("candidate", "active"), ev(), 9, ("candidate", "active", None)),  # promotion is the job's, by score
    ],
)
def test_one_observation_moves_the_entry_by_the_rules(
    state: tuple[str, str], evidence: Evidence, sessions: int, expected: tuple[str, str, str | None]
) -> None:
    assert step(*state, evidence, sessions) == expected


def test_candidate_min_sessions_is_the_setting_not_a_constant() -> None:
    state = EntryState("current", "active")
    assert transition(state, ev(), score(2), candidate_min_sessions=3).tier == "current"
    assert transition(state, ev(), score(3), candidate_min_sessions=3).tier == "candidate"


@given(
    st.sampled_from(TIERS), st.sampled_from(STATUSES), st.booleans(), st.booleans(), st.booleans(), st.integers(0, 9)
)
def test_a_rule_is_named_exactly_when_something_changes(
    tier: str, status: str, supports: bool, explicit: bool, confirmation: bool, sessions: int
) -> None:
    t = transition(
        EntryState(tier, status), ev(supports=supports, explicit=explicit, confirmation=confirmation), score(sessions)
    )
    changed = (t.tier, t.status) != (tier, status)
    assert changed == (t.rule is not None)
    assert t.reason
    if not supports:
        assert t.tier == tier  # contrary evidence never moves the tier


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (("long_term", "active"), ("long_term", "weakened")),
        (("long_term", "weakened"), ("candidate", "active")),
        (("candidate", "active"), ("candidate", DECAY_END_STATUS)),
        (("candidate", "weakened"), ("candidate", DECAY_END_STATUS)),
        (("current", "active"), ("current", DECAY_END_STATUS)),
        (("long_term", "rejected"), ("long_term", "rejected")),
        (("candidate", "expired"), ("candidate", "expired")),
    ],
)
def test_decay_steps_one_tier_down_and_ends_in_expired(before: tuple[str, str], after: tuple[str, str]) -> None:
    assert decay_step(EntryState(*before)) == EntryState(*after)


@given(st.sampled_from(TIERS), st.sampled_from(STATUSES))
def test_repeated_decay_always_ends_within_three_steps(tier: str, status: str) -> None:
    state = EntryState(tier, status)
    for _ in range(3):
        state = decay_step(state)
    assert state.status not in DECAYING_STATUSES
    assert decay_step(state) == state  # a fixed point


@given(st.floats(0, 100, allow_nan=False), st.floats(0, 1, allow_nan=False))
def test_decayed_score_is_scaled_and_rounded_never_raised(score: float, factor: float) -> None:
    out = decayed_score(score, factor=factor)
    # Rounded to the 4C parts' decimals, so never above the score rounded the same way.
    assert out <= round(score, SCORE_DECIMALS)
    assert out == round(out, SCORE_DECIMALS)
    assert abs(out - score * factor) <= 0.5 * 10**-SCORE_DECIMALS + 1e-9
    assert decayed_score(80.0, factor=0.5) == 40.0


def test_the_decay_period_is_the_most_specific_override() -> None:
    overrides = {"finance.preference": 30, "finance": 60, "preference": 120}

    def days(domain_key: str, dimension: str) -> int:
        return decay_period_days(domain_key=domain_key, dimension=dimension, overrides=overrides, default_days=90)

    assert days("finance", "preference") == 30
    assert days("finance", "ability") == 60
    assert days("coding", "preference") == 120
    assert days("coding", "ability") == 90
    assert days("", "preference") == 120  # a global entry: its dimension's period
