"""service/ids.py: UUIDv7 identifiers that sort by creation time (RFC 9562)."""

from __future__ import annotations

import itertools
import time
import uuid

import pytest

from service import ids
from service.ids import uuid7


def unix_ms(u: uuid.UUID) -> int:
    return u.int >> 80


def test_version_and_variant_are_those_of_uuid7() -> None:
    u = uuid7()
    assert u.version == 7
    assert u.variant == uuid.RFC_4122


def test_the_timestamp_is_the_unix_milliseconds_of_creation() -> None:
    before = time.time_ns() // 1_000_000
    u = uuid7()
    after = time.time_ns() // 1_000_000
    assert before <= unix_ms(u) <= after + 1  # +1: the counter may borrow the next millisecond


def test_ids_of_one_process_strictly_increase() -> None:
    batch = [uuid7() for _ in range(20_000)]  # far more than one millisecond's 12-bit counter allows
    assert all(a < b for a, b in itertools.pairwise(batch))
    assert len(set(batch)) == len(batch)


def test_a_frozen_millisecond_borrows_the_next_once_the_counter_runs_out(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen = (time.time_ns() // 1_000_000 + 10_000) * 1_000_000  # later than any id made so far
    # The generator's state is put back afterwards, so later ids do not carry this test's future time.
    monkeypatch.setattr(ids, "_last_ms", ids._last_ms)
    monkeypatch.setattr(ids, "_last_seq", ids._last_seq)
    monkeypatch.setattr(ids.time, "time_ns", lambda: frozen)
    batch = [uuid7() for _ in range(0x1000 + 10)]
    assert all(a < b for a, b in itertools.pairwise(batch))
    assert unix_ms(batch[0]) == frozen // 1_000_000
    assert unix_ms(batch[-1]) > unix_ms(batch[0])
