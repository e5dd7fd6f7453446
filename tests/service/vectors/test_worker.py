"""The vector outbox end to end: every change reaches the index through the outbox, an index outage loses
nothing, erasure removes a user's points."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from service.caches import ProcessCaches
from service.clock import Clock, FixedClock
from service.db.engine import Database, session_scope
from service.recall.repository import lexical_ranking
from service.settings import Settings
from service.vectors.embedders import EmbeddingError, HashingEmbedder
from service.vectors.qdrant_edge import BuildParams, QdrantEdgeIndex
from service.vectors.recall import VectorRecall
from service.vectors.repository import lag, revive_dead
from service.vectors.worker import OutboxWorker
from tests.conftest import TenantKeys


async def pending(db: Database, tenant_id: str) -> int:
    async with db.engine.connect() as conn:
        return int(
            (
                await conn.execute(text("SELECT count(*) FROM vector_outbox WHERE tenant_id = :t"), {"t": tenant_id})
            ).scalar_one()
        )


async def test_writes_supersede_delete_and_erase_reach_the_index(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    items = [{"type": "fact", "content": f"fact number {i} about caches"} for i in range(5)]
    r = await client.post("/v1/users/v/items/batch", json={"items": items}, headers=tenant.agent)
    ids = [i["id"] for i in r.json()["items"]]
    assert await pending(db, tenant.tenant_id) == 5
    await vectors.worker.drain()
    assert await pending(db, tenant.tenant_id) == 0
    assert await vectors.index.count(tenant_id=tenant.tenant_id, user_id="v") == 5

    # supersede: the loser leaves the index; the winner enters it
    a = await client.post(
        "/v1/users/v/items", json={"type": "fact", "content": "budget 300", "key": "b", "value": 300, "source": "user",
                                   "observed_at": "2026-11-01T00:00:00Z"}, headers=tenant.agent,
    )  # fmt: skip
    b = await client.post(
        "/v1/users/v/items", json={"type": "fact", "content": "budget 500", "key": "b", "value": 500, "source": "user"},
        headers=tenant.agent,
    )  # fmt: skip
    await client.delete(f"/v1/users/v/items/{ids[0]}", headers=tenant.agent)
    await vectors.worker.drain()
    hits = await vectors.index.search(
        (await vectors.embedder.embed(["budget 300"]))[0], tenant_id=tenant.tenant_id, user_id="v", limit=50
    )
    found = {str(h.id) for h in hits}
    assert b.json()["id"] in found and a.json()["id"] not in found and ids[0] not in found
    assert await vectors.index.count(tenant_id=tenant.tenant_id, user_id="v") == 5  # 4 facts + budget 500

    # erasure removes every point of the user (and only theirs)
    await client.post("/v1/users/w2/items", json={"type": "fact", "content": "neighbour"}, headers=tenant.agent)
    await client.delete("/v1/users/v", headers=tenant.admin)
    await vectors.worker.drain()
    assert await vectors.index.count(tenant_id=tenant.tenant_id, user_id="v") == 0
    assert await vectors.index.count(tenant_id=tenant.tenant_id, user_id="w2") == 1


async def outbox_state(db: Database, tenant_id: str) -> tuple[int, int, str | None]:
    async with db.engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT count(*), max(attempts), max(last_error) FROM vector_outbox WHERE tenant_id = :t"),
                {"t": tenant_id},
            )
        ).one()
    return int(row[0]), int(row[1] or 0), row[2]


async def test_index_outage_loses_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings, tmp_path: Path
) -> None:
    index = QdrantEdgeIndex(tmp_path / "vectors", dim=settings.vectors.embedding_dim)
    await index.ensure_collection()

    clock = FixedClock(Clock().now())
    worker = OutboxWorker(
        db, index, HashingEmbedder(dim=settings.vectors.embedding_dim), batch_size=1000, max_backoff=2, clock=clock
    )
    await worker.drain()  # catch up with everything written so far
    await index.close()  # the index goes down
    r = await client.post(
        "/v1/users/o/items/batch",
        json={"items": [{"type": "fact", "content": f"written while down {i}"} for i in range(7)]},
        headers=tenant.agent,
    )  # fmt: skip
    assert r.status_code == 201  # writes still succeed
    clock.at = Clock().now()  # the worker's clock catches up with the writes
    assert await worker.drain_once() == -1  # the batch fails and is kept, with backoff
    count, attempts, error = await outbox_state(db, tenant.tenant_id)
    assert count == 7 and attempts == 1 and error
    index = QdrantEdgeIndex(tmp_path / "vectors", dim=settings.vectors.embedding_dim)  # back up
    await index.ensure_collection()
    worker.index = index
    clock.at += timedelta(seconds=0.9)  # the first retry is due after one second (scoring.backoff): not yet
    await worker.drain()
    assert (await outbox_state(db, tenant.tenant_id))[:2] == (7, 1)
    clock.at += timedelta(seconds=0.2)
    await worker.drain()
    assert await pending(db, tenant.tenant_id) == 0
    assert await index.count(tenant_id=tenant.tenant_id, user_id="o") == 7
    await index.close()


async def test_client_embedding_dimension_is_checked(
    client: httpx.AsyncClient, tenant: TenantKeys, settings: Settings
) -> None:
    ok = await client.post(
        "/v1/users/e/items",
        json={"type": "fact", "content": "own vector", "embedding": [0.1] * settings.vectors.embedding_dim},
        headers=tenant.agent,
    )
    assert ok.status_code == 201
    bad = await client.post(
        "/v1/users/e/items", json={"type": "fact", "content": "x", "embedding": [0.1, 0.2]}, headers=tenant.agent
    )
    assert bad.status_code == 422 and "dimensions" in bad.json()["detail"]
    nan = await client.post(
        "/v1/users/e/items", content=b'{"type": "fact", "content": "x", "embedding": [NaN]}',
        headers={**tenant.agent, "content-type": "application/json"},
    )  # fmt: skip
    assert nan.status_code == 422


async def points(vectors: VectorRecall, tenant: str, user: str, text_: str) -> set[str]:
    (v,) = await vectors.embedder.embed([text_])
    return {str(h.id) for h in await vectors.index.search(v, tenant_id=tenant, user_id=user, limit=100)}


async def requeue(db: Database, tenant: str, user: str, ids: list[str]) -> None:
    """Queue the same changes again, as a crashed worker that applied them but never deleted its rows
    would leave them."""
    async with db.engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO vector_outbox (tenant_id, user_id, item_id, op, created_at, next_attempt_at) "
                "SELECT :t, :u, i, 'sync', :now, :now FROM unnest(CAST(:ids AS uuid[])) AS i"
            ),
            {"t": tenant, "u": user, "ids": ids, "now": Clock().now()},  # the worker's clock, not the database's
        )


INDEXED = "SELECT item_id, tsv FROM item_search WHERE tenant_id = :t ORDER BY item_id"


@pytest.mark.parametrize("batch_size", [1, 1000])
async def test_order_decides_and_replays_change_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall, batch_size: int
) -> None:
    """Changes queued before the worker runs are applied in order — one by one or in one batch: an item
    written then deleted ends absent; a user erased and then written to again keeps only the new item."""
    worker = OutboxWorker(db, vectors.index, vectors.embedder, batch_size=batch_size, max_backoff=1)
    await worker.drain()
    t = tenant.tenant_id
    r = await client.post("/v1/users/p/items/batch", json={"items": [
        {"type": "fact", "content": "parrots talk a lot"}, {"type": "fact", "content": "parrots live long"}]},
        headers=tenant.agent)  # fmt: skip
    talk, live = (i["id"] for i in r.json()["items"])
    await client.delete(f"/v1/users/p/items/{talk}", headers=tenant.agent)
    await client.post("/v1/users/q/items", json={"type": "fact", "content": "quails are small"}, headers=tenant.agent)
    await client.delete("/v1/users/q", headers=tenant.admin)
    again = await client.post("/v1/users/q/items", json={"type": "fact", "content": "quails again"},
                              headers=tenant.agent)  # fmt: skip
    await worker.drain()
    assert await points(vectors, t, "p", "parrots") == {live}
    assert await points(vectors, t, "q", "quails") == {again.json()["id"]}
    assert await vectors.index.count(tenant_id=t) == 2

    # Replaying every change (as after a crash between applying and deleting) changes nothing.
    async with db.engine.connect() as conn:
        # (ordered: a replayed upsert rewrites its row, which may move it in the heap)
        rows = (await conn.execute(text(INDEXED), {"t": t})).all()
    await requeue(db, t, "p", [talk, live])
    await requeue(db, t, "q", [again.json()["id"]])
    await worker.drain()
    assert await points(vectors, t, "p", "parrots") == {live}
    assert await points(vectors, t, "q", "quails") == {again.json()["id"]}
    assert await vectors.index.count(tenant_id=t) == 2
    async with db.engine.connect() as conn:
        assert (await conn.execute(text(INDEXED), {"t": t})).all() == rows


async def test_concurrent_workers_apply_each_change_once(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    """Two workers on their own connections drain one outbox at once (rows claimed with SKIP LOCKED):
    nothing is lost and nothing is applied twice."""
    await vectors.worker.drain()
    items = [{"type": "fact", "content": f"concurrent note {i}"} for i in range(300)]
    for user in ("c1", "c2", "c3"):
        r = await client.post(f"/v1/users/{user}/items/batch", json={"items": items}, headers=tenant.agent)
        assert r.status_code == 201
    a = OutboxWorker(db, vectors.index, vectors.embedder, batch_size=50, max_backoff=1)
    b = OutboxWorker(db, vectors.index, vectors.embedder, batch_size=50, max_backoff=1)
    done = await asyncio.gather(a.drain(), b.drain())
    assert sum(done) == 900 and a.applied == done[0] and b.applied == done[1]
    assert min(done) > 0  # both took part
    assert await pending(db, tenant.tenant_id) == 0
    for user in ("c1", "c2", "c3"):
        assert await vectors.index.count(tenant_id=tenant.tenant_id, user_id=user) == 300


async def test_reindex_job_applies_the_outbox(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    await vectors.worker.drain()
    items = [{"type": "fact", "content": f"job {i}"} for i in range(12)]
    r = await client.post("/v1/users/j/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201 and await pending(db, tenant.tenant_id) == 12
    run = await client.post("/v1/jobs/reindex/run", headers=tenant.admin)
    assert run.status_code == 200, run.text
    assert run.json()["rows"]["vectors_applied"] >= 12
    assert await pending(db, tenant.tenant_id) == 0
    assert await vectors.index.count(tenant_id=tenant.tenant_id, user_id="j") == 12


class PickyEmbedder(HashingEmbedder):
    """Rejects any text containing POISON, as a remote model rejects a text it cannot take."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim=dim)
        self.picky = True

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.picky and any("POISON" in t for t in texts):
            raise EmbeddingError("input rejected by the model")
        return await super().embed(texts)


