"""service/vectors/qdrant_server.py: one way to say where the index is, its name by that, a collection of
another dimension refused, and every client failure as VectorIndexUnavailable naming the operation.
(The VectorIndex contract on every backend, and an unreachable server: test_index_contract.py.)"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import AsyncQdrantClient

from service.vectors.base import VectorIndexUnavailable, VectorPoint
from service.vectors.qdrant_server import QdrantServerIndex


@pytest.mark.parametrize(
    "where",
    [{}, {"location": ":memory:", "url": "http://q:6333"}, {"location": ":memory:", "path": "/tmp/q"}],
)
def test_exactly_one_place_is_needed(where: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="exactly one of client, url, location or path"):
        QdrantServerIndex(dim=4, **where)


def test_the_dimension_must_be_positive() -> None:
    with pytest.raises(ValueError, match="dim must be positive"):
        QdrantServerIndex(dim=0, location=":memory:")


async def test_a_collection_of_another_dimension_is_refused_not_overwritten() -> None:
    client = AsyncQdrantClient(location=":memory:")
    first = QdrantServerIndex(dim=4, client=client)
    await first.ensure_collection()
    await first.ensure_collection()  # idempotent
    await first.upsert([VectorPoint(uuid.uuid4(), [1, 0, 0, 0], {"tenant_id": "t", "user_id": "u"})])
    other = QdrantServerIndex(dim=8, client=client)
    with pytest.raises(ValueError, match="holds vectors of size 4, the embedder makes 8"):
        await other.ensure_collection()
    assert await first.count() == 1
    assert first.name == "qdrant-memory" and first.local
    await first.close()


async def test_local_mode_is_named_and_kept_on_disk(tmp_path: Path) -> None:
    index = QdrantServerIndex(dim=4, path=tmp_path / "q")
    await index.ensure_collection()
    try:
        assert (index.name, index.local) == ("qdrant-local", True)
        assert (tmp_path / "q").is_dir()
    finally:
        await index.close()


def test_a_server_by_url_is_plain_qdrant() -> None:
    index = QdrantServerIndex(dim=4, url="http://qdrant.invalid:6333")
    assert (index.name, index.local) == ("qdrant", False)


async def test_client_failures_are_unavailable_naming_the_operation() -> None:
    index = QdrantServerIndex(dim=4, location=":memory:")  # never given its collection
    with pytest.raises(VectorIndexUnavailable, match=r"^qdrant count failed: "):
        await index.count()
    with pytest.raises(VectorIndexUnavailable, match=r"^qdrant search failed: "):
        await index.search([1, 0, 0, 0], tenant_id="t", user_id="u", limit=3)
    with pytest.raises(ValueError, match="vector has 2 dimensions"):  # a caller bug, before any I/O
        await index.upsert([VectorPoint(uuid.uuid4(), [1, 0], {})])
    await index.upsert([])  # nothing to send
    await index.delete([])
    await index.close()
