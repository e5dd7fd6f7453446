"""replay: an entry's state from its evidence set, the same for every arrival order (issue #12, E)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from scoring.fourc import Evidence, score_4c
from scoring.profile import EntryState, Replayed, replay, transition, with_job_changes

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
