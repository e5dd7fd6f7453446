"""service/clock.py: the one clock the service and the jobs read time from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from service.clock import Clock, FixedClock


def test_the_real_clock_is_timezone_aware_utc() -> None:
    now = Clock().now()
    assert now.tzinfo is not None
    assert now.utcoffset() == timedelta(0)


def test_a_fixed_clock_stays_put() -> None:
    at = datetime(2026, 9, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    clock = FixedClock(at)
    assert clock.now() == clock.now() == at
    assert isinstance(clock, Clock)  # usable wherever a Clock is expected


def test_a_fixed_clock_can_be_moved_forward_by_tests() -> None:
    clock = FixedClock(datetime(2026, 9, 1, tzinfo=UTC))
    clock.at += timedelta(days=30)
    assert clock.now() == datetime(2026, 10, 1, tzinfo=UTC)


def test_a_fixed_clock_refuses_a_naive_datetime() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        FixedClock(datetime(2026, 9, 1))
