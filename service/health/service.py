"""Readiness rules: when a pod may take traffic, and what each dependency's state is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.db.engine import Database, session_scope
from service.health import repository
from service.tokenizer import Tokenizer
from service.vectors.recall import OutboxGauges, VectorRecall
from service.vectors.repository import lag


@dataclass(frozen=True)
class Readiness:
    ready: bool
    checks: dict[str, Any]


async def readiness(
    *,
    db: Database,
    head: str,
    known: set[str],
    vectors: VectorRecall | None,
    tokenizer: Tokenizer,
    outbox_gauges: OutboxGauges,
) -> Readiness:
    """Ready when the database answers and is migrated to ``head`` or beyond; the vector index is reported
    but never makes the pod unready."""
    checks: dict[str, Any] = {}
    ready = True
    try:
        revision = await repository.database_revision(db)
        checks["database"] = "ok"
    except Exception as exc:  # any failure to reach the database means "not ready", with the reason
        checks["database"] = f"unreachable: {type(exc).__name__}"
        revision = None
        ready = False
    if ready:
        # Ready at head, and also when the database is *ahead* of this code (a newer revision we do not
        # know): during a rolling update the old pods keep serving an expand-only migration.
        behind = revision is None or (revision != head and revision in known)
        checks["migrations"] = {
            "database": revision,
            "code_head": head,
            "status": "behind" if behind else "ok",
        }
        ready = not behind
    if vectors is None:
        checks["vectors"] = {"backend": "off"}
    else:
        state: dict[str, Any] = {"backend": vectors.index.name, "embedder": vectors.embedder.name}
        try:
            state["points"] = await vectors.index.count()
            state["index"] = "ok"
        except Exception as exc:  # the window degrades to PostgreSQL-only ranking; not a reason to stop serving
            state["index"] = f"unavailable: {type(exc).__name__}"
        if ready:
            try:
                async with session_scope(db) as session:
                    outbox = await lag(session, now=vectors.worker.clock.now())
                state["outbox_pending"], state["outbox_oldest_seconds"] = (
                    outbox.pending,
                    round(outbox.oldest_seconds, 3),
                )
                state["outbox_dead"] = outbox.dead
                outbox_gauges.update(outbox)
            except Exception as exc:
                state["outbox"] = f"unreadable: {type(exc).__name__}"
        checks["vectors"] = state
    checks["tokenizer"] = {"name": tokenizer.name, "exact": tokenizer.exact}
    return Readiness(ready=ready, checks=checks)
