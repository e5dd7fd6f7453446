"""Commit positions for read-your-writes with streaming replicas: a write's WAL position (LSN) after its
commit, told to the client (``X-Ctxmem-Commit-Lsn``) and remembered per user by the server (its workers
share that memory: ``SharedCommitPositions``); a read sends it back (or the server's memory applies) and is
served only by a replica that has replayed it (service/db/replicas.py).

The position is read with ``pg_current_wal_insert_lsn()`` on the primary *after* the commit returned, not
inside the writing transaction: inside, the commit record is not written yet, so a replica could reach
that position and still not show the write. After the commit, the insert position is at or past the end
of the commit record whatever ``synchronous_commit`` says (``pg_current_wal_lsn()``, the position written
out, may not be there yet with asynchronous commits). It may include other transactions' later records:
a read then waits for a little more than it needs, never for less."""

from __future__ import annotations

import fcntl
import hashlib
import logging
import mmap
import os
import re
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from service.db.engine import Database, driver_connection

log = logging.getLogger("ctxmem.db")

# Sent with every response of a request that wrote (with replicas configured), and accepted by the
# window and search routes: the position the read must see.
COMMIT_HEADER = "X-Ctxmem-Commit-Lsn"
# Sent with every window and search response (with replicas configured): where the read was served.
SOURCE_HEADER = "X-Ctxmem-Read-Source"
# PostgreSQL's text form of an LSN: two hexadecimal numbers of up to 32 bits each.
LSN_PATTERN = r"^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$"
_LSN = re.compile(LSN_PATTERN)


def parse_lsn(text: str) -> int:
    """``'16/B374D848'`` → its 64-bit position. Raises ValueError for anything else."""
    if not _LSN.fullmatch(text):
        raise ValueError(f"not an LSN: {text[:40]!r}")
    high, low = text.split("/")
    return int(high, 16) << 32 | int(low, 16)


def format_lsn(lsn: int) -> str:
    """A 64-bit position in PostgreSQL's text form (``pg_lsn``), as ``pg_current_wal_lsn()`` prints it."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


# How many (tenant, user) positions a process remembers: ~150 bytes each. One forgotten raises the floor
# that every user it does not remember must see (``needed``), so forgetting never loses a write.
MAX_POSITIONS = 100_000


class CommitPositions:
    """The last commit position per (tenant, user) written through this process, and per tenant for the
    writes that are not one user's (a job run through the API). A read needs the largest of its user's,
    its tenant's and the floor left by forgotten entries."""

    def __init__(self, max_entries: int = MAX_POSITIONS) -> None:
        self._last: OrderedDict[tuple[str, str | None], int] = OrderedDict()
        self._max = max_entries
        self.floor = 0

    def __len__(self) -> int:
        return len(self._last)

    def note(self, tenant_id: str, user_id: str | None, lsn: int) -> None:
        key = (tenant_id, user_id)
        self._last[key] = max(lsn, self._last.get(key, 0))
        self._last.move_to_end(key)
        while len(self._last) > self._max:
            _, forgotten = self._last.popitem(last=False)
            self.floor = max(self.floor, forgotten)

    def needed(self, tenant_id: str, user_id: str) -> int:
        return max(self._last.get((tenant_id, user_id), 0), self._last.get((tenant_id, None), 0), self.floor)


class Positions(Protocol):
    """What the session dependency notes after a write and the replica reads ask before one."""

    def note(self, tenant_id: str, user_id: str | None, lsn: int) -> None: ...

    def needed(self, tenant_id: str, user_id: str) -> int: ...


# ``ctxmem serve --workers N``: the file the workers share their positions through (service/cli.py makes it).
SHARED_POSITIONS_ENV = "CTXMEM_SERVE_SHARED_POSITIONS"
# Slots of the shared file: 8 bytes each, 512 KiB in all.
SHARED_SLOTS = 65_536


