"""Reads from PostgreSQL streaming replicas (``CTXMEM_DATABASE_REPLICA_URLS``), with read-your-writes.

A window or search that writes nothing may be served by a replica. Which one, and whether at all, is
decided per request by one statement on the replica (``_CHECK_SQL``):

- it must be a standby (``pg_is_in_recovery()``) that has replayed the commit position the read needs
  (``pg_last_wal_replay_lsn() >= needed``; service/db/positions.py says where ``needed`` comes from);
- and be at most ``replica_max_lag_seconds`` behind the primary: 0 when it has replayed all it received
  and its WAL receiver runs, else the age of the last transaction it replayed (which over-states the lag
  of a replica that had been idle: such a read goes to the primary, never to a stale replica).

A replica that is behind is asked again (1, 2, 4 … 10 ms apart) until ``replica_wait_seconds`` have
passed; then the primary serves the read. A replica that fails (refuses connections, errors, cancels a
query in a recovery conflict) is skipped for ``RETRY_SECONDS`` and the read runs again on the primary, so
a replica never turns a read into an error. The response says which served it (``X-Ctxmem-Read-Source``)
and ``ctxmem_replica_reads_total{outcome}`` counts the outcomes.

The reads run on the replica's own session, then the check's: each statement's snapshot is taken after the
check, and replay only moves forward, so every statement sees at least the needed position. The window
cache (service/windows/cache.py) stays correct: a replica's rows have the primary's ``xmin`` (physical
replication copies them), so ``window_version`` computes the same versions from either, and an entry is
used only when the version read now, on the server serving this read, equals the entry's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import asyncpg
from prometheus_client import CollectorRegistry, Counter, Histogram
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from service.context import RequestContext
from service.db.engine import Database, create_database, driver_connection
from service.db.positions import format_lsn
from service.outage import reason
from service.settings import Settings

log = logging.getLogger("ctxmem.db")

T = TypeVar("T")

# A replica that failed is not asked again for this long (seconds): a replica that is down costs one
# failed connection attempt per this interval, not one per request.
RETRY_SECONDS = 5.0
# Between two checks of a replica that is behind: from the first to the largest (seconds), doubling.
FIRST_POLL_SECONDS = 0.001
MAX_POLL_SECONDS = 0.01

_CHECK_SQL = """
SELECT pg_is_in_recovery() AS standby,
       coalesce(pg_last_wal_replay_lsn() >= $1::text::pg_lsn, false) AS caught_up,
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() AND EXISTS (SELECT FROM pg_stat_wal_receiver)
            THEN 0::float8
            ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8, 'Infinity')
       END AS lag
