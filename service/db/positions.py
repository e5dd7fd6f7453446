"""Commit positions for read-your-writes with streaming replicas: a write's WAL position (LSN) after its
commit, told to the client (``X-Ctxmem-Commit-Lsn``) and remembered per user by the process; a read sends
it back (or the process's memory applies) and is served only by a replica that has replayed it
(service/db/replicas.py).

The position is read with ``pg_current_wal_insert_lsn()`` on the primary *after* the commit returned, not
inside the writing transaction: inside, the commit record is not written yet, so a replica could reach
that position and still not show the write. After the commit, the insert position is at or past the end
of the commit record whatever ``synchronous_commit`` says (``pg_current_wal_lsn()``, the position written
out, may not be there yet with asynchronous commits). It may include other transactions' later records:
a read then waits for a little more than it needs, never for less."""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from typing import Any

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
