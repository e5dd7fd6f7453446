"""service/vectors/recall.py: the process's vector-recall bundle built from settings (or none when off), the
outbox worker with the settings' limits, and the outbox gauges."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from service.db.engine import Database
from service.settings import Settings
from service.vectors.qdrant_server import QdrantServerIndex
from service.vectors.recall import OutboxGauges, build_recall, outbox_worker
from service.vectors.repository import Lag


def test_the_gauges_show_the_last_lag_they_were_given() -> None:
    registry = CollectorRegistry()
    gauges = OutboxGauges(registry)
    gauges.update(Lag(pending=7, oldest_seconds=2.5, dead=1))
    gauges.update(Lag(pending=3, oldest_seconds=0.25))
    value = registry.get_sample_value
    assert value("ctxmem_vector_outbox_pending") == 3
    assert value("ctxmem_vector_outbox_oldest_seconds") == 0.25
    assert value("ctxmem_vector_outbox_dead") == 0


def test_the_worker_takes_the_settings_limits(db: Database, settings: Settings) -> None:
    tuned = settings.replace(outbox_batch_size=17, outbox_max_backoff_seconds=9.0, outbox_max_attempts=3)
    worker = outbox_worker(db, tuned)
    assert (worker.batch_size, worker.max_backoff, worker.max_attempts) == (17, 9.0, 3)
    assert worker.index is None and worker.embedder is None  # recall off: the lexical index alone


async def test_no_bundle_when_vector_recall_is_off(db: Database, settings: Settings) -> None:
    assert await build_recall(db, settings.replace(vector_backend="off")) is None


async def test_the_bundle_has_the_backend_and_embedder_of_the_settings(
    db: Database, settings: Settings, tmp_path: Path
) -> None:
    chosen = settings.replace(vector_backend="memory", embedding_dim=32, data_dir=tmp_path)
    recall = await build_recall(db, chosen)
    assert recall is not None
    try:
        assert isinstance(recall.index, QdrantServerIndex) and recall.index.name == "qdrant-memory"
        assert recall.index.dim == recall.embedder.dim == 32
        assert await recall.index.count() == 0  # the collection exists: it was ensured
        assert recall.worker.index is recall.index and recall.worker.embedder is recall.embedder
        assert recall.worker.batch_size == chosen.outbox.batch_size
    finally:
        await recall.index.close()
        await recall.embedder.close()