"""

# What a replica's failure looks like: it cannot be reached, or a statement failed there (a recovery
# conflict cancels queries on a standby). Anything else (a ServiceError) is the request's own outcome.
REPLICA_ERRORS: tuple[type[BaseException], ...] = (
    sa_exc.SQLAlchemyError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    OSError,
    TimeoutError,
)


class ReplicaMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.reads = Counter(
            "ctxmem_replica_reads",
            "Window and search reads by where they were served: replica, or the primary because every "
            "replica was behind the read's commit position (behind), further behind than the lag limit "
            "(lagging) or failing (failed)",
            ["outcome"],
            registry=registry,
        )
        self.choice = Histogram(
            "ctxmem_replica_choice_seconds",
            "Time spent choosing a replica for a read (its check, and waiting for it to catch up)",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
            registry=registry,
        )
        for outcome in ("replica", "behind", "lagging", "failed"):
            self.reads.labels(outcome)


@dataclass
class Replica:
    name: str  # host:port, for logs
    db: Database
    down_until: float = 0.0
    failing: bool = False

    def failed(self, exc: BaseException) -> None:
        self.down_until = time.monotonic() + RETRY_SECONDS
        if not self.failing:
            log.warning("replica %s failed, reads go to the primary: %s", self.name, reason(exc))
        self.failing = True

    def answered(self) -> None:
        if self.failing:
            log.warning("replica %s answers again", self.name)
        self.failing = False


@dataclass
class _Probe:
    replica: Replica
    session: AsyncSession
    caught_up: bool = False
    lag: float = float("inf")


@dataclass
class Replicas:
    """The process's replicas (engines built in the app's lifespan), tried in turn."""

    replicas: list[Replica]
    settings: Settings
    metrics: ReplicaMetrics | None = None
    _next: int = field(default=0, repr=False)

    async def dispose(self) -> None:
        for r in self.replicas:
            await r.db.dispose()

    async def read(
        self,
        ctx: RequestContext,
        *,
        needed: int,
        work: Callable[[RequestContext], Awaitable[T]],
        primary: Callable[[RequestContext], Awaitable[T]] | None = None,
    ) -> tuple[T, str]:
        """``work`` run on a replica that has replayed ``needed``, else ``primary`` (default: ``work`` on ``ctx``,
        the primary), with where it ran: ``replica`` or ``primary; fallback=behind|lagging|failed``."""
        started = time.monotonic()
        chosen, outcome = await self._choose(needed)
        if self.metrics is not None:
            self.metrics.choice.observe(time.monotonic() - started)
        if chosen is not None:
            try:
                async with chosen.session:
                    result = await work(dataclasses.replace(ctx, session=chosen.session))
                self._count("replica")
                return result, "replica"
            except REPLICA_ERRORS as exc:
                chosen.replica.failed(exc)
                outcome = "failed"
        self._count(outcome)
        return await (primary or work)(ctx), f"primary; fallback={outcome}"

    def _count(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.reads.labels(outcome).inc()

    def _in_turn(self) -> list[Replica]:
        now = time.monotonic()
        n = len(self.replicas)
        start, self._next = self._next, (self._next + 1) % max(n, 1)
        ordered = [self.replicas[(start + i) % n] for i in range(n)]
        return [r for r in ordered if r.down_until <= now]

    async def _choose(self, needed: int) -> tuple[_Probe | None, str]:
        """An open session on a replica fit to serve the read, or None and why not."""
        db_settings = self.settings.database
        deadline = time.monotonic() + db_settings.replica_wait_seconds
        position = format_lsn(needed)
        probes: list[_Probe] = []
        chosen: _Probe | None = None
        try:
            for replica in self._in_turn():
                probe = _Probe(replica, replica.db.sessionmaker())
                if await self._check(probe, position):
                    probes.append(probe)
            pause = FIRST_POLL_SECONDS
            while probes:
                fit = [p for p in probes if p.caught_up and p.lag <= db_settings.replica_max_lag_seconds]
                if fit:
                    chosen = fit[0]
                    break
                if time.monotonic() + pause > deadline:
                    break
                await asyncio.sleep(pause)
                pause = min(pause * 2, MAX_POLL_SECONDS)
                probes = [p for p in probes if await self._check(p, position)]
        except BaseException:  # the request was cancelled meanwhile: give the connections back
            for p in probes:
                await _close_quietly(p.session)
            raise
        outcome = "failed"
        if chosen is None and probes:
            outcome = "behind" if not any(p.caught_up for p in probes) else "lagging"
        for p in probes:
            if p is not chosen:
                await p.session.close()
        return chosen, outcome

    async def _check(self, probe: _Probe, position: str) -> bool:
        """Ask the replica where it is; False (and its session closed) when it failed or is no standby."""
        try:
            driver = await driver_connection(probe.session)
            row: Any = await driver.fetchrow(_CHECK_SQL, position)
        except REPLICA_ERRORS as exc:
            probe.replica.failed(exc)
            await _close_quietly(probe.session)
            return False
        except BaseException:  # cancelled while asking
            await _close_quietly(probe.session)
            raise
        if not row["standby"]:
            probe.replica.failed(RuntimeError("it is not a standby (promoted, or a primary's URL)"))
            await _close_quietly(probe.session)
            return False
        probe.replica.answered()
        probe.caught_up, probe.lag = bool(row["caught_up"]), float(row["lag"])
        return True


async def _close_quietly(session: AsyncSession) -> None:
    with contextlib.suppress(*REPLICA_ERRORS):  # the connection is broken already: the pool discards it
        await session.close()


def build_replicas(settings: Settings, metrics: ReplicaMetrics | None = None) -> Replicas | None:
    """One engine per replica URL, with the primary's pool settings; None when there are none."""
    urls = settings.database.replica_urls
    if not urls:
        return None
    replicas = []
    for url in urls:
        parsed = make_url(url)
        name = f"{parsed.host or parsed.query.get('host') or 'local'}:{parsed.port or 5432}"
        replicas.append(Replica(name, create_database(url, settings, reads_only=True)))
    return Replicas(replicas, settings, metrics)


@dataclass(frozen=True)
class Reads:
    """Where one request's read may be served: ``replicas`` (None: none configured, the primary), the commit
    position it must see, the request's state, which gets the ``read_source`` its response names, and the
    primary's ``Database``, whose reads pool serves it on the primary (None: on the request's own session)."""

    replicas: Replicas | None
    needed: int = 0
    state: Any = None
    primary: Database | None = None

    async def run(self, ctx: RequestContext, work: Callable[[RequestContext], Awaitable[T]]) -> T:
        """``work`` on a fit replica, else on the primary: a session of its reads pool (``Database.reads``).
        The read writes nothing and needs nothing uncommitted of the request's own transaction."""

        async def on_primary_reads(c: RequestContext) -> T:
            if self.primary is None:
                return await work(c)
            async with self.primary.reads() as session:
                return await work(dataclasses.replace(c, session=session))

        if self.replicas is None:
            return await on_primary_reads(ctx)
        result, source = await self.replicas.read(ctx, needed=self.needed, work=work, primary=on_primary_reads)
        self._served(source)
        return result

    async def on_primary(self, ctx: RequestContext, work: Callable[[RequestContext], Awaitable[T]]) -> T:
        """``work`` on the primary, as a read that may write must run."""
        if self.replicas is not None:
            self._served("primary")
        return await work(ctx)

    def _served(self, source: str) -> None:
        if self.state is not None:
            self.state.read_source = source