async def test_a_change_that_fails_alone_is_set_aside_not_blocking_the_rest(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings, tmp_path: Path
) -> None:
    index = QdrantEdgeIndex(tmp_path / "picky", dim=settings.vectors.embedding_dim)
    await index.ensure_collection()
    embedder = PickyEmbedder(settings.vectors.embedding_dim)
    clock = FixedClock(Clock().now())
    worker = OutboxWorker(db, index, embedder, batch_size=1000, max_backoff=1, max_attempts=3, clock=clock)
    await worker.drain()  # catch up with what other tests queued
    t = tenant.tenant_id
    items = [{"type": "fact", "content": f"fine note {i}"} for i in range(4)] + [
        {"type": "fact", "content": "POISON pill note"}
    ]
    r = await client.post("/v1/users/x/items/batch", json={"items": items}, headers=tenant.agent)
    poison = r.json()["items"][4]["id"]
    clock.at = Clock().now()  # the worker's clock catches up with the writes
    assert await worker.drain_once() == 4  # the others are applied at once
    assert await index.count(tenant_id=t, user_id="x") == 4

    async def state() -> tuple[int, bool]:
        async with db.engine.connect() as conn:
            row = (
                await conn.execute(
                    text("SELECT attempts, dead_at IS NOT NULL FROM vector_outbox WHERE item_id = :i"), {"i": poison}
                )
            ).one()
        return int(row[0]), bool(row[1])

    assert await state() == (1, False)
    for attempts in (2, 3):
        assert await worker.drain_once() == 0  # not due yet: it backs off
        clock.at += timedelta(seconds=1)  # fast-forward the backoff (capped at max_backoff = 1 s)
        assert await worker.drain_once() == -1
        assert await state() == (attempts, attempts == 3)
    async with session_scope(db) as s:
        behind = await lag(s, now=clock.now())
        found, _, _ = await lexical_ranking(
            s, caches=ProcessCaches(), tenant_id=t, user_id="x", query="pill", limit=5, now=Clock().now()
        )
    assert behind.dead >= 1 and behind.oldest_seconds < 5  # set aside: no longer lag, so windows trust the index
    assert [i for i, _ in found] == [poison]  # and full-text search has it all along
    assert await worker.drain_once() == 0  # the worker skips it

    embedder.picky = False  # the model is fixed; an operator runs the reindex job
    async with session_scope(db) as s:
        assert await revive_dead(s, now=clock.now()) >= 1
    await worker.drain()
    assert await index.count(tenant_id=t, user_id="x") == 5
    await index.close()


