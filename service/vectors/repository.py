"""Every SQL statement of the vector outbox (docs/design.md §3.8): the changes to index, written in the same
transaction as the change (so an index outage loses nothing), claimed, retired and rescheduled by the worker
(service/vectors/worker.py); and the lexical index (``item_search``) the worker keeps in step with them."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.locks import user_lock_sql
from service.db.models import ACTIVE_STATUSES


async def enqueue_sync(
    session: AsyncSession, tenant_id: str, user_id: str, item_ids: Sequence[uuid.UUID], now: datetime
) -> None:
    """Ask the worker to make these items' points match their rows (upsert if active, else delete)."""
    if not item_ids:
        return
    await session.execute(
        text(
            "INSERT INTO vector_outbox (tenant_id, user_id, item_id, op, created_at, next_attempt_at) "
            "SELECT :t, :u, i, 'sync', :now, :now FROM unnest(CAST(:ids AS uuid[])) WITH ORDINALITY AS x(i, n) "
            "ORDER BY n"
        ),
        {"t": tenant_id, "u": user_id, "ids": list(item_ids), "now": now},
    )


async def enqueue_user_delete(session: AsyncSession, tenant_id: str, user_id: str, now: datetime) -> None:
    """Erasure: drop the user's pending changes and remove all their points."""
    await session.execute(
        text("DELETE FROM vector_outbox WHERE tenant_id = :t AND user_id = :u"), {"t": tenant_id, "u": user_id}
    )
    await session.execute(
        text(
            "INSERT INTO vector_outbox (tenant_id, user_id, item_id, op, created_at, next_attempt_at) "
            "VALUES (:t, :u, NULL, 'delete_user', :now, :now)"
        ),
        {"t": tenant_id, "u": user_id, "now": now},
    )


@dataclass(frozen=True)
class Lag:
    pending: int
    oldest_seconds: float
    dead: int = 0  # changes set aside (not counted in pending or oldest_seconds)


async def lag(session: AsyncSession, *, now: datetime) -> Lag:
    """How far the outbox is behind at ``now`` (the worker's clock, like ``created_at``): the changes
    waiting, the age of the oldest of them, and the dead letters (which count in neither)."""
    row = (
        await session.execute(
            text(
                "SELECT count(*) FILTER (WHERE dead_at IS NULL) AS pending, "
                "count(*) FILTER (WHERE dead_at IS NOT NULL) AS dead, "
                "min(created_at) FILTER (WHERE dead_at IS NULL) AS oldest "
                "FROM vector_outbox"
            )
        )
    ).one()
    oldest = 0.0 if row.oldest is None else (now - row.oldest).total_seconds()
    return Lag(int(row.pending), max(0.0, oldest), int(row.dead))


async def revive_dead(session: AsyncSession, *, now: datetime) -> int:
    """Give the changes set aside another chance, due at ``now`` (the reindex job, after a fix)."""
    result = await session.execute(
        text("UPDATE vector_outbox SET dead_at = NULL, attempts = 0, next_attempt_at = :now WHERE dead_at IS NOT NULL"),
        {"now": now},
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def claim_due(session: AsyncSession, *, now: datetime, limit: int) -> list[Any]:
    """The oldest ``limit`` changes due at ``now`` and not set aside, locked for this transaction. Rows
    another worker holds are skipped (SKIP LOCKED), so several workers share one outbox."""
    return list(
        (
            await session.execute(
                text(
                    "SELECT id, tenant_id, user_id, item_id, op, attempts FROM vector_outbox "
                    "WHERE next_attempt_at <= :now AND dead_at IS NULL ORDER BY id LIMIT :n "
                    "FOR UPDATE SKIP LOCKED"
                ),
                {"now": now, "n": limit},
            )
        ).all()
    )


# The users being erased: their user lock is held exclusively (service/db/locks.py). Tried without
# waiting, so the worker never waits for an erasure; the erasure waits for the worker's batch (which holds
# the others shared) and deletes the skipped rows itself.
_ERASING = text(
    "SELECT t, u FROM unnest(CAST(:ts AS text[]), CAST(:us AS text[])) AS x(t, u) "
    f"WHERE NOT {user_lock_sql('pg_try_advisory_xact_lock_shared', 't', 'u')}"
)


async def lock_users_shared(session: AsyncSession, users: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """Takes these (tenant, user) locks shared, without waiting, until the transaction ends; returns the
    users whose lock could not be taken (they are being erased)."""
    pairs = list(dict.fromkeys(users))
    result = await session.execute(_ERASING, {"ts": [t for t, _ in pairs], "us": [u for _, u in pairs]})
    return {(t, u) for t, u in result}


async def delete_changes(session: AsyncSession, ids: Sequence[int]) -> None:
    """Retire applied changes."""
    await session.execute(text("DELETE FROM vector_outbox WHERE id = ANY(:ids)"), {"ids": list(ids)})


async def reschedule(
    session: AsyncSession, *, change_id: int, attempts: int, error: str, retry_at: datetime, dead_at: datetime | None
) -> None:
    """Record a failed attempt: due again at ``retry_at``, or set aside from ``dead_at`` on."""
    await session.execute(
        text(
            "UPDATE vector_outbox SET attempts = :a, last_error = :e, next_attempt_at = :retry, dead_at = :dead "
            "WHERE id = :id"
        ),
        {"a": attempts, "e": error, "retry": retry_at, "dead": dead_at, "id": change_id},
    )


async def items_to_index(session: AsyncSession, item_ids: Sequence[uuid.UUID]) -> list[Any]:
    """The rows of these items as the vector index needs them (missing ids: the item is gone)."""
    return list(
        (
            await session.execute(
                text(
                    "SELECT id, tenant_id, user_id, type, status, domain, content, embedding FROM context_item "
                    "WHERE id = ANY(:ids)"
                ),
                {"ids": list(item_ids)},
            )
        ).all()
    )


# The lexical index (item_search) of the items a batch touches: the active ones (re)indexed, the others
# removed. Set-based: one statement each per batch.
_SEARCH_UPSERT = text(
    "INSERT INTO item_search (item_id, tenant_id, user_id, tsv) "
    "SELECT id, tenant_id, user_id, ctxmem_tsv(content) FROM context_item "
    "WHERE id = ANY(:ids) AND status = ANY(:active) "
    "ON CONFLICT (item_id) DO UPDATE SET tsv = EXCLUDED.tsv"
)
_SEARCH_DELETE = text(
    "DELETE FROM item_search s WHERE s.item_id = ANY(:ids) AND NOT EXISTS "
    "(SELECT 1 FROM context_item c WHERE c.id = s.item_id AND c.status = ANY(:active))"
)


async def sync_search(session: AsyncSession, item_ids: Sequence[uuid.UUID]) -> None:
    """``item_search`` for these items: the active ones (re)indexed, the others removed."""
    if not item_ids:
        return
    params = {"ids": list(item_ids), "active": list(ACTIVE_STATUSES)}
    await session.execute(_SEARCH_UPSERT, params)
    await session.execute(_SEARCH_DELETE, params)


async def erase_search(session: AsyncSession, tenant_id: str, user_id: str) -> None:
    """``item_search`` without any of this user's items."""
    await session.execute(
        text("DELETE FROM item_search WHERE tenant_id = :t AND user_id = :u"), {"t": tenant_id, "u": user_id}
    )
