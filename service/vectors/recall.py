"""The vector-recall bundle a process holds: the index, the embedder and the outbox worker."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Gauge

from service.db.engine import Database
from service.settings import Settings
from service.vectors.base import Embedder, VectorIndex
from service.vectors.repository import Lag
from service.vectors.worker import OutboxWorker


class OutboxGauges:
    """Prometheus gauges of the vector outbox, in the app's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.pending = Gauge(
            "ctxmem_vector_outbox_pending", "Changes not yet applied to the vector index", registry=registry
        )
        self.oldest = Gauge(
            "ctxmem_vector_outbox_oldest_seconds", "Age of the oldest change not yet applied", registry=registry
        )
        self.dead = Gauge(
            "ctxmem_vector_outbox_dead",
            "Changes set aside after failing on their own (retried by the reindex job)",
            registry=registry,
        )

    def update(self, lag: Lag) -> None:
        self.pending.set(lag.pending)
        self.oldest.set(lag.oldest_seconds)
        self.dead.set(lag.dead)


@dataclass
class VectorRecall:
    index: VectorIndex
    embedder: Embedder
    worker: OutboxWorker


def outbox_worker(
    db: Database, settings: Settings, index: VectorIndex | None = None, embedder: Embedder | None = None
) -> OutboxWorker:
    """The outbox worker with the settings' batch size, backoff and attempts. Without an index and an
    embedder (vector recall off) it keeps the lexical index current, and the outbox drained, alone."""
    return OutboxWorker(
        db,
        index,
        embedder,
        batch_size=settings.outbox.batch_size,
        max_backoff=settings.outbox.max_backoff_seconds,
        max_attempts=settings.outbox.max_attempts,
    )


async def build_recall(db: Database, settings: Settings) -> VectorRecall | None:
    """From settings; ``None`` when vector recall is off."""
    if settings.vectors.backend == "off":
        return None
    from service.vectors.embedders import build_embedder
    from service.vectors.factory import build_index

    embedder = build_embedder(
        settings.vectors.embedder,
        dim=settings.vectors.embedding_dim,
        url=settings.vectors.embedding_url,
        model=settings.vectors.embedding_model,
        api_key=settings.vectors.embedding_api_key,
    )
    index = build_index(
        settings.vectors.backend,
        dim=settings.vectors.embedding_dim,
        data_dir=settings.server.data_dir,
        url=settings.vectors.qdrant_url,
        api_key=settings.vectors.qdrant_api_key,
        build_threshold=settings.vectors.build_threshold,
        database_url=db.url,
        shard_by_tenant=settings.vectors.qdrant_shard_by_tenant,
        shard_number=settings.vectors.qdrant_shard_number,
        replication_factor=settings.vectors.qdrant_replication_factor,
    )
    await index.ensure_collection()
    return VectorRecall(index, embedder, outbox_worker(db, settings, index, embedder))