async def test_an_outage_never_sets_changes_aside(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings, tmp_path: Path
) -> None:
    index = QdrantEdgeIndex(tmp_path / "down", dim=settings.vectors.embedding_dim)
    await index.ensure_collection()
    clock = FixedClock(Clock().now())
    worker = OutboxWorker(db, index, HashingEmbedder(dim=settings.vectors.embedding_dim), batch_size=1000,
                          max_backoff=1, max_attempts=1, clock=clock)  # fmt: skip
    await worker.drain()
    await index.close()
    await client.post("/v1/users/y/items", json={"type": "fact", "content": "while down"}, headers=tenant.agent)
    clock.at = Clock().now()  # the worker's clock catches up with the write
    for _ in range(3):
        assert await worker.drain_once() == -1
        clock.at += timedelta(seconds=1)  # fast-forward the backoff (capped at max_backoff = 1 s)
    async with db.engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT attempts, dead_at FROM vector_outbox WHERE tenant_id = :t"), {"t": tenant.tenant_id}
            )
        ).one()
    assert row[0] == 3 and row[1] is None  # still waiting for the index, not set aside


async def test_drain_leaves_a_large_users_graphs_built(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings, tmp_path: Path
) -> None:
    # A threshold of 300 points, and graphs for any user above 1 KB of vectors (a few points of 384-d).
    params = BuildParams(full_scan_kb=1, threads=1)
    index = QdrantEdgeIndex(
        tmp_path / "vectors", dim=settings.vectors.embedding_dim, build_threshold=300, build_params=params
    )
    await index.ensure_collection()
    worker = OutboxWorker(db, index, HashingEmbedder(dim=settings.vectors.embedding_dim), batch_size=100, max_backoff=2)
    try:
        await worker.drain()  # catch up with everything written so far
        builds = index.builds
        for start in range(0, 400, 100):
            texts = [f"fact {i} about caches, queues and shards" for i in range(start, start + 100)]
            items = [{"type": "fact", "content": t} for t in texts]
            r = await client.post("/v1/users/big/items/batch", json={"items": items}, headers=tenant.agent)
            assert r.status_code == 201
        ids = [i["id"] for i in r.json()["items"]]
        await worker.drain()  # applies the 400 changes; a build starts on the way, and drain waits for it
        assert index.builds > builds
        assert await index.count(tenant_id=tenant.tenant_id, user_id="big") == 400
        query = (await worker.embedder.embed(["fact 399 about caches, queues and shards"]))[0]  # type: ignore[union-attr]
        hits = await index.search(query, tenant_id=tenant.tenant_id, user_id="big", limit=5)
        assert str(hits[0].id) == ids[-1]
    finally:
        await index.close()
