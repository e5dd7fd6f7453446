"""Small helpers shared by tests (imported as ``tests.helpers``)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from sqlalchemy import text

from service.db.engine import Database

USER_TABLES = ("observation", "profile_entry", "context_item", "event", "idempotency_record", "end_user")


async def count_rows(db: Database, tenant_id: str, table: str, user_id: str | None = None) -> int:
    sql = f"SELECT count(*) FROM {table} WHERE tenant_id = :t"  # table names are constants
    params = {"t": tenant_id}
    if user_id is not None:
        sql += " AND user_id = :u"
        params["u"] = user_id
    async with db.engine.connect() as conn:
        return int((await conn.execute(text(sql), params)).scalar_one())


async def tenant_rows(db: Database, tenant_id: str) -> dict[str, int]:
    return {t: await count_rows(db, tenant_id, t) for t in USER_TABLES}


@contextlib.contextmanager
def serve_in_thread(app: Any, *, what: str) -> Iterator[int]:
    """``app`` served by uvicorn on a free loopback port, in a thread of its own (a stand-in for a remote
    service, speaking its protocol over real HTTP); yields the port, and stops the server after."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
