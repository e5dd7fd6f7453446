"""The outbox's retry backoff: the documented numbers, doubling, and the cap."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.backoff import BASE_SECONDS, retry_delay


def test_the_documented_delays() -> None:
    assert BASE_SECONDS == 0.5
    assert [retry_delay(a, max_seconds=60) for a in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]


@given(st.integers(1, 10_000), st.floats(0.01, 3600))
def test_doubles_until_the_cap_and_never_passes_it(attempts: int, cap: float) -> None:
    delay = retry_delay(attempts, max_seconds=cap)
    assert 0 < delay <= cap
    assert delay == cap or delay == BASE_SECONDS * 2**attempts
    assert retry_delay(attempts + 1, max_seconds=cap) == min(cap, 2 * delay) or delay == cap


def test_no_delay_before_a_failure() -> None:
    with pytest.raises(ValueError, match="failed at least once"):
        retry_delay(0, max_seconds=60)
