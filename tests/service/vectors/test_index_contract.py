"""One contract for every VectorIndex adapter: Qdrant Edge (embedded, the default), pgvector (a table in a
real PostgreSQL: the backend of ``ctxmem serve --workers N``), qdrant-client in memory and qdrant-client's
local mode on disk. Built through ``build_index`` so the factory is covered too.

A dimension mismatch is a caller or configuration bug, not an outage: it raises ``ValueError`` (callers fall
back to PostgreSQL only on ``VectorIndexUnavailable``, which would hide such a bug for ever)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from schemas.items import ItemCreate
from service.auth.principal import Principal
from service.auth.service import create_key
from service.clock import Clock
from service.context import RequestContext
from service.db import migrate
from service.db.embedded import ensure_database
from service.db.engine import create_database, session_scope
from service.items.service import create_items
from service.settings import Settings
from service.tokenizer import build_tokenizer
from service.vectors.base import VectorIndex, VectorIndexUnavailable, VectorPoint
from service.vectors.factory import build_index
from service.vectors.pgvector import PgVectorIndex, PgVectorMissing
from service.vectors.qdrant_edge import QdrantEdgeIndex
from service.vectors.qdrant_server import QdrantServerIndex

DIM = 16


def unit_vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def point(
    vector: np.ndarray | list[float],
    *,
    tenant: str = "t1",
    user: str = "u1",
    status: str = "available",
    type_: str = "fact",
    id_: uuid.UUID | None = None,
) -> VectorPoint:
    payload = {"tenant_id": tenant, "user_id": user, "type": type_, "status": status, "domain": "general"}
    return VectorPoint(id=id_ or uuid.uuid4(), vector=[float(x) for x in vector], payload=payload)


@contextlib.asynccontextmanager
async def fresh_database(server_url: str) -> AsyncIterator[str]:
    """A database of its own on the test PostgreSQL (the pgvector backend's table and extension in it)."""
    name = f"ctxmem_vec_{secrets.token_hex(4)}"
    await ensure_database(server_url, name)
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        conn = await asyncpg.connect(server_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


@pytest.fixture(params=["edge", "pgvector", "memory", "local"])
async def index(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorIndex]:
    async with contextlib.AsyncExitStack() as stack:
        url = None
        if request.param == "pgvector":
            url = await stack.enter_async_context(fresh_database(request.getfixturevalue("server_url")))
        idx = build_index(request.param, dim=DIM, data_dir=tmp_path, url=None, api_key=None, database_url=url)
        await idx.ensure_collection()
        try:
            yield idx
        finally:
            await idx.close()


async def test_empty_collection(index: VectorIndex) -> None:
    assert await index.search(unit_vectors(1, 0)[0], tenant_id="t1", user_id="u1", limit=5) == []
    assert await index.count() == 0
    await index.ensure_collection()  # idempotent on an existing collection
    assert await index.count() == 0


async def test_ranking_matches_exact_cosine(index: VectorIndex) -> None:
    vectors = unit_vectors(40, 1)
    points = [point(v) for v in vectors]
    await index.upsert(points)
    query = vectors[7]
    hits = await index.search(query, tenant_id="t1", user_id="u1", limit=5)
    assert hits[0].id == points[7].id
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    expected = [points[i].id for i in np.argsort(-(vectors @ query))[:5]]
    assert [h.id for h in hits] == expected
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[1] < scores[0]
    # a query that is no stored vector still ranks by cosine
    other = unit_vectors(1, 99)[0]
    hits = await index.search(other, tenant_id="t1", user_id="u1", limit=3)
    assert [h.id for h in hits] == [points[i].id for i in np.argsort(-(vectors @ other))[:3]]
    assert [h.score for h in hits] == pytest.approx(sorted(vectors @ other, reverse=True)[:3], abs=1e-4)


async def test_tenant_and_user_isolation(index: VectorIndex) -> None:
    vectors = unit_vectors(4, 2)
    query = vectors[0]
    mine = point(vectors[1])
    # The same vector as the query (the most similar possible), under every other (tenant, user) pair,
    # including the same user id in another tenant and another user in the same tenant.
    other_tenant_same_user = point(query, tenant="t2", user="u1")
    same_tenant_other_user = point(query, tenant="t1", user="u2")
    other_both = point(query, tenant="t2", user="u2")
    await index.upsert([mine, other_tenant_same_user, same_tenant_other_user, other_both])
    hits = await index.search(query, tenant_id="t1", user_id="u1", limit=10)
    assert [h.id for h in hits] == [mine.id]
    hits = await index.search(query, tenant_id="t2", user_id="u1", limit=10)
    assert [h.id for h in hits] == [other_tenant_same_user.id]
    assert await index.search(query, tenant_id="t3", user_id="u1", limit=10) == []


async def test_status_and_type_filters(index: VectorIndex) -> None:
    v = unit_vectors(4, 3)
    fact = point(v[0], status="available", type_="fact")
    pref = point(v[1], status="verified", type_="preference")
    archived = point(v[2], status="archived", type_="fact")
    goal = point(v[3], status="available", type_="goal")
    await index.upsert([fact, pref, archived, goal])

    async def ids(**kw: list[str]) -> set[uuid.UUID]:
        return {h.id for h in await index.search(v[2], tenant_id="t1", user_id="u1", limit=10, **kw)}

    assert await ids() == {fact.id, pref.id, archived.id, goal.id}
    assert await ids(statuses=["available", "verified"]) == {fact.id, pref.id, goal.id}
    assert await ids(statuses=["archived"]) == {archived.id}
    assert await ids(types=["fact", "preference"]) == {fact.id, pref.id, archived.id}
    assert await ids(statuses=["available"], types=["fact"]) == {fact.id}
    assert await ids(statuses=["available"], types=["preference"]) == set()
    assert await ids(statuses=[]) == set()
    assert await ids(types=[]) == set()


async def test_upsert_is_idempotent_and_latest_wins(index: VectorIndex) -> None:
    v = unit_vectors(3, 4)
    pid = uuid.uuid4()
    await index.upsert([point(v[0], id_=pid, status="available")])
    await index.upsert([point(v[0], id_=pid, status="available")])
    assert await index.count() == 1
    await index.upsert([point(v[1], id_=pid, status="archived")])
    assert await index.count() == 1
    assert await index.search(v[1], tenant_id="t1", user_id="u1", limit=5, statuses=["available"]) == []
    (hit,) = await index.search(v[1], tenant_id="t1", user_id="u1", limit=5, statuses=["archived"])
    assert hit.id == pid
    assert hit.score == pytest.approx(1.0, abs=1e-4)  # the new vector replaced the old one
    # moving a point to another user (payload change) moves it out of the first user's results
    await index.upsert([point(v[1], id_=pid, user="u9", status="archived")])
    assert await index.count(tenant_id="t1", user_id="u1") == 0
    assert await index.count(tenant_id="t1", user_id="u9") == 1


async def test_delete(index: VectorIndex) -> None:
    v = unit_vectors(3, 5)
    points = [point(x) for x in v]
    await index.upsert(points)
    await index.delete([points[0].id, uuid.uuid4()])  # unknown ids are ignored
    assert await index.count() == 2
    hits = await index.search(v[0], tenant_id="t1", user_id="u1", limit=10)
    assert points[0].id not in {h.id for h in hits}
    assert len(hits) == 2
    await index.delete([points[0].id])  # again: idempotent
    await index.delete([])
    assert await index.count() == 2


async def test_delete_user_removes_exactly_that_user(index: VectorIndex) -> None:
    v = unit_vectors(10, 6)
    await index.upsert(
        [point(v[i], tenant="t1", user="u1") for i in range(4)]
        + [point(v[i], tenant="t1", user="u2") for i in range(4, 7)]
        + [point(v[i], tenant="t2", user="u1") for i in range(7, 10)]
    )
    assert await index.count(tenant_id="t1", user_id="u1") == 4
    await index.delete_user("t1", "u1")
    assert await index.count(tenant_id="t1", user_id="u1") == 0
    assert await index.count(tenant_id="t1", user_id="u2") == 3
    assert await index.count(tenant_id="t2", user_id="u1") == 3
    assert await index.count() == 6
    assert await index.search(v[0], tenant_id="t1", user_id="u1", limit=10) == []
    await index.delete_user("t1", "nobody")
    assert await index.count() == 6


async def test_count_filters(index: VectorIndex) -> None:
    owners = [("t1", "u1"), ("t1", "u1"), ("t1", "u2"), ("t2", "u1"), ("t2", "u3"), ("t2", "u3")]
    v = unit_vectors(len(owners), 7)
    await index.upsert([point(v[i], tenant=t, user=u) for i, (t, u) in enumerate(owners)])
    assert await index.count() == 6
    assert await index.count(tenant_id="t1") == 3
    assert await index.count(tenant_id="t2") == 3
    assert await index.count(tenant_id="t1", user_id="u1") == 2
    assert await index.count(tenant_id="t2", user_id="u3") == 2
    assert await index.count(user_id="u1") == 3
    assert await index.count(tenant_id="t9") == 0


async def test_limit(index: VectorIndex) -> None:
    v = unit_vectors(8, 8)
    await index.upsert([point(x) for x in v])
    assert len(await index.search(v[0], tenant_id="t1", user_id="u1", limit=3)) == 3
    assert len(await index.search(v[0], tenant_id="t1", user_id="u1", limit=100)) == 8
    assert await index.search(v[0], tenant_id="t1", user_id="u1", limit=0) == []


async def test_dimension_mismatch_is_a_value_error(index: VectorIndex) -> None:
    with pytest.raises(ValueError, match="dimensions"):
        await index.upsert([point([1.0] * (DIM + 1))])
    with pytest.raises(ValueError, match="dimensions"):
        await index.search([1.0] * (DIM - 1), tenant_id="t1", user_id="u1", limit=3)
    assert await index.count() == 0


# --- adapter-specific behaviour -------------------------------------------------------------------------------


async def test_edge_survives_close_and_reopen(tmp_path: Path) -> None:
    v = unit_vectors(5, 9)
    points = [point(x) for x in v]
    first = QdrantEdgeIndex(tmp_path, dim=DIM)
    await first.ensure_collection()
    await first.upsert(points)
    await first.delete([points[0].id])
    await first.close()
    with pytest.raises(VectorIndexUnavailable):
        await first.count()
    again = QdrantEdgeIndex(tmp_path, dim=DIM)
    await again.ensure_collection()
    try:
        assert await again.count() == 4
        hits = await again.search(v[3], tenant_id="t1", user_id="u1", limit=1)
        assert [h.id for h in hits] == [points[3].id]
        # payload indexes survive too: filtered counts still work after the reopen
        assert await again.count(tenant_id="t1", user_id="u1") == 4
    finally:
        await again.close()


async def test_edge_rejects_another_dimension_on_reopen(tmp_path: Path) -> None:
    first = QdrantEdgeIndex(tmp_path, dim=DIM)
    await first.ensure_collection()
    await first.close()
    other = QdrantEdgeIndex(tmp_path, dim=DIM * 2)
    with pytest.raises(ValueError, match="another dimension"):
        await other.ensure_collection()
    await other.close()


async def test_edge_is_one_process_at_a_time(tmp_path: Path) -> None:
    first = QdrantEdgeIndex(tmp_path, dim=DIM)
    await first.ensure_collection()
    second = QdrantEdgeIndex(tmp_path, dim=DIM)
    try:
        with pytest.raises(VectorIndexUnavailable, match="another process"):
            await second.ensure_collection()
    finally:
        await second.close()
        await first.close()


async def test_edge_unopened_is_unavailable(tmp_path: Path) -> None:
    idx = QdrantEdgeIndex(tmp_path, dim=DIM)
    with pytest.raises(VectorIndexUnavailable):
        await idx.search(unit_vectors(1, 0)[0], tenant_id="t1", user_id="u1", limit=1)
    with pytest.raises(VectorIndexUnavailable):
        await idx.upsert([point(unit_vectors(1, 0)[0])])
    await idx.close()


async def test_local_mode_rejects_another_dimension_on_reopen(tmp_path: Path) -> None:
    first = QdrantServerIndex(path=tmp_path, dim=DIM)
    await first.ensure_collection()
    await first.close()
    other = QdrantServerIndex(path=tmp_path, dim=DIM * 2)
    try:
        with pytest.raises(ValueError, match="size"):
            await other.ensure_collection()
    finally:
        await other.close()


async def test_unreachable_server_is_unavailable() -> None:
    with socket.socket() as s:  # a port that was just free: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    idx = QdrantServerIndex(url=f"http://127.0.0.1:{port}", dim=DIM, timeout=2)
    try:
        with pytest.raises(VectorIndexUnavailable) as caught:
            await idx.ensure_collection()
        assert caught.value.__cause__ is not None
        with pytest.raises(VectorIndexUnavailable):
            await idx.search(unit_vectors(1, 0)[0], tenant_id="t1", user_id="u1", limit=3)
        with pytest.raises(VectorIndexUnavailable):
            await idx.upsert([point(unit_vectors(1, 0)[0])])
    finally:
        await idx.close()
    assert idx.name == "qdrant"


async def test_pgvector_survives_close_and_reopen_and_rejects_another_dimension(server_url: str) -> None:
    v = unit_vectors(5, 9)
    points = [point(x) for x in v]
    async with fresh_database(server_url) as url:
        first = PgVectorIndex(url, dim=DIM)
        await first.ensure_collection()
        await first.upsert(points)
        await first.close()
        with pytest.raises(VectorIndexUnavailable):
            await first.count()
        # two processes (here: two objects with pools of their own) see one table
        a, b = PgVectorIndex(url, dim=DIM), PgVectorIndex(url, dim=DIM)
        await asyncio.gather(a.ensure_collection(), b.ensure_collection())
        try:
            await a.delete([points[0].id])
            assert await b.count() == 4
            assert [h.id for h in await b.search(v[3], tenant_id="t1", user_id="u1", limit=1)] == [points[3].id]
        finally:
            await a.close()
            await b.close()
        other = PgVectorIndex(url, dim=DIM * 2)
        with pytest.raises(ValueError, match=f"vector\\({DIM}\\)"):
            await other.ensure_collection()
        await other.close()


async def test_pgvector_creating_its_table_queues_every_active_item(server_url: str) -> None:
    """Switching a database that holds items (and a drained outbox) to pgvector fills the new table."""
    async with fresh_database(server_url) as url:
        settings = Settings(database_url=url, workers=1, tokenizer="estimate")
        fresh = create_database(url, settings)
        try:
            await migrate.upgrade(fresh.engine)
            async with session_scope(fresh) as s:
                key = await create_key(s, tenant_id="t", role="agent", name=None, now=Clock().now(), actor="test")
                ctx = RequestContext(
                    s, Principal(tenant_id="t", key_id=key.id, role="agent"), settings,
                    build_tokenizer("estimate", cache_dir=None), Clock().now(),
                )  # fmt: skip
                items = [ItemCreate(type="fact", content=f"fact number {n}") for n in range(5)]
                await create_items(ctx, user_id="u", items=items, batch=True)
            async with session_scope(fresh) as s:
                await s.execute(text("DELETE FROM vector_outbox"))  # as if the old index had applied them
            idx = PgVectorIndex(url, dim=DIM)
            await idx.ensure_collection()
            await idx.close()
            again = PgVectorIndex(url, dim=DIM)  # the table exists now: nothing is queued twice
            await again.ensure_collection()
            await again.close()
            async with session_scope(fresh) as s:
                queued = (await s.execute(text("SELECT count(*) FROM vector_outbox WHERE op = 'sync'"))).scalar_one()
            assert queued == 5
        finally:
            await fresh.dispose()


async def test_pgvector_without_the_extension_says_what_to_install(server_url: str) -> None:
    async with fresh_database(server_url) as url:
        conn = await asyncpg.connect(url)
        try:  # a role that may not create extensions, on a database without one
            await conn.execute("CREATE ROLE ctxmem_novec LOGIN PASSWORD 'x'")
        except asyncpg.DuplicateObjectError:
            pass
        finally:
            await conn.close()
        limited = make_url(url).set(username="ctxmem_novec", password="x").render_as_string(hide_password=False)
        idx = PgVectorIndex(limited, dim=DIM)
        try:
            with pytest.raises(PgVectorMissing, match="CTXMEM_VECTOR_BACKEND"):
                await idx.ensure_collection()
        finally:
            await idx.close()
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute("DROP ROLE IF EXISTS ctxmem_novec")
    finally:
        await conn.close()


async def test_pgvector_unreachable_is_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    idx = PgVectorIndex(f"postgresql://postgres@127.0.0.1:{port}/x", dim=DIM)
    with pytest.raises(VectorIndexUnavailable):
        await idx.ensure_collection()
    with pytest.raises(VectorIndexUnavailable):
        await idx.search(unit_vectors(1, 0)[0], tenant_id="t1", user_id="u1", limit=3)
    await idx.close()


def test_factory(tmp_path: Path) -> None:
    edge = build_index("edge", dim=DIM, data_dir=tmp_path, url=None, api_key=None)
    assert isinstance(edge, QdrantEdgeIndex)
    assert edge.path.parent == tmp_path / "vectors"
    with pytest.raises(ValueError, match="URL"):
        build_index("qdrant", dim=DIM, data_dir=tmp_path, url=None, api_key=None)
    with pytest.raises(ValueError, match="database URL"):
        build_index("pgvector", dim=DIM, data_dir=tmp_path, url=None, api_key=None)
    pg = build_index("pgvector", dim=DIM, data_dir=tmp_path, url=None, api_key=None, database_url="postgresql://h/d")
    assert isinstance(pg, PgVectorIndex) and pg.name == "pgvector"
    with pytest.raises(ValueError, match="unknown vector backend"):
        build_index("faiss", dim=DIM, data_dir=tmp_path, url=None, api_key=None)


async def test_edge_in_use_names_the_process_holding_it(tmp_path: Path) -> None:
    """A second process opening the index learns which process holds it (pid and command), and the index
    opens once that process is gone."""
    import subprocess
    import sys

    from service.vectors.qdrant_edge import holder

    code = (
        "import asyncio, sys\n"
        "from service.vectors.qdrant_edge import QdrantEdgeIndex\n"
        "async def main():\n"
        f"    idx = QdrantEdgeIndex({str(tmp_path)!r}, dim={DIM})\n"
        "    await idx.ensure_collection()\n"
        "    print('ready', flush=True)\n"
        "    sys.stdin.readline()\n"
        "    await idx.close()\n"
        "asyncio.run(main())\n"
    )
    root = Path(__file__).resolve().parents[3]
    child = subprocess.Popen(
        [sys.executable, "-c", code, "holder-test"], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        who = holder(tmp_path)
        assert who is not None and who.startswith(f"pid {child.pid}: ")
        second = QdrantEdgeIndex(tmp_path, dim=DIM)
        with pytest.raises(VectorIndexUnavailable, match=f"pid {child.pid}") as info:
            await second.ensure_collection()
        assert "--data-dir" in str(info.value)
        await second.close()
    finally:
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(timeout=60)
        if child.stdout is not None:
            child.stdout.close()
    assert holder(tmp_path) is None
    third = QdrantEdgeIndex(tmp_path, dim=DIM)
    await third.ensure_collection()
    await third.close()
