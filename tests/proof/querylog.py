"""A PostgreSQL server of a test's own that logs the statements of chosen databases, with their bound
parameters, as JSON lines: what the service really sent, for tests that check it (the Citus
distribution-key check, the multi-process test's "the outbox applied once")."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg
from sqlalchemy.engine import make_url

from tests.proof.pgserver import PgServer, new_server

FLUSH_SECONDS = 30.0  # how long the log may lag behind the last statement


@dataclass(frozen=True)
class Statement:
    sql: str
    detail: str | None  # "Parameters: $1 = '…', …" for a statement with parameters
    session: str  # the backend's session id: one per connection


@asynccontextmanager
async def logging_server() -> AsyncIterator[PgServer]:
    """Started, ready, removed at the end. Nothing is logged until ``log_statements`` names a database."""
    server = new_server()
    await asyncio.to_thread(server.init)
    with (server.data / "postgresql.conf").open("a") as conf:
        conf.write(
            "logging_collector = on\nlog_destination = 'jsonlog'\nlog_directory = 'log'\n"
            "log_parameter_max_length = -1\n"
        )
    server.start()
    try:
        await server.wait_ready()
        yield server
    finally:
        await asyncio.to_thread(server.cleanup)


async def log_statements(server: PgServer, url: str) -> None:
    """Log every statement of the database of ``url`` from now on (connections opened later)."""
    conn = await asyncpg.connect(server.url())
    try:
        await conn.execute(f"ALTER DATABASE \"{make_url(url).database}\" SET log_statement = 'all'")
    finally:
        await conn.close()


def statements(server: PgServer, url: str) -> list[Statement]:
    """The statements logged so far for the database of ``url``, in the order the server logged them."""
    database = make_url(url).database
    out: list[Statement] = []
    for path in sorted((server.data / "log").glob("*.json")):
        for line in path.read_text(errors="replace").splitlines():
            entry = json.loads(line)
            if entry.get("dbname") != database or entry.get("error_severity") != "LOG":
                continue
            message: str = entry.get("message", "")
            if message.startswith("statement: "):
                sql = message.removeprefix("statement: ")
            elif message.startswith("execute "):
                sql = message.split(": ", 1)[1]
            else:
                continue
            out.append(Statement(sql, entry.get("detail"), str(entry.get("session_id"))))
    return out


async def logged(server: PgServer, url: str) -> list[Statement]:
    """Every statement of the database logged so far, once the log has caught up: a marker statement is
    sent last and waited for (the logging collector writes the log behind the backends)."""
    marker = f"ctxmem-querylog-end {secrets.token_hex(4)}"
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f"SELECT '{marker}'")
    finally:
        await conn.close()
    deadline = time.monotonic() + FLUSH_SECONDS
    while True:
        found = await asyncio.to_thread(statements, server, url)
        ends = [i for i, s in enumerate(found) if marker in s.sql]
        if ends:
            return found[: ends[0]]
        assert time.monotonic() < deadline, f"the statement log did not show {marker!r} within {FLUSH_SECONDS} s"
        await asyncio.sleep(0.1)
