"""service/db/positions.py: the text form of LSNs and the per-process memory of each user's last commit.
(The positions themselves, read from a real primary and waited for on a real replica: test_replicas.py.)"""

from __future__ import annotations

import re

import pytest

from service.db.positions import LSN_PATTERN, MAX_POSITIONS, CommitPositions, format_lsn, parse_lsn


@pytest.mark.parametrize(
    ("text", "value"),
    [("0/0", 0), ("0/16B3748", 0x16B3748), ("16/B374D848", 0x16 << 32 | 0xB374D848), ("FFFFFFFF/FFFFFFFF", 2**64 - 1)],
)
def test_an_lsn_reads_and_prints_as_postgresql_does(text: str, value: int) -> None:
    assert parse_lsn(text) == value
    assert format_lsn(value) == text
    assert parse_lsn(text.lower()) == value


@pytest.mark.parametrize("bad", ["", "0", "/1", "1/", "0/123456789", "g/1", "0/1 ", " 0/1", "0x1/2", "1/2/3", "0/1\n"])
def test_anything_else_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not an LSN"):
        parse_lsn(bad)
    assert not re.fullmatch(LSN_PATTERN, bad)  # the header's pattern refuses it too


def test_a_read_needs_the_latest_of_its_users_and_its_tenants_writes() -> None:
    p = CommitPositions()
    assert p.needed("t", "alice") == 0
    p.note("t", "alice", 100)
    p.note("t", "alice", 90)  # a slower request of the same user finishing later: positions never go back
    p.note("t", "bob", 120)
    p.note("u", "alice", 500)  # another tenant's alice
    assert p.needed("t", "alice") == 100
    p.note("t", None, 110)  # a job run through the API: every user of the tenant
    assert p.needed("t", "alice") == 110
    assert p.needed("t", "bob") == 120
    assert p.needed("t", "carol") == 110


def test_a_forgotten_position_still_holds_as_the_floor() -> None:
    p = CommitPositions(max_entries=2)
    p.note("t", "a", 10)
    p.note("t", "b", 30)
    p.note("t", "a", 20)  # a is now the most recent
    p.note("t", "c", 5)  # b is forgotten
    assert len(p) == 2
    assert p.needed("t", "b") == 30  # not 0: b's write must still be seen
    assert p.needed("t", "c") == 30 and p.needed("t", "a") == 30
    assert MAX_POSITIONS >= 10_000
