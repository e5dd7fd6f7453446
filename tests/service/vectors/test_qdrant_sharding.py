"""QdrantServerIndex with shard_by_tenant against a stand-in Qdrant server over real HTTP
(tests/service/vectors/qdrant_standin.py: Qdrant's REST protocol and its rules for user-defined
sharding): a collection with custom sharding, one shard key per tenant created on its first write, and
every read or write of one tenant naming its key."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from service.db.engine import Database
from service.settings import Settings
from service.vectors.base import COLLECTION
from service.vectors.qdrant_server import QdrantServerIndex
from service.vectors.recall import build_recall
from tests.service.vectors.qdrant_standin import QdrantStandIn, serve
from tests.service.vectors.test_index_contract import DIM, point, unit_vectors


@pytest.fixture
def standin() -> Iterator[tuple[QdrantStandIn, str]]:
    s = QdrantStandIn()
    with serve(s) as url:
        yield s, url


@pytest.fixture
async def sharded(standin: tuple[QdrantStandIn, str]) -> AsyncIterator[QdrantServerIndex]:
    idx = QdrantServerIndex(url=standin[1], dim=DIM, shard_by_tenant=True, shard_number=2, replication_factor=2)
    await idx.ensure_collection()
    try:
        yield idx
    finally:
        await idx.close()


async def test_each_tenant_lives_under_its_own_shard_key(
    standin: tuple[QdrantStandIn, str], sharded: QdrantServerIndex
) -> None:
    server, _ = standin
    vectors = unit_vectors(20, 3)
    mine = [point(v, tenant="t1") for v in vectors[:10]]
    theirs = [point(v, tenant="t2") for v in vectors[10:]]
    await sharded.upsert([*mine, *theirs])  # one batch of two tenants: one upsert per shard key
    c = server.collections[COLLECTION]
    assert c.custom and c.shard_number == 2 and c.replication_factor == 2
    assert {k: len(v) for k, v in c.shards.items()} == {"t1": 10, "t2": 10}

    hits = await sharded.search(vectors[12], tenant_id="t2", user_id="u1", limit=3)
    assert hits[0].id == theirs[2].id and {h.id for h in hits} <= {p.id for p in theirs}
    assert await sharded.count(tenant_id="t1") == 10 and await sharded.count() == 20
    await sharded.delete_user("t1", "u1")
    assert await sharded.count(tenant_id="t1") == 0 and await sharded.count(tenant_id="t2") == 10
    await sharded.delete([theirs[0].id, uuid.uuid4()])
    assert await sharded.count() == 9

    upserts = [b for m, path, b in server.requests if m == "PUT" and path.endswith("/points")]
    queries = [b for m, path, b in server.requests if path.endswith("/points/query")]
    created = [b["shard_key"] for m, path, b in server.requests if path.endswith("/shards")]
    # Every upsert and every search of one tenant named its key; each key was created once.
    assert sorted(b["shard_key"] for b in upserts) == ["t1", "t2"]
    assert [b["shard_key"] for b in queries] == ["t2"]
    assert created == ["t1", "t2"]


async def test_a_second_process_reuses_existing_shard_keys(
    standin: tuple[QdrantStandIn, str], sharded: QdrantServerIndex
) -> None:
    v = unit_vectors(2, 5)
    await sharded.upsert([point(v[0], tenant="t1")])
    other = QdrantServerIndex(url=standin[1], dim=DIM, shard_by_tenant=True, shard_number=2, replication_factor=2)
    try:
        await other.ensure_collection()
        await other.upsert([point(v[1], tenant="t1")])  # the key exists already: used, not an error
        assert await other.count(tenant_id="t1") == 2
    finally:
        await other.close()


async def test_a_tenant_never_written_searches_empty(sharded: QdrantServerIndex) -> None:
    assert await sharded.search(unit_vectors(1, 0)[0], tenant_id="nobody", user_id="u", limit=5) == []


async def test_sharding_cannot_change_on_an_existing_collection(standin: tuple[QdrantStandIn, str]) -> None:
    plain = QdrantServerIndex(url=standin[1], dim=DIM)
    await plain.ensure_collection()
    await plain.upsert([point(np.ones(DIM) / np.sqrt(DIM))])
    await plain.close()
    sharded = QdrantServerIndex(url=standin[1], dim=DIM, shard_by_tenant=True)
    try:
        with pytest.raises(ValueError, match="sharding cannot change in place"):
            await sharded.ensure_collection()
    finally:
        await sharded.close()


async def test_local_mode_refuses_shard_keys() -> None:
    idx = QdrantServerIndex(location=":memory:", dim=DIM, shard_by_tenant=True)
    try:
        with pytest.raises(ValueError, match="needs a Qdrant server"):
            await idx.ensure_collection()
    finally:
        await idx.close()


async def test_the_settings_reach_the_index(
    standin: tuple[QdrantStandIn, str], db: Database, settings: Settings
) -> None:
    server, url = standin
    configured = settings.replace(
        vector_backend="qdrant", qdrant_url=url, qdrant_shard_by_tenant=True, qdrant_shard_number=3,
        qdrant_replication_factor=2, embedding_dim=DIM,
    )  # fmt: skip
    recall = await build_recall(db, configured)
    assert recall is not None
    try:
        assert isinstance(recall.index, QdrantServerIndex) and recall.index.shard_by_tenant
        c = server.collections[COLLECTION]
        assert (c.custom, c.shard_number, c.replication_factor) == (True, 3, 2)
    finally:
        await recall.index.close()
        await recall.embedder.close()
