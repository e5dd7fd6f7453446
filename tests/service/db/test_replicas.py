"""Window and search reads from a real streaming replica, with read-your-writes: a real PostgreSQL primary and
replica (tests/service/db/replication.py) and real ``ctxmem serve`` processes reading from both, over HTTP.

Two servers share the cluster: ``live`` as deployed (window cache on, lag limit 60 s so a slow machine never
makes it skip the replica by lag) and ``strict`` (no window cache, so each answer is read where it says; lag
limit 0)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import text

from service.auth.principal import Principal
from service.clock import Clock
from service.context import RequestContext
from service.db import migrate
from service.db.engine import Database, create_database
from service.db.positions import COMMIT_HEADER, SHARED_POSITIONS_ENV, SOURCE_HEADER, parse_lsn
from service.db.replicas import ReplicaMetrics, build_replicas
from service.settings import Settings
from service.tokenizer import build_tokenizer
from tests.conftest import TenantKeys, make_tenant
from tests.proof.live import LiveServer, start_server
from tests.proof.test_workers import served_by, until_workers
from tests.service.db.replication import Cluster, Unavailable, cluster

WAIT = 0.3  # CTXMEM_DATABASE_REPLICA_WAIT_SECONDS of both servers


@pytest.fixture(scope="module")
def pg() -> Iterator[Cluster]:
    try:
        with cluster() as c:
            yield c
    except Unavailable as exc:
        pytest.fail(str(exc))


@dataclass
class Setup:
    cluster: Cluster
    db: Database
    keys: TenantKeys
    live: LiveServer
    strict: LiveServer


@pytest.fixture(scope="module")
async def setup(pg: Cluster, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Setup]:
    url = pg.primary.url()
    db = create_database(url, Settings(database_url=url, data_dir=tmp_path_factory.mktemp("replica-db")))
    await migrate.upgrade(db.engine)
    keys = await make_tenant(db)
    await asyncio.to_thread(pg.wait_caught_up)
    env = {
        "CTXMEM_DATABASE_REPLICA_URLS": pg.replica.url(),
        "CTXMEM_DATABASE_REPLICA_WAIT_SECONDS": str(WAIT),
        "CTXMEM_RATE_LIMIT_PER_SECOND": "0",
        "CTXMEM_VECTOR_BACKEND": "off",
        "CTXMEM_TOKENIZER": "estimate",
    }
    # Started side by side: each takes seconds to import and start.
    live, strict = await asyncio.gather(
        asyncio.to_thread(
            start_server,
            url,
            tmp_path_factory.mktemp("replica-live"),
            **env,
            CTXMEM_DATABASE_REPLICA_MAX_LAG_SECONDS="60",
        ),
        asyncio.to_thread(
            start_server,
            url,
            tmp_path_factory.mktemp("replica-strict"),
            **env,
            CTXMEM_DATABASE_REPLICA_MAX_LAG_SECONDS="0",
            CTXMEM_WINDOW_CACHE_ENTRIES="0",
        ),
    )
    try:
        yield Setup(pg, db, keys, live, strict)
    finally:
        await asyncio.to_thread(live.stop)
        await asyncio.to_thread(strict.stop)
        await db.dispose()


@pytest.fixture
def user() -> str:
    return f"u-{secrets.token_hex(4)}"


@contextlib.asynccontextmanager
async def replay_paused(pg: Cluster) -> AsyncIterator[Cluster]:
    """The replica with its replay paused (it still receives WAL), resumed and caught up afterwards."""
    await asyncio.to_thread(pg.pause_replay)
    try:
        yield pg
    finally:
        await asyncio.to_thread(pg.resume_replay)
        await asyncio.to_thread(pg.wait_caught_up)


@pytest.fixture
async def paused(setup: Setup) -> AsyncIterator[Cluster]:
    async with replay_paused(setup.cluster) as pg:
        yield pg


async def write(server: LiveServer, keys: TenantKeys, user: str, content: str) -> int:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as c:
        r = await c.post(
            f"/v1/users/{user}/items", json={"type": "fact", "content": content, "source": "user"}, headers=keys.agent
        )
    assert r.status_code == 201, r.text
    return parse_lsn(r.headers[COMMIT_HEADER])


async def read(
    server: LiveServer, keys: TenantKeys, user: str, route: str, *, lsn: str | None = None, **body: Any
) -> tuple[httpx.Response, float]:
    headers = {**keys.agent, **({COMMIT_HEADER: lsn} if lsn is not None else {})}
    if route == "window":
        body.setdefault("input", "What do we know?")
        body.setdefault("max_tokens", 2000)
    else:
        body.setdefault("query", "cache database")
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as c:
        started = time.monotonic()
        r = await c.post(f"/v1/users/{user}/{route}", json=body, headers=headers)
        elapsed = time.monotonic() - started
    assert r.status_code == 200, r.text
    return r, elapsed


async def reads_total(server: LiveServer) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as c:
        text = (await c.get("/metrics")).text
    found = re.findall(r'^ctxmem_replica_reads_total\{outcome="(\w+)"\} ([0-9.e+]+)$', text, re.M)
    assert found, "no ctxmem_replica_reads_total series"
    return {k: float(v) for k, v in found}


async def replayed(pg: Cluster) -> int:
    conn = await asyncpg.connect(pg.replica.url())
    try:
        return int(await conn.fetchval("SELECT pg_last_wal_replay_lsn()"))
    finally:
        await conn.close()


async def test_a_write_is_read_back_at_once_from_the_replica_that_has_replayed_it(setup: Setup, user: str) -> None:
    first, _ = await read(setup.live, setup.keys, user, "window")  # fills the window cache for this user
    assert first.headers[SOURCE_HEADER] == "replica"
    before = await reads_total(setup.live)
    lsn = await write(setup.live, setup.keys, user, "The cache is Memcached, chosen on Monday.")
    r, _ = await read(setup.live, setup.keys, user, "window")
    assert r.headers[SOURCE_HEADER] == "replica"
    assert "The cache is Memcached, chosen on Monday." in r.json()["text"]  # the cached state was not reused
    assert await replayed(setup.cluster) >= lsn
    s, _ = await read(setup.live, setup.keys, user, "search", query="Memcached")
    assert s.headers[SOURCE_HEADER] == "replica"
    assert [h["item"]["content"] for h in s.json()["items"]] == ["The cache is Memcached, chosen on Monday."]
    after = await reads_total(setup.live)
    assert after["replica"] == before["replica"] + 2


async def test_with_replay_paused_the_write_is_read_from_the_primary_within_the_wait(
    setup: Setup, paused: Cluster, user: str
) -> None:
    before = await reads_total(setup.live)
    lsn = await write(setup.live, setup.keys, user, "Deploys happen on Tuesdays only.")
    assert await replayed(paused) < lsn  # the replica does not have it
    r, elapsed = await read(setup.live, setup.keys, user, "window")
    assert r.headers[SOURCE_HEADER] == "primary; fallback=behind"
    assert "Deploys happen on Tuesdays only." in r.json()["text"]
    assert WAIT <= elapsed < WAIT + 2.0  # it waited for the replica, then no longer
    s, _ = await read(setup.live, setup.keys, user, "search", query="deploys Tuesdays")
    assert s.headers[SOURCE_HEADER] == "primary; fallback=behind"
    assert len(s.json()["items"]) == 1
    assert (await reads_total(setup.live))["behind"] == before["behind"] + 2


async def test_the_position_a_client_sends_is_waited_for_and_one_it_does_not_send_is_not(
    setup: Setup, user: str
) -> None:
    """A write this process did not make (another process's, here one straight to the primary): without its
    position the replica serves what it has; with it, the read goes where the write is."""
    await write(setup.live, setup.keys, user, "The team is two people.")
    await asyncio.to_thread(setup.cluster.wait_caught_up)
    async with replay_paused(setup.cluster) as pg:
        conn = await asyncpg.connect(pg.primary.url())
        try:
            await conn.execute(
                "UPDATE context_item SET content = 'The team is three people.' WHERE tenant_id = $1 AND user_id = $2",
                setup.keys.tenant_id,
                user,
            )
            lsn = await conn.fetchval("SELECT pg_current_wal_insert_lsn()::text")
        finally:
            await conn.close()
        stale, _ = await read(setup.live, setup.keys, user, "search", query="team people")
        assert stale.headers[SOURCE_HEADER] == "replica"
        assert [h["item"]["content"] for h in stale.json()["items"]] == ["The team is two people."]
        fresh, _ = await read(setup.live, setup.keys, user, "search", query="team people", lsn=lsn)
        assert fresh.headers[SOURCE_HEADER] == "primary; fallback=behind"
        assert [h["item"]["content"] for h in fresh.json()["items"]] == ["The team is three people."]


async def test_a_replica_further_behind_than_the_lag_limit_serves_nobody(setup: Setup, user: str) -> None:
    await write(setup.strict, setup.keys, user, "Alerts go to the on-call channel.")
    await asyncio.to_thread(setup.cluster.wait_caught_up)
    async with replay_paused(setup.cluster) as pg:
        # A later write, anyone's: the paused replica receives it and cannot replay it, so it is behind the
        # primary, though it has everything this user wrote.
        await write(setup.strict, setup.keys, f"other-{user}", "Unrelated.")
        await asyncio.to_thread(pg.wait_received)
        r, _ = await read(setup.strict, setup.keys, user, "search", query="alerts channel")
        assert r.headers[SOURCE_HEADER] == "primary; fallback=lagging"
        assert len(r.json()["items"]) == 1


async def test_the_replicas_answers_equal_the_primarys(setup: Setup, user: str) -> None:
    for content in ("We use PostgreSQL 17.", "The cache is Memcached.", "Never deploy on Fridays."):
        await write(setup.strict, setup.keys, user, content)
    window = {"input": "Which database and cache?", "max_tokens": 300, "query": "database cache deploy"}
    on_replica, _ = await read(setup.strict, setup.keys, user, "window", **window)
    searched, _ = await read(setup.strict, setup.keys, user, "search", query="PostgreSQL cache")
    assert on_replica.headers[SOURCE_HEADER] == searched.headers[SOURCE_HEADER] == "replica"
    async with replay_paused(setup.cluster):
        # Another user's write the paused replica cannot replay; sent as the position to see, it sends this
        # user's reads to the primary, where their rows are the same.
        later = await write(setup.strict, setup.keys, f"other-{user}", "Unrelated.")
        position = f"{later >> 32:X}/{later & 0xFFFFFFFF:X}"
        on_primary, _ = await read(setup.strict, setup.keys, user, "window", lsn=position, **window)
        searched_primary, _ = await read(
            setup.strict, setup.keys, user, "search", lsn=position, query="PostgreSQL cache"
        )
    assert on_primary.headers[SOURCE_HEADER] == searched_primary.headers[SOURCE_HEADER] == "primary; fallback=behind"
    assert on_replica.json()["sections"] and on_replica.content == on_primary.content
    assert len(searched.json()["items"]) == 2 and searched.content == searched_primary.content


async def test_a_malformed_position_is_a_422_problem(setup: Setup, user: str) -> None:
    for bad in ("16-B374D848", "0/123456789", "zz/1", "0/1; DROP TABLE x"):
        async with httpx.AsyncClient(base_url=setup.live.base_url, timeout=30) as c:
            r = await c.post(
                f"/v1/users/{user}/search", json={"query": "x"}, headers={**setup.keys.agent, COMMIT_HEADER: bad}
            )
        assert r.status_code == 422, (bad, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        problem = r.json()
        assert problem["type"] == "urn:ctxmem:problem:validation-error"
        assert problem["errors"][0]["loc"] == ["header", COMMIT_HEADER]
        print(problem["detail"])


async def test_a_replica_that_is_down_sends_reads_to_the_primary(setup: Setup, user: str, tmp_path: Path) -> None:
    await write(setup.live, setup.keys, user, "Backups run nightly.")
    await asyncio.to_thread(setup.cluster.replica.stop, "immediate")
    try:
        before = await reads_total(setup.live)
        r, elapsed = await read(setup.live, setup.keys, user, "window")
        assert r.headers[SOURCE_HEADER] == "primary; fallback=failed"
        assert "Backups run nightly." in r.json()["text"]
        assert elapsed < 5  # a refused connection, not a timeout
        s, _ = await read(setup.live, setup.keys, user, "search", query="backups")
        assert s.headers[SOURCE_HEADER] == "primary; fallback=failed"  # skipped for a while without asking
        assert len(s.json()["items"]) == 1
        assert (await reads_total(setup.live))["failed"] == before["failed"] + 2
        assert "replica 127.0.0.1:" in setup.live.log_tail() and "reads go to the primary" in setup.live.log_tail()
    finally:
        await asyncio.to_thread(setup.cluster.replica.start)


async def test_a_window_that_archives_reads_on_the_primary_and_a_replayed_write_gets_a_position(
    setup: Setup, user: str
) -> None:
    async with httpx.AsyncClient(base_url=setup.live.base_url, timeout=30) as c:
        r = await c.post(
            f"/v1/users/{user}/sessions/s1/messages",
            json={"messages": [{"role": "user", "content": "We deploy on Tuesdays."}]},
            headers=setup.keys.agent,
        )
        assert r.status_code in (200, 201), setup.live.log_tail(60)
        assert parse_lsn(r.headers[COMMIT_HEADER]) > 0
        # The stored session's history: a window that may archive its turns, so it reads where it writes.
        w, _ = await read(setup.live, setup.keys, user, "window", session_id="s1")
        assert w.headers[SOURCE_HEADER] == "primary"
        item = {"type": "fact", "content": "Idempotent.", "source": "user"}
        headers = {**setup.keys.agent, "Idempotency-Key": f"k-{user}"}
        first = await c.post(f"/v1/users/{user}/items", json=item, headers=headers)
        again = await c.post(f"/v1/users/{user}/items", json=item, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.headers["idempotent-replayed"] == "true"
    assert parse_lsn(again.headers[COMMIT_HEADER]) >= parse_lsn(first.headers[COMMIT_HEADER])


async def test_a_read_that_fails_on_the_replica_runs_again_on_the_primary(setup: Setup, tmp_path: Path) -> None:
    """The replica answers its check but the read itself fails there (here: a replica URL naming a database
    without ctxmem's tables; in production, a query cancelled by a recovery conflict): the same read runs on
    the primary, the replica is skipped for a while, and the caller never sees the error."""
    await write(setup.live, setup.keys, f"u-{uuid.uuid4().hex[:8]}", "Something to count.")
    settings = Settings(
        database_url=setup.cluster.primary.url(),
        data_dir=tmp_path,
        database_replica_urls=[setup.cluster.replica.url(database="postgres")],
    )
    metrics = ReplicaMetrics(CollectorRegistry())
    replicas = build_replicas(settings, metrics)
    assert replicas is not None
    tokenizer = build_tokenizer("estimate", cache_dir=tmp_path)
    principal = Principal(tenant_id=setup.keys.tenant_id, key_id=uuid.uuid4(), role="agent")
    served: list[str] = []

    async def count_items(ctx: RequestContext) -> int:
        served.append(await ctx.session.scalar(text("SELECT current_database()")))
        count = text("SELECT count(*) FROM context_item WHERE tenant_id = :t")
        return int(await ctx.session.scalar(count, {"t": principal.tenant_id}))

    try:
        async with setup.db.sessionmaker() as primary:
            ctx = RequestContext(primary, principal, settings, tokenizer, Clock().now())
            n, source = await replicas.read(ctx, needed=0, work=count_items)
            assert source == "primary; fallback=failed"
            assert served == ["postgres", "ctxmem"] and n > 0
            served.clear()
            _, source = await replicas.read(ctx, needed=0, work=count_items)
            assert source == "primary; fallback=failed" and served == ["ctxmem"]  # skipped, not asked again
    finally:
        await replicas.dispose()
    assert metrics.reads.labels("failed")._value.get() == 2
    assert metrics.reads.labels("replica")._value.get() == 0


async def _client_on_each_worker(server: LiveServer, keys: TenantKeys) -> dict[int, httpx.AsyncClient]:
    """A keep-alive client on each of the server's two workers: clients are opened one at a time until two
    of them are held by different workers (which worker holds a connection: the operating system's view
    of its sockets, as in tests/proof/test_workers.py). The clients that are not returned are closed."""
    pids = await until_workers(server)
    assert len(pids) == 2, server.log_tail()
    port = int(server.base_url.rsplit(":", 1)[1])
    me = psutil.Process()

    def mine() -> set[int]:
        return {c.laddr.port for c in me.net_connections(kind="tcp") if c.raddr and c.raddr.port == port}

    on: dict[int, httpx.AsyncClient] = {}
    spare: list[httpx.AsyncClient] = []
    try:
        for _ in range(40):
            before = mine()
            client = httpx.AsyncClient(base_url=server.base_url, headers=keys.agent, timeout=30)
            assert (await client.get("/healthz")).status_code == 200
            (local,) = mine() - before
            (pid,) = [p for p, held in served_by(pids, port).items() if local in held]
            if pid in on:
                spare.append(client)
            else:
                on[pid] = client
            if len(on) == 2:
                return on
        raise AssertionError(f"one worker took every connection: {sorted(on)}")
    finally:
        await asyncio.gather(*(c.aclose() for c in spare))
        if len(on) < 2:
            await asyncio.gather(*(c.aclose() for c in on.values()))


async def test_with_two_workers_a_write_on_one_is_waited_for_by_a_read_on_the_other(
    setup: Setup, tmp_path: Path
) -> None:
    """``ctxmem serve --workers 2``: the worker that commits a write notes its position where the other reads
    it (service/db/positions.py, a file both map), so a read of that user on the other worker — the client
    sends no position back — waits for the replica and then reads the primary; another user's read on the
    same worker is still the replica's."""
    server = await asyncio.to_thread(
        start_server,
        setup.cluster.primary.url(),
        tmp_path / "two-workers",
        workers=2,
        CTXMEM_DATABASE_REPLICA_URLS=setup.cluster.replica.url(),
        CTXMEM_DATABASE_REPLICA_WAIT_SECONDS=str(WAIT),
        CTXMEM_DATABASE_REPLICA_MAX_LAG_SECONDS="60",
        CTXMEM_RATE_LIMIT_PER_SECOND="0",
        CTXMEM_VECTOR_BACKEND="off",
        CTXMEM_TOKENIZER="estimate",
    )
    user, other = f"u-{secrets.token_hex(4)}", f"u-{secrets.token_hex(4)}"
    try:
        clients = await _client_on_each_worker(server, setup.keys)
        (writer, reader) = clients.values()
        try:
            async with replay_paused(setup.cluster):
                r = await writer.post(
                    f"/v1/users/{user}/items",
                    json={"type": "fact", "content": "Deploys happen on Tuesdays only.", "source": "user"},
                )
                assert r.status_code == 201, r.text
                body = {"input": "What do we know?", "max_tokens": 2000}
                w = await reader.post(f"/v1/users/{user}/window", json=body)
                assert w.status_code == 200, w.text
                assert w.headers[SOURCE_HEADER] == "primary; fallback=behind"
                assert "Deploys happen on Tuesdays only." in w.json()["text"]
                elsewhere = await reader.post(f"/v1/users/{other}/window", json=body)
                assert elsewhere.headers[SOURCE_HEADER] == "replica"
        finally:
            await asyncio.gather(*(c.aclose() for c in clients.values()))
        files = {psutil.Process(pid).environ().get(SHARED_POSITIONS_ENV) for pid in clients}
        assert len(files) == 1 and None not in files, files  # one file, handed to both workers
        (shared,) = files
        assert shared is not None and Path(shared).is_file()
    finally:
        await asyncio.to_thread(server.stop)
    assert not Path(shared).exists()  # removed once the last worker stopped
