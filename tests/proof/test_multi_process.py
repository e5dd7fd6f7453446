"""The deployment's shape on one machine: two ``ctxmem serve`` processes and two ``ctxmem scheduler``
processes on one PostgreSQL (issue #17, deploy/: "2 API replicas + 2 schedulers").

- every scheduled job runs once per tick: one ``job_run`` row per (job, tick), runs of one job never
  overlap, and the second scheduler did try (it logged the ticks it skipped);
- the expire job expired each expiring item once (one ``item.expired`` event each);
- the vector outbox, written through both APIs and applied by the API processes' workers, was applied
  once: every change deleted by exactly one worker statement (read from the server's statement log), the
  outbox empty, the lexical index holding exactly the active items;
- both APIs answer the same state: items, profile, conversation, window text, search.

Vector recall is off in the API processes (``CTXMEM_VECTOR_BACKEND=off``): the embedded index is one per
process and data directory, so two APIs would each hold the half of the points their own worker applied and
rank differently. With recall off the worker still applies the outbox to the lexical index (item_search),
which lives in PostgreSQL and which both APIs read — the state this test compares. A shared vector index
across processes (Qdrant server, pgvector) is the other half of issue #17's item 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx

from service.db import migrate
from service.db.engine import Database, create_database
from service.settings import Settings
from tests.conftest import make_tenant
from tests.db.distribution import parameters
from tests.proof.conftest import LIVE_ENV, fresh_database, migrated_database
from tests.proof.live import ROOT, LiveServer, child_env, start_server
from tests.proof.querylog import log_statements, logged, logging_server

# Every job every second or two (the shortest schedule settings allow: whole seconds), so that a test of a
# few seconds sees several ticks of each. The reindex job drains the outbox too: the schedulers' drains race
# the API processes' workers for the same changes.
SCHEDULES = {
    "expire": "interval:1",
    "promote": "interval:1",
    "reindex": "interval:1",
    "decay": "interval:2",
    "purge": "interval:2",
}
NO_VECTORS = {"CTXMEM_VECTOR_BACKEND": "off"}
SERVE_ENV = {**LIVE_ENV, **NO_VECTORS, "CTXMEM_OUTBOX_POLL_SECONDS": "0.05"}
TICKS = 3  # ticks of each interval:1 job the test waits for
WAIT_SECONDS = 90.0
DELETE_APPLIED = re.compile(r"^DELETE FROM vector_outbox WHERE tenant_id = (\$1|ANY\(\$1\)) AND id = ANY\(\$2\)$")


def start_scheduler(url: str, data_dir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "scheduler.log"
    env = child_env(url, data_dir, CTXMEM_JOB_SCHEDULES=json.dumps(SCHEDULES), CTXMEM_LOG_LEVEL="info", **NO_VECTORS)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "scheduler"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    return proc, log


def stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode


@contextlib.contextmanager
def processes(url: str, root: Path) -> Iterator[tuple[list[LiveServer], list[tuple[subprocess.Popen[bytes], Path]]]]:
    apis: list[LiveServer] = []
    schedulers: list[tuple[subprocess.Popen[bytes], Path]] = []
    try:
        schedulers = [start_scheduler(url, root / f"scheduler-{i}") for i in range(2)]
        with ThreadPoolExecutor(2) as pool:  # the two APIs start side by side
            starting = [pool.submit(start_server, url, root / f"api-{i}", **SERVE_ENV) for i in range(2)]
            for f in starting:
                with contextlib.suppress(Exception):
                    apis.append(f.result())
        assert len(apis) == 2, "an API process did not start: " + "; ".join(str(f.exception()) for f in starting)
        yield apis, schedulers
    finally:
        with ThreadPoolExecutor(4) as pool:  # side by side: each may take seconds to drain
            for proc, _ in schedulers:
                pool.submit(stop, proc)
            for api in apis:
                pool.submit(api.stop)


def _same(a: httpx.Response, b: httpx.Response, what: str) -> object:
    assert a.status_code == b.status_code == 200, (what, a.text[:300], b.text[:300])
    assert a.json() == b.json(), f"{what} differs between the two APIs"
    return a.json()


async def test_two_apis_and_two_schedulers_on_one_database(tmp_path: Path) -> None:
    async with logging_server() as pg:  # a server of its own: its statement log shows who applied what
        url = await fresh_database(pg.url(), "ctxmem_multi")
        db = create_database(url, Settings(database_url=url, data_dir=tmp_path / "test", tokenizer="estimate"))
        await migrate.upgrade(db.engine)
        await log_statements(pg, url)
        try:
            await _run(url, db, tmp_path)
        finally:
            await db.dispose()
        found = await logged(pg, url)
    applied = [value for s in found if DELETE_APPLIED.match(" ".join(s.sql.split())) for value in _ids(s.detail)]
    assert applied, "no outbox change was applied (or the worker's delete statement changed: see DELETE_APPLIED)"
    twice = [i for i, n in Counter(applied).items() if n > 1]
    assert not twice, f"outbox changes applied more than once: {twice}"


def _ids(detail: str | None) -> list[int]:
    """The outbox ids of one ``… AND id = ANY($2)`` statement: ``$2 = '{1,2,3}'``."""
    value = parameters(detail).get(2, "NULL")
    return [int(x) for x in value.strip("'{}").split(",") if x]


async def _run(url: str, db: Database, root: Path) -> None:
    keys = await make_tenant(db)
    started = datetime.now(UTC)
    with processes(url, root) as (apis, schedulers):
        a, b = (httpx.AsyncClient(base_url=api.base_url, headers=keys.admin, timeout=30) for api in apis)
        async with a, b:
            user = "u-multi"
            # Writes through both APIs, interleaved: items (two of them expiring within seconds, for the
            # scheduled expire job), a deletion, observations in two sessions, a conversation.
            soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
            ids: list[str] = []
            for i in range(12):
                api = (a, b)[i % 2]
                body: dict[str, object] = {"type": "fact", "content": f"multi fact {i} about kayaks and rivers"}
                if i < 2:
                    body["expires_at"] = soon
                r = await api.post(f"/v1/users/{user}/items", json=body)
                assert r.status_code == 201, r.text
                ids.append(r.json()["id"])
            assert (await b.delete(f"/v1/users/{user}/items/{ids[5]}")).status_code == 200
            for i, api in enumerate((a, b)):
                obs = {"dimension": "preference", "key": "boat", "value": "kayak", "session_id": f"s{i}"}
                assert (await api.post(f"/v1/users/{user}/observations", json=obs)).status_code == 201
            turns = {"messages": [{"role": "user", "content": "which boat?"}]}
            assert (await a.post(f"/v1/users/{user}/sessions/s1/messages", json=turns)).status_code == 201

            # Ticks that began after the writes, so every job ran over them; then the schedulers stop, so
            # that no job changes the state between the two APIs' answers.
            await _wait_for_ticks(db, expiring=ids[:2], started=datetime.now(UTC))
            for proc, log in schedulers:
                assert proc.poll() is None, log.read_text()[-2000:]
                assert stop(proc) == 0, log.read_text()[-2000:]
            skipped = sum(log.read_text().count(" skipped: ") for _, log in schedulers)
            assert skipped > 0, "the second scheduler never tried a tick the first one took"

            # The same state from both APIs.
            items = _same(
                await a.get(f"/v1/users/{user}/items?limit=100"),
                await b.get(f"/v1/users/{user}/items?limit=100"),
                "items",
            )
            assert isinstance(items, dict)
            _same(await a.get(f"/v1/users/{user}/profile"), await b.get(f"/v1/users/{user}/profile"), "profile")
            _same(
                await a.get(f"/v1/users/{user}/sessions/s1/messages"),
                await b.get(f"/v1/users/{user}/sessions/s1/messages"),
                "conversation",
            )
            search = {"query": "kayaks rivers"}
            found = _same(
                await a.post(f"/v1/users/{user}/search", json=search),
                await b.post(f"/v1/users/{user}/search", json=search),
                "search",
            )
            assert found, "the lexical index found nothing: the outbox was not applied"
            window = {"input": "which kayak?", "max_tokens": 800}
            wa, wb = (
                await a.post(f"/v1/users/{user}/window", json=window),
                await b.post(f"/v1/users/{user}/window", json=window),
            )
            assert wa.status_code == wb.status_code == 200, (wa.text[:300], wb.text[:300])
            for field in ("text", "mode", "prefix_hash", "state_version"):
                assert wa.json()[field] == wb.json()[field], f"window {field} differs between the two APIs"
            assert "kayak" in wa.json()["text"]

    await _check_once(db, expiring=ids[:2], started=started)


async def _wait_for_ticks(db: Database, *, expiring: list[str], started: datetime) -> None:
    """Until each interval:1 job has run TICKS ticks, the expiring items are expired and the outbox is empty."""
    conn = await asyncpg.connect(db.url)
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            ticks = dict(
                await conn.fetch(
                    "SELECT name, count(*) FROM job_run WHERE trigger = 'scheduler' AND started_at >= $1 "
                    "AND status = 'succeeded' GROUP BY name",
                    started,
                )
            )
            expired = await conn.fetchval(
                "SELECT count(*) FROM context_item WHERE id = ANY($1::uuid[]) AND status = 'expired'", expiring
            )
            pending = await conn.fetchval("SELECT count(*) FROM vector_outbox")
            if (
                all(ticks.get(n, 0) >= TICKS for n, spec in SCHEDULES.items() if spec == "interval:1")
                and expired == len(expiring)
                and not pending
            ):
                return
            assert time.monotonic() < deadline, (
                f"after {WAIT_SECONDS} s: ticks {ticks}, expired {expired}, pending {pending}"
            )
            await asyncio.sleep(0.2)
    finally:
        await conn.close()


async def _check_once(db: Database, *, expiring: list[str], started: datetime) -> None:
    conn = await asyncpg.connect(db.url)
    try:
        runs = await conn.fetch(
            "SELECT name, tick, started_at, finished_at, status FROM job_run "
            "WHERE trigger = 'scheduler' AND started_at >= $1 ORDER BY name, started_at",
            started,
        )
        assert {r["name"] for r in runs} == set(SCHEDULES)
        per_tick = Counter((r["name"], r["tick"]) for r in runs)
        assert all(n == 1 for n in per_tick.values()), [k for k, n in per_tick.items() if n > 1]
        assert all(r["status"] == "succeeded" for r in runs), [dict(r) for r in runs if r["status"] != "succeeded"]
        for name in SCHEDULES:  # the advisory lock: one run of a job at a time, across both schedulers
            mine = [r for r in runs if r["name"] == name]
            for before, after in itertools.pairwise(mine):
                assert after["started_at"] >= before["finished_at"], (name, before["tick"], after["tick"])
        events = await conn.fetch(
            "SELECT entity_id, count(*) AS n FROM event WHERE action = 'item.expired' AND entity_id = ANY($1) "
            "GROUP BY entity_id",
            expiring,
        )
        assert sorted((e["entity_id"], e["n"]) for e in events) == sorted((i, 1) for i in expiring)
        assert await conn.fetchval("SELECT count(*) FROM vector_outbox") == 0
        indexed = await conn.fetchval(
            "SELECT count(*) FROM item_search s JOIN context_item c ON c.tenant_id = s.tenant_id AND c.id = s.item_id"
        )
        active = await conn.fetchval(
            "SELECT count(*) FROM context_item WHERE status IN ('available', 'verified', 'missing')"
        )
        assert indexed == active == 9  # 12 written, one deleted, two expired
        assert await conn.fetchval("SELECT count(*) FROM item_search") == active
    finally:
        await conn.close()


async def test_a_stopped_scheduler_lets_its_running_job_finish(server_url: str, tmp_path: Path) -> None:
    """SIGTERM while a run is in progress: the run finishes and is recorded as succeeded, then the process
    exits 0 — not cancelled mid-batch and left "running" (deploy/'s grace periods count on this)."""
    async with migrated_database(server_url, "ctxmem_stop", tmp_path / "data") as proof:
        blocker = await asyncpg.connect(proof.url)
        try:
            tx = blocker.transaction()
            await tx.start()
            # The expire job's first statement waits for this lock: a run held in progress for the test.
            await blocker.execute("LOCK TABLE context_item IN ACCESS EXCLUSIVE MODE")
            env = child_env(
                proof.url,
                tmp_path / "scheduler",
                CTXMEM_JOB_SCHEDULES=json.dumps(
                    {"expire": "interval:1", "promote": "off", "decay": "off", "purge": "off"}
                ),
                CTXMEM_LOG_LEVEL="info",
                **NO_VECTORS,
            )
            (tmp_path / "scheduler").mkdir()
            log = tmp_path / "scheduler" / "scheduler.log"
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "service.cli", "scheduler"],
                    cwd=ROOT,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )

            async def running() -> bool:
                return bool(await blocker.fetchval("SELECT count(*) FROM job_run WHERE status = 'running'"))

            async def waiting() -> bool:
                return "job run(s) to finish" in log.read_text()

            try:
                await _until(running, log)
                proc.send_signal(signal.SIGTERM)
                await _until(waiting, log)
                assert proc.poll() is None, "the scheduler exited with its run in progress"
                await tx.rollback()  # the run goes on and finishes
                assert await asyncio.to_thread(proc.wait, 30) == 0, log.read_text()[-2000:]
            finally:
                stop(proc)
            runs = await blocker.fetch("SELECT status, finished_at FROM job_run WHERE name = 'expire'")
            assert [r["status"] for r in runs] == ["succeeded"], log.read_text()[-2000:]
        finally:
            await blocker.close()


async def _until(check: Callable[[], Awaitable[bool]], log: Path) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not await check():
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        await asyncio.sleep(0.05)
