"""The vector outbox worker: applies the outbox's changes (service/vectors/repository.py) to the vector
index and the lexical index, in order, idempotently, in batches, with retry and backoff."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from scoring.backoff import retry_delay
from service.clock import Clock
from service.db.engine import Database, session_scope
from service.db.locks import SessionLock
from service.db.models import ACTIVE_STATUSES
from service.outage import Outage, is_outage
from service.vectors import repository
from service.vectors.base import Embedder, VectorIndex, VectorPoint
from service.vectors.repository import Lag

log = logging.getLogger("ctxmem.vectors")


class OutboxWorker:
    """Applies outbox rows to the index. Several processes may run one: rows are claimed with SKIP LOCKED."""

    def __init__(
        self,
        db: Database,
        index: VectorIndex | None,
        embedder: Embedder | None,
        *,
        batch_size: int,
        max_backoff: float,
        max_attempts: int = 8,
        clock: Clock | None = None,
    ) -> None:
        """``index`` and ``embedder`` are ``None`` when vector recall is off: the worker then maintains the
        lexical index (``item_search``) alone. A change that fails ``max_attempts`` times on its own
        (while the index and the embedder work) becomes a dead letter."""
        self.db = db
        self.index = index
        self.embedder = embedder
        self.batch_size = batch_size
        self.max_backoff = max_backoff
        self.max_attempts = max_attempts
        # What is due, when a failed change is due again and how far behind the outbox is are read from
        # this clock (never the database's), so a test moves time instead of waiting out a backoff.
        self.clock = clock or Clock()
        self.applied = 0
        self.failures = 0
        self.dead = 0
        self.outage = Outage(log, "vector outbox worker", meanwhile="retrying")

    async def drain_once(self) -> int:
        """Apply one batch of due rows; returns how many were applied (0: none due; -1: nothing could be
        applied and the rows were rescheduled with backoff).

        The lexical index is updated for the whole batch first (SQL in this transaction). Then the vector
        index: the batch at once; if that fails and the index and embedder answer a probe, each change on
        its own, so that one change the embedder rejects (a text too long for a remote model) does not hold
        back the rest. Changes that fail are retried with exponential backoff; one that fails on its own
        ``max_attempts`` times is set aside (``dead_at``: kept, reported, no longer lag; the reindex job
        retries it). When the probe fails too — the index or the embedder is down — the whole batch waits
        and nothing is set aside."""
        async with session_scope(self.db) as session:
            now = self.clock.now()
            rows = await repository.claim_due(session, now=now, limit=self.batch_size)
            if rows:
                rows = await self._without_erasing(session, rows)
            if not rows:
                return 0
            await self._apply_lexical(session, rows)
            failed: dict[int, BaseException] = {}
            outage = False
            try:
                await self._apply_index(session, rows)
            except Exception as exc:
                if not await self._healthy():
                    outage = True
                    failed = {r.id: exc for r in rows}
                elif len(rows) == 1:
                    failed = {rows[0].id: exc}
                else:
                    for r in rows:
                        try:
                            await self._apply_index(session, [r])
                        except Exception as one:
                            failed[r.id] = one
            done = [r for r in rows if r.id not in failed]
            if done:
                await repository.delete_changes(session, [r.tenant_id for r in done], [r.id for r in done])
                self.applied += len(done)
            for r in rows:
                if r.id in failed:
                    await self._reschedule(session, r, failed[r.id], counts=not outage, now=now)
            if failed:
                self.failures += 1
            return len(done) if done else -1

    async def _without_erasing(self, session: AsyncSession, rows: Sequence[Any]) -> list[Any]:
        """The rows of users not being erased, whose user locks are now held shared for this batch."""
        erasing = await repository.lock_users_shared(session, ((r.tenant_id, r.user_id) for r in rows))
        return [r for r in rows if (r.tenant_id, r.user_id) not in erasing]

    async def maintain(self) -> None:
        """The index's background upkeep (an HNSW build for a large user, in another process), asked for
        when the worker has caught up — so a bulk import is built once, after it — and never on a
        request's path."""
        if self.index is not None:
            with contextlib.suppress(Exception):
                await self.index.maintain()

    async def _reschedule(
        self, session: AsyncSession, row: Any, exc: BaseException, *, counts: bool, now: datetime
    ) -> None:
        attempts = row.attempts + 1
        dead = counts and attempts >= self.max_attempts
        delay = retry_delay(attempts, max_seconds=self.max_backoff)
        error = f"{type(exc).__name__}: {exc}"[:2000]
        if dead:
            self.dead += 1
            log.error("vector outbox change %d (%s %s) set aside after %d attempts: %s", row.id, row.op,
                      row.item_id, attempts, error)  # fmt: skip
        else:
            log.warning("vector outbox change %d failed (attempt %d, retry in %.1fs): %s", row.id, attempts, delay,
                        error)  # fmt: skip
        await repository.reschedule(
            session,
            tenant_id=row.tenant_id,
            change_id=row.id,
            attempts=attempts,
            error=error,
            retry_at=now + timedelta(seconds=delay),
            dead_at=now if dead else None,
        )

    async def _healthy(self) -> bool:
        """Whether the embedder and the index answer at all (a failure is then the change's own)."""
        if self.index is None or self.embedder is None:
            return True
        try:
            await self.embedder.embed(["ctxmem outbox probe"])
            await self.index.count(tenant_id="\x00probe", user_id="\x00probe")
        except Exception:
            return False
        return True

    async def _apply_lexical(self, session: AsyncSession, rows: Sequence[Any]) -> None:
        """item_search for these changes: active items (re)indexed, the others removed; erased users' rows
        removed."""
        for r in rows:
            if r.op == "delete_user":
                await repository.erase_search(session, r.tenant_id, r.user_id)
        syncs = [r for r in rows if r.op == "sync"]
        await repository.sync_search(
            session, [r.tenant_id for r in syncs], list(dict.fromkeys(r.item_id for r in syncs))
        )

    async def _apply_index(self, session: AsyncSession, rows: Sequence[Any]) -> None:
        """The vector index for these changes. Erasures first: a sync listed before an erasure finds its row
        gone and deletes the point anyway, and one listed after it (a new item of a reused user id) is
        upserted after the erasure."""
        if self.index is None or self.embedder is None:
            return
        for r in rows:
            if r.op == "delete_user":
                await self.index.delete_user(r.tenant_id, r.user_id)
        syncs = [r for r in rows if r.op == "sync"]
        item_ids = list(dict.fromkeys(r.item_id for r in syncs))
        if not item_ids:
            return
        items = await repository.items_to_index(session, [r.tenant_id for r in syncs], item_ids)
        live = [i for i in items if i.status in ACTIVE_STATUSES]
        gone = set(item_ids) - {i.id for i in live}
        missing = [i for i in live if i.embedding is None]
        vectors = await self.embedder.embed([i.content for i in missing]) if missing else []
        computed = {i.id: v for i, v in zip(missing, vectors, strict=True)}
        points = [
            VectorPoint(
                id=i.id,
                vector=list(i.embedding) if i.embedding is not None else computed[i.id],
                payload={
                    "tenant_id": i.tenant_id,
                    "user_id": i.user_id,
                    "type": i.type,
                    "status": i.status,
                    "domain": i.domain,
                },
            )
            for i in live
        ]
        if points:
            await self.index.upsert(points)
        if gone:
            await self.index.delete(sorted(gone))

    async def drain(self, *, max_rounds: int | None = None, settle: bool = True) -> int:
        """Apply everything due now (the reindex job, tests); stops at the first failing batch. Then, unless
        ``settle`` is false, waits for the index upkeep the batches started (an HNSW build of a large
        user's points, in another process), so that the index is left as it will serve."""
        total = 0
        rounds = 0
        while max_rounds is None or rounds < max_rounds:
            n = await self.drain_once()
            rounds += 1
            if n <= 0:
                break
            total += n
        await self.maintain()
        if settle and self.index is not None:
            await self.index.settle()
        return total

    async def run(
        self,
        stop: asyncio.Event,
        *,
        poll: float,
        on_lag: Callable[[Lag], None] | None = None,
        leader: SessionLock | None = None,
    ) -> None:
        """The background loop of the API process; ``on_lag`` receives the lag about once a second.

        With ``leader`` (an advisory lock every API process on the database tries), only the process that
        holds it applies the outbox: the others report the lag and try for the lock about once a second, so
        when the holder dies (PostgreSQL frees its lock with its session) another takes over within ~1 s."""
        last_report = 0.0
        last_check = 0.0
        try:
            while not stop.is_set():
                if time.monotonic() - last_report >= 1.0:
                    last_report = time.monotonic()
                    if on_lag is not None:
                        with contextlib.suppress(Exception):
                            async with session_scope(self.db) as session:
                                on_lag(await repository.lag(session, now=self.clock.now()))
                if leader is not None and (not leader.held or time.monotonic() - last_check >= 1.0):
                    last_check = time.monotonic()
                    if not await self._lead(leader):
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(stop.wait(), timeout=1.0)
                        continue
                try:
                    n = await self.drain_once()
                    self.outage.recovered()
                except Exception as exc:  # the database itself is unreachable: wait and try again
                    if is_outage(exc):
                        self.outage.failed(exc)  # one line per outage, not a traceback per poll
                    else:
                        log.exception("vector outbox worker error")
                    n = -1
                if n > 0:
                    continue
                if n == 0:  # caught up
                    await self.maintain()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=poll if n == 0 else poll * 5)
        finally:
            if leader is not None:
                await leader.release()

    async def _lead(self, leader: SessionLock) -> bool:
        """Whether this process (still) holds the outbox's lock, taking it if it is free."""
        try:
            if leader.held:
                if await leader.check():
                    return True
                log.warning("vector outbox worker: lost the leader lock (its connection ended); trying again")
            if await leader.acquire():
                log.info("vector outbox worker: this process (pid %d) applies the outbox", os.getpid())
                return True
        except Exception as exc:
            if is_outage(exc):
                self.outage.failed(exc)
            else:
                log.exception("vector outbox worker: the leader lock failed")
        return False
