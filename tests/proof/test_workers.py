"""``ctxmem serve --workers 2`` for real: two uvicorn worker processes on one port, the pgvector backend in the
test PostgreSQL (what the workers imply when no backend is named), the outbox applied by one of them.

Which worker answered a request is read from the operating system, not from the service: while many
keep-alive connections are open, each worker process holds the server side of the ones it accepted
(``psutil``'s view of its sockets), so the test knows both answered, and compares what they answered."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import asyncpg
import httpx
import psutil
import pytest

from tests.conftest import make_tenant
from tests.proof.conftest import LIVE_ENV, migrated_database
from tests.proof.live import LiveServer, start_server

ITEMS = 40


def worker_pids(server: LiveServer) -> set[int]:
    """The server's uvicorn workers: its children that serve (not multiprocessing's resource tracker, nor a
    killed worker its supervisor has not reaped yet: a zombie has no command line)."""
    pids = set()
    for child in psutil.Process(server.proc.pid).children():
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                pids.add(child.pid)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            continue
    return pids


def served_by(pids: set[int], port: int) -> dict[int, set[int]]:
    """For each worker, the client ports of the connections to ``port`` it holds."""
    held: dict[int, set[int]] = {}
    for pid in pids:
        with_conns = psutil.Process(pid).net_connections(kind="tcp")
        held[pid] = {c.raddr.port for c in with_conns if c.laddr.port == port and c.raddr and c.status == "ESTABLISHED"}
    return held


async def outbox_state(url: str, tenant: str) -> tuple[int, int, int]:
    conn = await asyncpg.connect(url)
    try:
        pending = await conn.fetchval("SELECT count(*) FROM vector_outbox")
        points = await conn.fetchval("SELECT count(*) FROM item_vector WHERE tenant_id = $1", tenant)
        distinct = await conn.fetchval("SELECT count(DISTINCT item_id) FROM item_vector WHERE tenant_id = $1", tenant)
        return int(pending), int(points), int(distinct)
    finally:
        await conn.close()


async def wait_indexed(url: str, tenant: str, expected: int) -> tuple[int, int, int]:
    """(pending changes, points of the tenant, distinct items among them) once the outbox has caught up
    (or after 60 s)."""
    for _ in range(300):
        state = await outbox_state(url, tenant)
        if not state[0] and state[1] >= expected:
            break
        await asyncio.sleep(0.2)
    return state


async def until_workers(server: LiveServer, *, gone: int | None = None) -> set[int]:
    """The two workers once both run (and ``gone`` is not one of them), or what runs after 60 s."""
    for _ in range(300):
        pids = worker_pids(server)
        if len(pids) == 2 and gone not in pids:
            break
        await asyncio.sleep(0.2)
    return pids


async def test_two_workers_share_one_index_and_survive_losing_one(server_url: str, tmp_path: Path) -> None:
    async with migrated_database(server_url, "ctxmem_workers", tmp_path / "data") as proof:
        conn = await asyncpg.connect(proof.url)
        has_pgvector = await conn.fetchval("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        await conn.close()
        if not has_pgvector:
            pytest.skip("the test PostgreSQL has no pgvector (CTXMEM_TEST_DATABASE_URL without the extension)")
        keys = await make_tenant(proof.db)
        server = await asyncio.to_thread(
            start_server, proof.url, tmp_path / "live", workers=2, CTXMEM_LOG_LEVEL="info", **LIVE_ENV
        )
        try:
            await exercise(server, proof.url, keys.tenant_id, keys.agent)
        finally:
            code = await asyncio.to_thread(server.stop)
        log = server.log_path.read_text(errors="replace")
        assert code == 0, server.log_tail()
        assert "2 workers, vector index pgvector" in log


async def exercise(server: LiveServer, url: str, tenant: str, headers: dict[str, str]) -> None:
    port = int(server.base_url.rsplit(":", 1)[1])
    pids = await until_workers(server)
    assert len(pids) == 2, server.log_tail()

    # Writes through one connection.
    async with httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=30) as writer:
        items = [{"type": "fact", "content": f"the orders service {n} runs on replica r{n}"} for n in range(ITEMS)]
        r = await writer.post("/v1/users/u1/items/batch", json={"items": items})
        assert r.status_code == 201, r.text
    # The outbox applied once: every item one point, no duplicate, nothing pending.
    pending, points, distinct = await wait_indexed(url, tenant, ITEMS)
    assert (pending, points, distinct) == (0, ITEMS, ITEMS)

    # Reads from many connections, until both workers hold some of them.
    clients: list[httpx.AsyncClient] = []
    answers: list[tuple[int, list[str], list[str]]] = []
    try:
        held: dict[int, set[int]] = {}
        for _ in range(8):
            fresh = [httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=30) for _ in range(10)]
            clients += fresh
            answers += await asyncio.gather(*(ask(c) for c in fresh))
            held = served_by(pids, port)
            if all(held.values()):
                break
        assert all(held.values()), f"one worker took every connection: {held}"
        assert all(status == 200 for status, _, _ in answers), answers[:3]
        # Consistent whichever worker answered: the same search hits and the same window.
        assert len({tuple(hits) for _, hits, _ in answers}) == 1
        assert len({tuple(window) for _, _, window in answers}) == 1
        assert len(answers[0][1]) == 10
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))

    # The worker that applies the outbox is killed; the other keeps answering and takes the outbox over.
    log = server.log_path.read_text(errors="replace")
    leaders = [pid for pid in pids if f"(pid {pid}) applies the outbox" in log]
    assert len(leaders) == 1, log[-3000:]
    os.kill(leaders[0], signal.SIGKILL)
    async with httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=30) as after:
        for _ in range(20):
            status, _, _ = await ask(after)
            assert status == 200
        more = [{"type": "fact", "content": f"the billing service {n} runs on replica b{n}"} for n in range(10)]
        r = await after.post("/v1/users/u1/items/batch", json={"items": more})
        assert r.status_code == 201, r.text
    pending, points, distinct = await wait_indexed(url, tenant, ITEMS + 10)
    assert (pending, points, distinct) == (0, ITEMS + 10, ITEMS + 10)
    # uvicorn replaced the killed worker.
    now = await until_workers(server, gone=leaders[0])
    assert len(now) == 2 and leaders[0] not in now


async def ask(client: httpx.AsyncClient) -> tuple[int, list[str], list[str]]:
    """A search and a window on one connection: (worst status, the search's item ids, the window's items)."""
    s = await client.post("/v1/users/u1/search", json={"query": "which replica runs orders service 7", "limit": 10})
    w = await client.post(
        "/v1/users/u1/window", json={"input": "which replica runs orders service 7", "max_tokens": 300}
    )
    hits = [h["item"]["id"] for h in s.json()["items"]] if s.status_code == 200 else []
    window = sorted(str(i) for i in w.json().get("selected", [])) if w.status_code == 200 else []
    if w.status_code == 200 and not window:
        window = [w.text]
    return max(s.status_code, w.status_code), hits, window
