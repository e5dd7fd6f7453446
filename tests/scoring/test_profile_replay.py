"""replay: an entry's state from its evidence set, the same for every arrival order (issue #12, E)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from scoring.fourc import Evidence, score_4c
from scoring.profile import (
    EntryState,
    Replayed,
    Standing,
    after_evidence,
    out_of_order,
    replay,
    transition,
    with_job_changes,
)

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def ev(i: int, *, supports: bool = True, explicit: bool = False, confirmation: bool = False, session: str = "s1",
       day: float | None = None) -> Evidence:  # fmt: skip
    return Evidence(
        id=f"{i:04d}",
        session_id=session,
        context="c",
        explicit=explicit or confirmation,
        supports=supports,
        confirmation=confirmation,
        observed_at=T0 + timedelta(days=i if day is None else day),
        weight=1.0,
    )


evidence_lists = st.lists(
    st.builds(
        lambda supports, explicit, confirmation, session: (supports, explicit, confirmation, session),
        st.booleans(),
        st.booleans(),
        st.booleans(),
        st.sampled_from(["s1", "s2", "s3", "s4"]),
    ),
    min_size=1,
    max_size=12,
).map(lambda xs: [ev(i, supports=s, explicit=e, confirmation=c, session=ss) for i, (s, e, c, ss) in enumerate(xs)])


@given(evidence=evidence_lists, data=st.data())
def test_replay_ignores_arrival_order(evidence: list[Evidence], data: st.DataObject) -> None:
    assert replay(data.draw(st.permutations(evidence))) == replay(evidence)


@given(evidence=evidence_lists)
def test_replay_is_stepping_in_observed_order(evidence: list[Evidence]) -> None:
    """In order, replaying is exactly what stepping one observation at a time does."""
    state = EntryState("current", "active")
    for n in range(len(evidence)):
        step = transition(state, evidence[n], score_4c(evidence[: n + 1], now=T0 + timedelta(days=99)))
        state = EntryState(step.tier, step.status)
    r = replay(evidence)
    assert (r.tier, r.status) == (state.tier, state.status)


def test_newer_explicit_denial_wins_over_older_support() -> None:
    denial = ev(2, supports=False, explicit=True, session="s2")
    older = ev(1, session="s1")
    assert replay([denial, older]).status == "rejected"
    assert replay([older, denial]).status == "rejected"
    assert replay([denial, older, ev(3, explicit=True, session="s3")]).status == "active"


def test_job_changes_stand_unless_the_evidence_overturns_them() -> None:
    active = Replayed("candidate", "active", False, False, "s1", T0)
    decayed = EntryState("long_term", "weakened")
    assert with_job_changes(active, decayed, decayed_at=T0 + timedelta(days=90)) == decayed
    # support observed after the decay: the replay decides (and the promotion stands)
    assert with_job_changes(active, decayed, decayed_at=T0 - timedelta(days=1)) == EntryState("long_term", "active")
    assert with_job_changes(active, EntryState("current", "expired"), decayed_at=T0 - timedelta(days=1)) == (
        EntryState("candidate", "active")
    )
    # a promotion stands over an active candidate
    assert with_job_changes(active, EntryState("long_term", "active"), decayed_at=None) == EntryState(
        "long_term", "active"
    )
    # a denial in the evidence overturns both
    rejected = Replayed("long_term", "rejected", True, False, "s1", T0)
    assert with_job_changes(rejected, decayed, decayed_at=T0 + timedelta(days=90)) == EntryState(
        "long_term", "rejected"
    )


NEW = Standing(explicit=False, confirmed=False, current_session_id="s1", last_supported_at=None)


def test_explicit_support_makes_an_entry_explicit_in_its_session_and_inferred_support_only_dates_it() -> None:
    inferred = after_evidence(NEW, ev(1, session="s2"))
    assert inferred == Standing(False, False, "s1", T0 + timedelta(days=1))
    stated = after_evidence(inferred, ev(2, explicit=True, session="s3"))
    assert stated == Standing(True, False, "s3", T0 + timedelta(days=2))


def test_a_confirmation_confirms_and_an_explicit_denial_withdraws_it() -> None:
    confirmed = after_evidence(NEW, ev(1, confirmation=True, session="s2"))
    assert confirmed == Standing(True, True, "s2", T0 + timedelta(days=1))
    # the confirmation alone (without the explicit flag) counts as explicit too
    bare = Evidence("x", "s3", "c", False, True, True, T0, 1.0)
    assert after_evidence(NEW, bare) == Standing(True, True, "s3", T0)
    denied = after_evidence(confirmed, ev(2, supports=False, explicit=True, session="s4"))
    assert denied == Standing(True, False, "s2", T0 + timedelta(days=1))


def test_inferred_contrary_behaviour_changes_no_standing() -> None:
    confirmed = Standing(True, True, "s2", T0)
    assert after_evidence(confirmed, ev(5, supports=False)) == confirmed


def test_last_supported_at_never_moves_back() -> None:
    late = Standing(False, False, "s1", T0 + timedelta(days=9))
    assert after_evidence(late, ev(1)).last_supported_at == T0 + timedelta(days=9)


@given(evidence=evidence_lists)
def test_replay_folds_after_evidence_in_observed_order(evidence: list[Evidence]) -> None:
    standing = Standing(False, False, evidence[0].session_id, None)
    for e in evidence:
        standing = after_evidence(standing, e)
    r = replay(evidence)
    assert (r.explicit, r.confirmed, r.current_session_id, r.last_supported_at) == (
        standing.explicit,
        standing.confirmed,
        standing.current_session_id,
        standing.last_supported_at,
    )


def test_evidence_older_than_what_an_entry_has_puts_it_out_of_order() -> None:
    prior = {"a": [ev(5)], "b": [ev(5)], "c": []}
    arrivals = [("a", T0 + timedelta(days=4)), ("b", T0 + timedelta(days=5)), ("c", T0)]
    assert out_of_order(prior, arrivals) == {"a"}  # b: the same time is in order; c had nothing


def test_an_earlier_arrival_of_the_same_write_counts_as_evidence_the_entry_has() -> None:
    arrivals = [("a", T0 + timedelta(days=2)), ("a", T0 + timedelta(days=1)), ("b", T0), ("b", T0 + timedelta(1))]
    assert out_of_order({}, arrivals) == {"a"}
