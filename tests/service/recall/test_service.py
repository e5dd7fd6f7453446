"""service/recall/service.py: how the two rankings are fused, and when relevance says it is degraded.
(Recall through the window, outages and lag: test_window_recall.py.)"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import pytest
from fastapi import FastAPI

from schemas.items import ItemCreate
from service.items import service as items
from service.recall.service import fuse, relevance, vector_ranking
from service.settings import Settings
from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys
from tests.service.service_context import service_context

LEXICAL = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
VECTOR = [("c", 0.95), ("d", 0.7), ("a", 0.6)]


def ranked(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda i: (-scores[i], i))


def test_rrf_puts_what_both_rankings_found_first(settings: Settings) -> None:
    rrf = settings.replace(fusion="rrf", rrf_k=60)
    scores = fuse(LEXICAL, VECTOR, rrf, None)
    assert set(ranked(scores)[:2]) == {"a", "c"}
    assert set(scores) == {"a", "b", "c", "d"}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)


def test_convex_fusion_follows_the_weight(settings: Settings) -> None:
    only_words = settings.replace(fusion="convex", fusion_lexical_weight=1.0, vector_min_score=0.0)
    only_vectors = settings.replace(fusion="convex", fusion_lexical_weight=0.0, vector_min_score=0.0)
    assert ranked(fuse(LEXICAL, VECTOR, only_words, None))[:3] == ["a", "b", "c"]
    assert ranked(fuse(LEXICAL, VECTOR, only_vectors, None))[:3] == ["c", "d", "a"]


def test_one_ranking_alone_is_that_ranking(settings: Settings) -> None:
    convex = settings.replace(fusion="convex", fusion_lexical_weight=0.5)
    assert ranked(fuse(LEXICAL, None, convex, None)) == ["a", "b", "c"]
    assert fuse(None, None, convex, None) == {}


NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize(("mode", "warned"), [("hybrid", True), ("vector", True), ("lexical", False)])
async def test_without_an_index_relevance_is_degraded_unless_it_never_wanted_one(
    app: FastAPI, tenant: TenantKeys, mode: str, warned: bool
) -> None:
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        result = await relevance(ctx, user_id="nobody", query="cache", documents=0, mode=mode)
    assert result.vector is None and result.scores == {}
    if warned:
        assert result.warnings == ["degraded: vector recall is off; relevance from PostgreSQL full-text search only"]
    else:
        assert result.warnings == []


async def test_relevance_is_in_zero_one_with_the_best_at_one(
    app: FastAPI, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    uid = f"u-{secrets.token_hex(4)}"
    async with service_context(app, tenant.agent) as ctx:
        texts = ["redis cluster is hard to run", "memcached is simple to run", "the office plant needs water"]
        await items.create_items(
            ctx, user_id=uid, items=[ItemCreate(type="fact", content=t) for t in texts], batch=True
        )
    await vectors.worker.drain()
    async with service_context(app, tenant.agent, vectors=vectors) as ctx:
        result = await relevance(ctx, user_id=uid, query="redis cluster", documents=0)
        ranking = await vector_ranking(
            vectors, ctx.settings, tenant_id=tenant.tenant_id, user_id=uid, query="redis cluster"
        )
    assert result.warnings == []
    assert result.scores and max(result.scores.values()) == pytest.approx(1.0)
    assert all(0 < s <= 1 for s in result.scores.values())
    assert result.lexical is not None and result.vector is not None
    floor = (
        vectors.embedder.min_score
        if app.state.settings.recall.vector_min_score is None
        else app.state.settings.recall.vector_min_score
    )
    assert all(score >= floor for _, score in ranking)
    assert [s for _, s in ranking] == sorted((s for _, s in ranking), reverse=True)
