"""service/vectors/base.py: the payload filter (Where), when a search can only come back empty, point ids as
item ids, and the search contract every backend inherits (checked here on the in-memory Qdrant backend)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.vectors.base import Hit, VectorIndex, VectorPoint, Where, matches_nothing, point_uuid
from service.vectors.qdrant_server import QdrantServerIndex

ALLOWED = st.none() | st.lists(st.sampled_from(["active", "superseded", "fact"]), max_size=3)


def test_where_splits_into_equal_and_one_of_leaving_out_what_is_any() -> None:
    assert Where().equal() == {} and Where().one_of() == {}
    w = Where("t", "u", ("active",), [])
    assert w.equal() == {"tenant_id": "t", "user_id": "u"}
    assert w.one_of() == {"status": ["active"], "type": []}
    assert Where(tenant_id="t").equal() == {"tenant_id": "t"}


@given(st.integers(-3, 5), ALLOWED, ALLOWED)
def test_a_search_matches_nothing_without_room_or_with_an_empty_allowed_list(
    limit: int, statuses: list[str] | None, types: list[str] | None
) -> None:
    expected = limit < 1 or statuses == [] or types == []
    assert matches_nothing(limit, statuses, types) == expected


@given(st.uuids())
def test_point_ids_read_back_as_the_item_uuid(u: uuid.UUID) -> None:
    assert point_uuid(u) is u
    assert point_uuid(str(u)) == u


def test_a_backend_must_implement_the_whole_interface() -> None:
    class Half(VectorIndex):
        dim, name = 2, "half"

        async def ensure_collection(self) -> None:
            return None

    with pytest.raises(TypeError, match="abstract"):
        Half()  # type: ignore[abstract]


DIM = 4


@pytest.fixture
async def index() -> AsyncIterator[VectorIndex]:
    idx = QdrantServerIndex(location=":memory:", dim=DIM)
    await idx.ensure_collection()
    await idx.upsert(
        [
            VectorPoint(
                uuid.uuid4(), [1, 0, 0, 0], {"tenant_id": "t", "user_id": "u", "status": "active", "type": "fact"}
            ),
            VectorPoint(
                uuid.uuid4(), [0, 1, 0, 0], {"tenant_id": "t", "user_id": "u", "status": "active", "type": "goal"}
            ),
        ]
    )
    yield idx
    await idx.close()


async def test_search_checks_the_dimension_even_when_nothing_could_match(index: VectorIndex) -> None:
    with pytest.raises(ValueError, match="dimensions"):
        await index.search([1.0, 0.0], tenant_id="t", user_id="u", limit=0)


async def test_search_returns_hits_with_uuid_ids_best_first(index: VectorIndex) -> None:
    hits = await index.search([1, 0.1, 0, 0], tenant_id="t", user_id="u", limit=5)
    assert len(hits) == 2 and all(isinstance(h, Hit) and isinstance(h.id, uuid.UUID) for h in hits)
    assert hits[0].score > hits[1].score


async def test_an_empty_allowed_list_or_no_room_is_empty_not_unfiltered(index: VectorIndex) -> None:
    assert await index.search([1, 0, 0, 0], tenant_id="t", user_id="u", limit=5, types=[]) == []
    assert await index.search([1, 0, 0, 0], tenant_id="t", user_id="u", limit=5, statuses=[]) == []
    assert await index.search([1, 0, 0, 0], tenant_id="t", user_id="u", limit=0) == []
    only_goals = await index.search([1, 0, 0, 0], tenant_id="t", user_id="u", limit=5, types=["goal"])
    assert len(only_goals) == 1
