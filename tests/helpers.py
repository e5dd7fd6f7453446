"""Small helpers shared by tests (imported as ``tests.helpers``)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
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


async def copy_with_same_handle(db: Database, item_id: str) -> str:
    """A copy of the item whose id ends in the same 8 hex digits (its handle) and whose last group starts
    otherwise, so a 12-digit handle still names one of the two; written in SQL, as the service makes ids."""
    twin = "0190a5c2-0000-7000-8000-" + ("1111" if item_id[-12:-8] == "0000" else "0000") + item_id[-8:]
    async with db.engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO context_item SELECT (jsonb_populate_record(NULL::context_item,"
                " to_jsonb(c) || jsonb_build_object('id', CAST(:twin AS text)))).* FROM context_item c WHERE id = :id"
            ),
            {"twin": twin, "id": uuid.UUID(item_id)},
        )
    return twin


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
