"""PostgreSQL outages: which errors mean "the database is not there", and one log line per outage.

A request that meets an outage is answered ``503`` (``urn:ctxmem:problem:unavailable``, with
``Retry-After``) instead of ``500`` with a traceback: the client can back off and retry, and the log says
once that the database went away and once that it came back. Nothing else is needed to recover: the
pool drops broken connections and opens new ones when the server is back.
"""

from __future__ import annotations

import logging
import socket
import time

import asyncpg
from sqlalchemy import exc as sa_exc

# The server is gone, shutting down, starting up, or cannot take another connection; or nothing answers.
_GONE: tuple[type[BaseException], ...] = (
    asyncpg.PostgresConnectionError,  # SQLSTATE class 08, and "connection was closed in the middle of operation"
    asyncpg.CannotConnectNowError,  # 57P03 starting up / in recovery
    asyncpg.AdminShutdownError,  # 57P01
    asyncpg.CrashShutdownError,  # 57P02
    asyncpg.TooManyConnectionsError,  # 53300
    ConnectionError,  # refused, reset, broken pipe
    socket.gaierror,
    TimeoutError,  # connect timeout (CTXMEM_DB_CONNECT_TIMEOUT_SECONDS)
    sa_exc.TimeoutError,  # no pooled connection came free in time
)

# A Citus coordinator that cannot reach the worker holding a shard answers with an internal error (XX000) that
# names the connection, not with a class 08 one: the data of the tenants on that worker is out of reach.
_REMOTE_GONE = ("failure on connection marked as essential", "connection to the remote node")


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) says the database cannot be reached, not that a query was wrong."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 8:
        if isinstance(current, sa_exc.DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(current, _GONE):
            return True
        if isinstance(current, asyncpg.InterfaceError) and "connection is closed" in str(current):
            return True
        if isinstance(current, asyncpg.PostgresError) and str(current).startswith(_REMOTE_GONE):
            return True
        if isinstance(current, FileNotFoundError) and ".s.PGSQL." in str(current):
            return True  # the unix socket of a stopped local server
        current = getattr(current, "orig", None) or current.__cause__ or current.__context__
        seen += 1
    return False


def reason(exc: BaseException) -> str:
    inner = getattr(exc, "orig", None) or exc.__cause__ or exc
    return f"{type(inner).__name__}: {str(inner).splitlines()[0] if str(inner) else ''}"[:200]


class Outage:
    """Tracks one outage at a time for one user of the database (the API, the outbox worker)."""

    def __init__(self, logger: logging.Logger, what: str, *, meanwhile: str) -> None:
        self.log = logger
        self.what = what
        self.meanwhile = meanwhile
        self.since: float | None = None
        self.failures = 0

    def failed(self, exc: BaseException) -> None:
        self.failures += 1
        if self.since is None:
            self.since = time.monotonic()
            self.log.error("%s: database unavailable (%s); %s until it is back", self.what, reason(exc), self.meanwhile)

    def recovered(self) -> None:
        if self.since is not None:
            self.log.warning(
                "%s: database available again after %.1f s (%d failed attempts)",
                self.what,
                time.monotonic() - self.since,
                self.failures,
            )
            self.since = None
            self.failures = 0
