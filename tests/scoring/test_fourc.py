"""The 4C scorer: the five calibration points of docs/design.md §3.4 and its rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scoring.fourc import Evidence, FourCScore, FourCWeights, promotable, score_4c
from scoring.profile import EntryState, decay_step, decayed_score, transition

T0 = datetime(2026, 6, 1, tzinfo=UTC)
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def ev(
    n: int,
    *,
    session: str | None = None,
    day: float = 0,
    context: str = "buy_phone",
    explicit: bool = False,
    supports: bool = True,
    confirmation: bool = False,
    weight: float = 1.0,
) -> Evidence:
    return Evidence(
        id=f"e{n:03d}",
        session_id=session or f"s{n}",
        context=context,
        explicit=explicit,
        supports=supports,
        confirmation=confirmation,
        observed_at=T0 + timedelta(days=day),
        weight=weight,
    )


def parts_sum(s: FourCScore) -> float:
    return round(s.count + s.continuity + s.cross_context + s.confirmation - s.penalty, 2)


def test_case1_three_inferred_sessions_over_14_days_is_a_candidate_between_30_and_40() -> None:
    s = score_4c([ev(1, day=0), ev(2, day=7), ev(3, day=14)], now=NOW)
    assert 30 <= s.score <= 40
    assert s.sessions == 3 and s.contexts == 1 and s.span_days == 14
    t = transition(EntryState("current", "active"), ev(3, day=14), s)
    assert t.tier == "candidate"


def test_case2_five_mentions_in_one_session_count_once() -> None:
    evidence = [ev(i, session="only", day=i / 1000) for i in range(5)]
    s = score_4c(evidence, now=NOW)
    assert s.sessions == 1
    assert s.score < 20
    assert s.score == score_4c(evidence[:1], now=NOW).score + round(s.continuity - 0.0, 2)
    t = transition(EntryState("current", "active"), evidence[-1], s)
    assert t.tier == "current"


def test_case3_explicit_confirmation_is_long_term_at_once() -> None:
    confirm = ev(1, explicit=True, confirmation=True)
    s = score_4c([confirm], now=NOW)
    t = transition(EntryState("current", "active"), confirm, s)
    assert (t.tier, t.status, t.rule) == ("long_term", "active", "confirmation")
    assert s.confirmation == FourCWeights().confirmation_points


def test_case4_six_sessions_over_100_days_in_three_contexts_reaches_60() -> None:
    contexts = ["buy_phone", "compare_phones", "phone_repair"]
    evidence = [ev(i, day=i * 20, context=contexts[i % 3]) for i in range(6)]
    s = score_4c(evidence, now=NOW)
    assert s.score >= 60
    assert (s.sessions, s.span_days, s.contexts) == (6, 100, 3)


def test_promotable_needs_the_threshold_and_the_sessions() -> None:
    contexts = ["buy_phone", "compare_phones", "phone_repair"]
    case4 = score_4c([ev(i, day=i * 20, context=contexts[i % 3]) for i in range(6)], now=NOW)
    case1 = score_4c([ev(1, day=0), ev(2, day=7), ev(3, day=14)], now=NOW)
    assert promotable(case4, threshold=60, min_sessions=2)
    assert not promotable(case1, threshold=60, min_sessions=2)
    assert promotable(case1, threshold=case1.score, min_sessions=3)
    assert not promotable(case1, threshold=case1.score, min_sessions=4)
    one = score_4c([ev(1, explicit=True, confirmation=True, day=0), ev(2, session="s1", day=100)], now=NOW)
    assert one.sessions == 1 and one.score >= 60 and not promotable(one, threshold=60, min_sessions=2)


def test_case5_one_inferred_signal_is_never_a_candidate() -> None:
    one = ev(1, context="viewed_foldable")
    s = score_4c([one], now=NOW)
    assert s.sessions == 1
    assert s.score < 30
    assert transition(EntryState("current", "active"), one, s).tier == "current"


@pytest.mark.parametrize(
    "evidence",
    [
        [ev(1)],
        [ev(1), ev(2, day=50, explicit=True)],
        [ev(1), ev(2, supports=False)],
        [ev(1), ev(2, supports=False, explicit=True), ev(3, supports=False)],
        [ev(i, day=i * 9, context=f"c{i}") for i in range(12)],
        [ev(1, supports=False)],
    ],
)
def test_breakdown_sums_to_score_and_stays_in_range(evidence: list[Evidence]) -> None:
    s = score_4c(evidence, now=NOW)
    assert parts_sum(s) == pytest.approx(s.score)
    assert 0 <= s.score <= 100
    b = s.breakdown()
    assert b["score"] == s.score and sorted(b["evidence_ids"]) == sorted(e.id for e in evidence)


def test_explicit_counts_more_than_inferred() -> None:
    inferred = score_4c([ev(1), ev(2)], now=NOW)
    explicit = score_4c([ev(1, explicit=True), ev(2)], now=NOW)
    assert explicit.score > inferred.score
    assert explicit.confirmation > inferred.confirmation


def test_contradiction_penalty() -> None:
    base = score_4c([ev(1), ev(2, day=10), ev(3, day=20)], now=NOW)
    soft = score_4c([ev(1), ev(2, day=10), ev(3, day=20), ev(4, supports=False)], now=NOW)
    hard = score_4c([ev(1), ev(2, day=10), ev(3, day=20), ev(4, supports=False, explicit=True)], now=NOW)
    assert soft.penalty == 15 and hard.penalty == 25
    assert base.score > soft.score > hard.score
    assert score_4c([ev(1, supports=False, explicit=True)], now=NOW).score == 0


def test_continuity_saturates_at_90_days() -> None:
    at90 = score_4c([ev(1), ev(2, day=90)], now=NOW)
    at300 = score_4c([ev(1), ev(2, day=179)], now=NOW)
    assert at90.continuity == at300.continuity == 25


def test_evidence_after_now_is_ignored() -> None:
    s = score_4c([ev(1), ev(2, day=500)], now=NOW)
    assert s.sessions == 1 and s.evidence_ids == ("e001",)


def test_weights_are_configurable() -> None:
    w = FourCWeights(count_points=50, count_saturation_sessions=2)
    assert score_4c([ev(1), ev(2)], now=NOW, weights=w).count == 50


TRANSITIONS = [
    # (state, observation, expected tier, status, rule)
    (("current", "active"), ev(1, supports=False, explicit=True), ("current", "rejected", "denial")),
    (("long_term", "active"), ev(1, supports=False, confirmation=True), ("long_term", "rejected", "denial")),
    (("long_term", "active"), ev(1, supports=False), ("long_term", "weakened", "contradiction")),
    (("candidate", "rejected"), ev(1, supports=False), ("candidate", "rejected", None)),
    (("candidate", "rejected"), ev(1), ("candidate", "rejected", None)),  # inferred support: still rejected
    (("candidate", "rejected"), ev(1, explicit=True), ("current", "active", "restated")),
    (("candidate", "rejected"), ev(1, explicit=True, confirmation=True), ("long_term", "active", "confirmation")),
    (("candidate", "weakened"), ev(1, explicit=True), ("candidate", "active", "restated")),
    (("candidate", "weakened"), ev(1), ("candidate", "weakened", None)),
    (("long_term", "active"), ev(1, explicit=True, confirmation=True), ("long_term", "active", None)),
]


@pytest.mark.parametrize(("state", "obs", "expected"), TRANSITIONS)
def test_transitions(state: tuple[str, str], obs: Evidence, expected: tuple[str, str, str | None]) -> None:
    one_session = score_4c([obs], now=NOW)
    t = transition(EntryState(*state), obs, one_session)
    assert (t.tier, t.status, t.rule) == expected
    assert t.reason


def test_decay_walks_one_step_per_silent_period_down_to_expired() -> None:
    chain = [EntryState("long_term", "active")]
    while chain[-1].status != "expired":
        chain.append(decay_step(chain[-1]))
    assert [(s.tier, s.status) for s in chain] == [
        ("long_term", "active"),
        ("long_term", "weakened"),
        ("candidate", "active"),
        ("candidate", "expired"),
    ]
    assert decay_step(EntryState("current", "weakened")) == EntryState("current", "expired")
    for still in ("expired", "rejected"):
        assert decay_step(EntryState("long_term", still)) == EntryState("long_term", still)
    assert decayed_score(80.0, factor=0.5) == 40.0 and decayed_score(47.35, factor=0.37) == 17.52
