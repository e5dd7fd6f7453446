"""Item defaults (docs/design.md §3.1): authority from the source, confidence by source, default lifetimes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.items import (
    AUTHORITY_RANK,
    MAX_CLOCK_SKEW,
    SOURCE_AUTHORITY,
    authority_allowed,
    authority_for_source,
    default_confidence,
    default_expires_at,
    expired,
    from_the_future,
)

SOURCES = sorted(SOURCE_AUTHORITY)
AUTHORITIES = sorted(AUTHORITY_RANK)
AT = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
# Lifetimes of this test's own (the settings hold the real ones): a type shorter than one scope, longer
# than another.
TYPE_TTL = {"tool_result": 100}
SCOPE_TTL = {"step": 200, "stage": 50}


def test_authority_ranks_as_designed() -> None:
    assert sorted(AUTHORITY_RANK, key=AUTHORITY_RANK.__getitem__, reverse=True) == [
        "system",
        "user",
        "tool",
        "summary",
        "inferred",
    ]
    assert AUTHORITY_RANK["system"] == 4 and AUTHORITY_RANK["inferred"] == 0


@pytest.mark.parametrize(
    ("source", "authority"),
    [("system", "system"), ("user", "user"), ("tool", "tool"), ("summary", "summary"), ("model", "inferred")],
)
def test_each_source_earns_its_authority(source: str, authority: str) -> None:
    assert authority_for_source(source) == authority


@pytest.mark.parametrize(
    ("source", "confidence"), [("system", 1.0), ("user", 0.9), ("tool", 0.9), ("summary", 0.7), ("model", 0.5)]
)
def test_default_confidence_by_source(source: str, confidence: float) -> None:
    assert default_confidence(source) == confidence


def test_a_model_cannot_claim_to_speak_for_the_user() -> None:
    assert not authority_allowed("model", "user")
    assert not authority_allowed("tool", "system")
    assert authority_allowed("user", "inferred")  # lowering is always allowed
    assert authority_allowed("model", "inferred")


@given(st.sampled_from(SOURCES), st.sampled_from(AUTHORITIES))
def test_an_explicit_authority_may_lower_never_raise(source: str, authority: str) -> None:
    earned = AUTHORITY_RANK[authority_for_source(source)]
    assert authority_allowed(source, authority) == (AUTHORITY_RANK[authority] <= earned)
    assert authority_allowed(source, authority_for_source(source))  # what the source earns is always allowed


def test_no_lifetime_for_a_user_scoped_fact() -> None:
    assert (
        default_expires_at(
            item_type="fact", scope="user", observed_at=AT, type_ttl_seconds=TYPE_TTL, scope_ttl_seconds=SCOPE_TTL
        )
        is None
    )


@pytest.mark.parametrize(
    ("item_type", "scope", "seconds"),
    [
        ("tool_result", "user", 100),  # the type's lifetime alone
        ("fact", "step", 200),  # the scope's alone
        ("tool_result", "step", 100),  # the shorter of the two: the type's
        ("tool_result", "stage", 50),  # the shorter of the two: the scope's
    ],
)
def test_default_lifetime_is_the_shorter_of_type_and_scope(item_type: str, scope: str, seconds: int) -> None:
    got = default_expires_at(
        item_type=item_type, scope=scope, observed_at=AT, type_ttl_seconds=TYPE_TTL, scope_ttl_seconds=SCOPE_TTL
    )
    assert got == AT + timedelta(seconds=seconds)


def test_lifetime_counts_from_observed_at_so_a_backdated_result_is_already_older() -> None:
    observed = AT - timedelta(seconds=130)
    got = default_expires_at(
        item_type="tool_result",
        scope="user",
        observed_at=observed,
        type_ttl_seconds=TYPE_TTL,
        scope_ttl_seconds=SCOPE_TTL,
    )
    assert got == AT - timedelta(seconds=30)  # expired before AT


@given(
    type_ttl=st.none() | st.integers(min_value=0, max_value=10**8),
    scope_ttl=st.none() | st.integers(min_value=0, max_value=10**8),
)
def test_default_lifetime_property(type_ttl: int | None, scope_ttl: int | None) -> None:
    types = {} if type_ttl is None else {"fact": type_ttl}
    scopes = {} if scope_ttl is None else {"task": scope_ttl}
    got = default_expires_at(
        item_type="fact", scope="task", observed_at=AT, type_ttl_seconds=types, scope_ttl_seconds=scopes
    )
    ttls = [t for t in (type_ttl, scope_ttl) if t is not None]
    assert got == (AT + timedelta(seconds=min(ttls)) if ttls else None)


def test_an_item_expires_at_its_expires_at_instant_and_without_one_never() -> None:
    assert not expired(AT + timedelta(seconds=1), now=AT)
    assert expired(AT, now=AT)
    assert expired(AT - timedelta(seconds=1), now=AT)
    assert not expired(None, now=AT)


def test_an_observed_at_up_to_the_clock_skew_ahead_is_accepted_and_beyond_it_refused() -> None:
    assert timedelta(minutes=5) == MAX_CLOCK_SKEW
    assert not from_the_future(AT + MAX_CLOCK_SKEW, now=AT)
    assert from_the_future(AT + MAX_CLOCK_SKEW + timedelta(microseconds=1), now=AT)
    assert not from_the_future(AT - timedelta(days=365), now=AT)
    assert not from_the_future(None, now=AT)
