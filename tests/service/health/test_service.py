"""service/health/service.py: when a pod may take traffic. Ready at the code's head or beyond (a newer
revision during a rolling update), not when behind or unreachable; the vector index is reported, never a
reason to stop serving."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from service.db import migrate
from service.db.engine import Database, create_database
from service.health.service import readiness
from service.settings import Settings
from service.tokenizer import Tokenizer, build_tokenizer
from service.vectors.qdrant_server import QdrantServerIndex
from service.vectors.recall import OutboxGauges, VectorRecall, outbox_worker

HEAD = migrate.head_revision()


def tokenizer(settings: Settings) -> Tokenizer:
    return build_tokenizer(settings.tokens.tokenizer, cache_dir=settings.resolved_tokenizer_cache_dir)


def gauges() -> OutboxGauges:
    return OutboxGauges(CollectorRegistry())


async def test_ready_at_head_with_every_check_reported(db: Database, settings: Settings, vectors: VectorRecall) -> None:
    g = gauges()
    result = await readiness(
        db=db,
        head=HEAD,
        known=migrate.known_revisions(),
        vectors=vectors,
        tokenizer=tokenizer(settings),
        outbox_gauges=g,
    )
    assert result.ready
    checks = result.checks
    assert checks["database"] == "ok"
    assert checks["migrations"] == {"database": HEAD, "code_head": HEAD, "status": "ok"}
    v = checks["vectors"]
    assert (v["backend"], v["embedder"], v["index"]) == (vectors.index.name, vectors.embedder.name, "ok")
    assert v["points"] >= 0 and v["outbox_pending"] >= 0 and v["outbox_dead"] >= 0
    assert v["outbox_oldest_seconds"] == round(v["outbox_oldest_seconds"], 3)
    assert g.pending._value.get() == v["outbox_pending"]  # the gauges follow what readiness read
    assert checks["tokenizer"] == {"name": "o200k_base", "exact": True}


async def test_behind_when_the_code_knows_a_newer_revision(db: Database, settings: Settings) -> None:
    newer = "a_revision_after_head"
    result = await readiness(
        db=db,
        head=newer,
        known=migrate.known_revisions() | {newer},
        vectors=None,
        tokenizer=tokenizer(settings),
        outbox_gauges=gauges(),
    )
    assert not result.ready
    assert result.checks["migrations"] == {"database": HEAD, "code_head": newer, "status": "behind"}
    assert result.checks["vectors"] == {"backend": "off"}


async def test_ready_when_the_database_is_ahead_of_this_code(db: Database, settings: Settings) -> None:
    # This code's head is older than the database's revision, which it does not know: an old pod during a
    # rolling update keeps serving the expand-only migration.
    older_code_head = "an_older_head"
    result = await readiness(
        db=db,
        head=older_code_head,
        known={older_code_head},
        vectors=None,
        tokenizer=tokenizer(settings),
        outbox_gauges=gauges(),
    )
    assert result.ready
    assert result.checks["migrations"]["status"] == "ok"


async def test_unreachable_database_is_not_ready_and_says_why(settings: Settings) -> None:
    broken = settings.replace(database_url="postgresql://nobody@127.0.0.1:1/none")
    db = create_database(broken.database.url, broken)
    try:
        result = await readiness(
            db=db,
            head=HEAD,
            known=migrate.known_revisions(),
            vectors=None,
            tokenizer=tokenizer(settings),
            outbox_gauges=gauges(),
        )
    finally:
        await db.dispose()
    assert not result.ready
    assert result.checks["database"].startswith("unreachable: ")
    assert "migrations" not in result.checks


async def test_a_failing_index_is_reported_but_the_pod_stays_ready(
    db: Database, settings: Settings, vectors: VectorRecall
) -> None:
    index = QdrantServerIndex(location=":memory:", dim=vectors.embedder.dim)
    await index.close()  # a closed client fails every call, as an unreachable server would
    broken = VectorRecall(index, vectors.embedder, outbox_worker(db, settings, index, vectors.embedder))
    result = await readiness(
        db=db,
        head=HEAD,
        known=migrate.known_revisions(),
        vectors=broken,
        tokenizer=tokenizer(settings),
        outbox_gauges=gauges(),
    )
    assert result.ready
    assert result.checks["vectors"]["index"].startswith("unavailable: ")
    assert "points" not in result.checks["vectors"]