class SharedCommitPositions:
    """The positions of every process of one ``ctxmem serve --workers N``, so that a user's read sees the
    user's write whichever worker took each (without the client sending ``X-Ctxmem-Commit-Lsn`` back).

    A file of ``slots`` 64-bit slots mapped by every worker: a key — (tenant, user), or (tenant, none) for
    a write that is not one user's — hashes to one slot, which holds the largest position noted for any
    key that hashes there. Two keys sharing a slot only make a read wait for a later position than its own
    (the replica is at most a moment further behind), never for an earlier one: no write is missed, and
    there is nothing to forget. Updates and reads hold ``flock`` on the file (a read-modify-write of a slot
    must not lose a concurrent larger one, and a read must not see half of an update)."""

    def __init__(self, path: str | Path, *, slots: int = SHARED_SLOTS) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_RDWR)
        size = os.fstat(self._fd).st_size
        if size < slots * 8:
            os.close(self._fd)
            raise ValueError(f"{self.path} holds {size} bytes, not the {slots * 8} bytes of {slots} slots")
        self._slots = slots
        self._map = mmap.mmap(self._fd, slots * 8)
        self._view = memoryview(self._map).cast("Q")

    @staticmethod
    def create(directory: str | Path | None = None, *, slots: int = SHARED_SLOTS) -> Path:
        """A new zeroed file for ``slots`` slots (in shared memory where the system has it); the caller
        removes it when the last worker has stopped."""
        where = directory if directory is not None else ("/dev/shm" if Path("/dev/shm").is_dir() else None)  # noqa: S108
        fd, name = tempfile.mkstemp(prefix="ctxmem-positions-", dir=where)
        try:
            os.ftruncate(fd, slots * 8)
        finally:
            os.close(fd)
        return Path(name)

    def _slot(self, tenant_id: str, user_id: str | None) -> int:
        key = f"{tenant_id}\x00{user_id if user_id is not None else chr(0)}".encode()
        return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little") % self._slots

    def note(self, tenant_id: str, user_id: str | None, lsn: int) -> None:
        i = self._slot(tenant_id, user_id)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            if self._view[i] < lsn:
                self._view[i] = lsn
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def needed(self, tenant_id: str, user_id: str) -> int:
        mine, tenants = self._slot(tenant_id, user_id), self._slot(tenant_id, None)
        fcntl.flock(self._fd, fcntl.LOCK_SH)
        try:
            return max(self._view[mine], self._view[tenants])
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self._view.release()
        self._map.close()
        os.close(self._fd)


def commit_positions() -> Positions:
    """This process's memory of commit positions: shared with the other workers of ``ctxmem serve --workers
    N`` (``SHARED_POSITIONS_ENV``), else its own."""
    shared = os.environ.get(SHARED_POSITIONS_ENV)
    return SharedCommitPositions(shared) if shared else CommitPositions()


_WROTE_SQL = "SELECT pg_current_xact_id_if_assigned() IS NOT NULL"
_POSITION_SQL = "SELECT pg_current_wal_insert_lsn()"


async def wrote(session: AsyncSession) -> bool:
    """Whether the session's open transaction has written anything (it holds a transaction id)."""
    if not session.in_transaction():
        return False
    driver = await driver_connection(session)
    return bool(await driver.fetchval(_WROTE_SQL))


async def current_position(db: Database) -> int:
    """The primary's WAL insert position now: after a commit returned, at or past its commit record."""
    async with db.engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection
        return int(await driver.fetchval(_POSITION_SQL))


class PositionHeaders:
    """ASGI middleware: puts the request's commit position (``commit_lsn``) and read source
    (``read_source``), which the session dependency and the replica reads leave in the request's state,
    on the response. The session commits before the response starts (service/deps.py), so both are known
    by then."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_positions(message: Any) -> None:
            if message["type"] == "http.response.start":
                state = scope.get("state") or {}
                extra = []
                if state.get("commit_lsn") is not None:
                    extra.append((COMMIT_HEADER.lower().encode(), format_lsn(state["commit_lsn"]).encode()))
                if state.get("read_source") is not None:
                    extra.append((SOURCE_HEADER.lower().encode(), str(state["read_source"]).encode()))
                if extra:
                    message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        await self.app(scope, receive, with_positions)
