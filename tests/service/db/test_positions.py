"""service/db/positions.py: the text form of LSNs, the per-process memory of each user's last commit, and the
memory the workers of ``ctxmem serve --workers N`` share (across real processes here). (The positions
themselves, read from a real primary and waited for on a real replica, by one worker and by two:
test_replicas.py.)"""

from __future__ import annotations

import multiprocessing
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.db.positions import (
    LSN_PATTERN,
    MAX_POSITIONS,
    SHARED_POSITIONS_ENV,
    CommitPositions,
    Positions,
    SharedCommitPositions,
    commit_positions,
    format_lsn,
    parse_lsn,
)


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


@pytest.fixture
def shared_file(tmp_path: Path) -> Iterator[Path]:
    path = SharedCommitPositions.create(tmp_path)
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture(params=["process", "shared"])
def positions(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Positions]:
    if request.param == "process":
        yield CommitPositions()
        return
    shared = SharedCommitPositions(SharedCommitPositions.create(tmp_path))
    yield shared
    shared.close()


def test_a_read_needs_the_latest_of_its_users_and_its_tenants_writes(positions: Positions) -> None:
    p = positions
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


def _note_many(path: str, first: int, count: int) -> None:
    """Note ``first``, ``first + 2``, … for one user, and after each check that the slot has not gone back
    below it (a concurrent read-modify-write without the lock would put a smaller position over it)."""
    shared = SharedCommitPositions(path)
    went_back = 0
    for lsn in range(first, first + 2 * count, 2):
        shared.note("t", "alice", lsn)
        went_back += shared.needed("t", "alice") < lsn
    shared.close()
    raise SystemExit(min(went_back, 1))


def test_workers_see_each_others_positions_and_none_is_lost_when_they_race(shared_file: Path) -> None:
    """Two real processes note interleaved rising positions for the same user at once (one the even, one
    the odd): no position ever goes back below one noted, and a third mapping — another worker — reads the
    largest of all."""
    spawn = multiprocessing.get_context("spawn")
    procs = [spawn.Process(target=_note_many, args=(str(shared_file), first, 20_000)) for first in (0, 1)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0, 0]
    reader = SharedCommitPositions(shared_file)
    try:
        assert reader.needed("t", "alice") == 39_999
        assert reader.needed("t", "bob") == 0
    finally:
        reader.close()


def test_users_sharing_a_slot_wait_for_the_later_write_never_the_earlier(tmp_path: Path) -> None:
    p = SharedCommitPositions(SharedCommitPositions.create(tmp_path, slots=1), slots=1)
    try:
        p.note("t", "alice", 50)
        p.note("u", "bob", 70)
        assert p.needed("t", "alice") == 70  # more than alice needs, never less
        assert p.needed("v", "carol") == 70
    finally:
        p.close()


def test_a_file_too_small_for_its_slots_is_refused(tmp_path: Path) -> None:
    path = SharedCommitPositions.create(tmp_path, slots=8)
    with pytest.raises(ValueError, match="not the 128 bytes of 16 slots"):
        SharedCommitPositions(path, slots=16)


def test_a_process_shares_positions_only_when_serve_hands_it_the_file(
    shared_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SHARED_POSITIONS_ENV, raising=False)
    assert isinstance(commit_positions(), CommitPositions)
    monkeypatch.setenv(SHARED_POSITIONS_ENV, str(shared_file))
    shared = commit_positions()
    assert isinstance(shared, SharedCommitPositions) and shared.path == shared_file
    shared.close()
