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


# The tenants of the oldest ``:n`` changes due, the tenant of the oldest change first. Not locked: a plain
# read, which a sharded database runs on every shard.
_DUE_TENANTS = text(
    "SELECT tenant_id FROM (SELECT tenant_id, id FROM vector_outbox "
    "WHERE dead_at IS NULL AND next_attempt_at <= :now ORDER BY id LIMIT :n) AS oldest "
    "GROUP BY tenant_id ORDER BY min(id)"
)
# One tenant's oldest due changes, locked for the transaction (SKIP LOCKED: rows another worker holds are
# passed over). Pinned to the tenant, so on a sharded database (docs/citus.md) the lock is taken on one
# shard: Citus refuses row locks in a SELECT that spans shards.
_CLAIM_TENANT = text(
    "SELECT id, tenant_id, user_id, item_id, op, attempts FROM vector_outbox "
    "WHERE tenant_id = :t AND next_attempt_at <= :now AND dead_at IS NULL ORDER BY id LIMIT :n "
    "FOR UPDATE SKIP LOCKED"
)


async def due_tenants(session: AsyncSession, *, now: datetime, limit: int) -> list[str]:
    """The tenants the oldest ``limit`` changes due at ``now`` belong to, in the order of each tenant's
    oldest change."""
    return list((await session.execute(_DUE_TENANTS, {"now": now, "n": limit})).scalars())


async def claim_tenant(session: AsyncSession, tenant_id: str, *, now: datetime, limit: int) -> list[Any]:
    """The oldest ``limit`` changes of one tenant due at ``now`` and not set aside, locked for this
    transaction; rows another worker holds are skipped."""
    return list((await session.execute(_CLAIM_TENANT, {"t": tenant_id, "now": now, "n": limit})).all())


async def claim_due(session: AsyncSession, *, now: datetime, limit: int) -> list[Any]:
    """Up to ``limit`` changes due at ``now`` and not set aside, in id order, locked for this transaction.
    Rows another worker holds are skipped (SKIP LOCKED), so several workers share one outbox.

    Claimed tenant by tenant, each claim with its tenant pinned: the tenants of the oldest due changes in
    the order of their oldest (an unlocked read), then from each in turn its oldest due changes, as many as
    the batch has room for. So the tenant whose change has waited longest is served first, as when one
    statement claimed the oldest changes of any tenants; a tenant's changes are claimed in id order (a
    user's order); and a tenant with a backlog fills the rest of a batch with it rather than the batch
    costing a claim per tenant for one change each — whoever waits behind it waits one batch longer at
    most, since the next batch starts again from the oldest change due."""
    rows: list[Any] = []
    for tenant_id in await due_tenants(session, now=now, limit=limit):
        if len(rows) >= limit:
            break
        rows += await claim_tenant(session, tenant_id, now=now, limit=limit - len(rows))
    return sorted(rows, key=lambda r: r.id)


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


def _tenants(column: str, tenant_ids: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The condition that keeps a batch's statement to the batch's tenants, and its parameter: ``= :t``
    when the batch is one tenant's (a single-shard statement on a sharded database), else ``= ANY(:ts)``
    (one statement for the batch, which Citus sends to those tenants' shards only)."""
    unique = list(dict.fromkeys(tenant_ids))
    if len(unique) == 1:
        return f"{column} = :t", {"t": unique[0]}
    return f"{column} = ANY(:ts)", {"ts": unique}


async def delete_changes(session: AsyncSession, tenant_ids: Sequence[str], ids: Sequence[int]) -> None:
    """Retire applied changes (of these tenants)."""
    where, params = _tenants("tenant_id", tenant_ids)
    await session.execute(
        text(f"DELETE FROM vector_outbox WHERE {where} AND id = ANY(:ids)"), {**params, "ids": list(ids)}
    )


async def reschedule(
    session: AsyncSession,
    *,
    tenant_id: str,
    change_id: int,
    attempts: int,
    error: str,
    retry_at: datetime,
    dead_at: datetime | None,
) -> None:
    """Record a failed attempt: due again at ``retry_at``, or set aside from ``dead_at`` on."""
    await session.execute(
        text(
            "UPDATE vector_outbox SET attempts = :a, last_error = :e, next_attempt_at = :retry, dead_at = :dead "
            "WHERE tenant_id = :t AND id = :id"
        ),
        {"a": attempts, "e": error, "retry": retry_at, "dead": dead_at, "t": tenant_id, "id": change_id},
    )


async def items_to_index(session: AsyncSession, tenant_ids: Sequence[str], item_ids: Sequence[uuid.UUID]) -> list[Any]:
    """The rows of these items (of these tenants) as the vector index needs them (missing ids: the item is
    gone)."""
    where, params = _tenants("tenant_id", tenant_ids)
    sql = f"SELECT id, tenant_id, user_id, type, status, domain, content, embedding FROM context_item WHERE {where} "
    return list((await session.execute(text(sql + "AND id = ANY(:ids)"), {**params, "ids": list(item_ids)})).all())


# The lexical index (item_search) of the items a batch touches: the active ones (re)indexed, the others
# removed. Set-based: one statement each per batch. The conflict target is item_search's key, (item_id,
# tenant_id) since migration 0014: a sharded database's unique keys include its distribution column; the
# delete's NOT EXISTS matches the item on both, a join inside one shard there. A re-indexed row takes the
# proposed row's seq (its column default: a new number, lexicon.py) and its item's expires_at.
_SEARCH_UPSERT = (
    "INSERT INTO item_search (item_id, tenant_id, user_id, tsv, expires_at) "
    "SELECT id, tenant_id, user_id, ctxmem_tsv(content), expires_at FROM context_item "
    "WHERE {tenants} AND id = ANY(:ids) AND status = ANY(:active) "
    "ON CONFLICT (item_id, tenant_id) DO UPDATE SET tsv = EXCLUDED.tsv, expires_at = EXCLUDED.expires_at, "
    "seq = EXCLUDED.seq"
)
_SEARCH_DELETE = (
    "DELETE FROM item_search s WHERE {tenants} AND s.item_id = ANY(:ids) AND NOT EXISTS "
    "(SELECT 1 FROM context_item c WHERE c.tenant_id = s.tenant_id AND c.id = s.item_id AND c.status = ANY(:active))"
)


async def sync_search(session: AsyncSession, tenant_ids: Sequence[str], item_ids: Sequence[uuid.UUID]) -> None:
    """``item_search`` for these items (of these tenants): the active ones (re)indexed, the others removed."""
    if not item_ids:
        return
    where, params = _tenants("tenant_id", tenant_ids)
    params |= {"ids": list(item_ids), "active": list(ACTIVE_STATUSES)}
    await session.execute(text(_SEARCH_UPSERT.format(tenants=where)), params)
    where, _ = _tenants("s.tenant_id", tenant_ids)
    await session.execute(text(_SEARCH_DELETE.format(tenants=where)), params)


async def erase_search(session: AsyncSession, tenant_id: str, user_id: str) -> None:
    """``item_search`` without any of this user's items."""
    await session.execute(
        text("DELETE FROM item_search WHERE tenant_id = :t AND user_id = :u"), {"t": tenant_id, "u": user_id}
    )
