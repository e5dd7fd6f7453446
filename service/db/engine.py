"""The async engine and session factory, and the URL they connect to."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from service.settings import Settings


def async_url(url: str) -> str:
    """Normalise a ``postgresql://`` URL (also libpq's unix-socket form ``?host=/dir``) for asyncpg."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def plain_url(url: str) -> str:
    """The libpq/asyncpg form of a URL, without SQLAlchemy's driver suffix."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def generic_plans_sql(*, local: bool) -> str:
    """The statement that makes prepared statements run on their generic plan (for the transaction when
    ``local``, else for the session) — except where a Citus coordinator serves: Citus plans a statement that
    reads more than one table (a join, a subquery, a union) only once its parameters' values are known, so
    forcing the generic plan of such a statement fails there ("could not create distributed plan"); left to
    PostgreSQL's own choice, the mode picks custom plans, as Citus gives those generic plans a prohibitive cost.
    The server answers, so one statement serves both."""
    scope = "true" if local else "false"
    return (
        "SELECT set_config('plan_cache_mode', CASE WHEN current_setting('citus.version', true) IS NULL "
        f"THEN 'force_generic_plan' ELSE 'auto' END, {scope})"
    )


GENERIC_PLANS_SESSION = generic_plans_sql(local=False)


# A session of a reads pool says so in its ``info``: its statements run on generic plans already and outside
# a transaction (service/windows/repository.py's prefer_generic_plans then sends nothing).
READS = "ctxmem_reads"


@dataclass
class Database:
    """One engine and one session factory for the process; built in the app's lifespan or a CLI command.

    ``reads``: sessions of a second pool for the reads that write nothing (windows and searches,
    service/db/replicas.py's ``Reads``): autocommit — each statement its own snapshot, as in the
    READ COMMITTED transaction it replaces — on connections that run prepared statements on their generic
    plan (``plan_cache_mode`` set when the connection is made: :func:`generic_plans_sql`). Such a read sends
    no ``BEGIN``, ``SET LOCAL`` or ``COMMIT``: three round trips of a window's seven. A replica's Database is
    made of such a pool alone."""

    url: str
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    reads: async_sessionmaker[AsyncSession]
    reads_engine: AsyncEngine
    _embedded: Any = field(default=None, repr=False)

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self.reads_engine is not self.engine:
            await self.reads_engine.dispose()


def _engine(url: str, settings: Settings, *, reads: bool) -> AsyncEngine:
    server_settings = {"application_name": "ctxmem-reads" if reads else "ctxmem"}
    options: dict[str, Any] = {}
    if reads:
        options["isolation_level"] = "AUTOCOMMIT"
    engine = create_async_engine(
        async_url(url),
        pool_size=settings.database.pool_size,
        max_overflow=settings.database.max_overflow,
        pool_pre_ping=False,
        connect_args={"server_settings": server_settings, "timeout": settings.database.connect_timeout_seconds},
        **options,
    )
    if reads:
        event.listen(engine.sync_engine, "connect", _generic_plans)
    return engine


def _generic_plans(dbapi_connection: Any, record: Any) -> None:
    # On the driver's connection itself, outside any transaction SQLAlchemy would begin (and roll back).
    dbapi_connection.run_async(lambda conn: conn.execute(GENERIC_PLANS_SESSION))


def create_database(url: str, settings: Settings, *, embedded: Any = None, reads_only: bool = False) -> Database:
    """The process's engine for ``url`` and, beside it, its pool for reads (``reads_only``: the reads pool
    alone, for a replica). No connection is made until one is used."""
    reads_engine = _engine(url, settings, reads=True)
    engine = reads_engine if reads_only else _engine(url, settings, reads=False)
    factory = async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
    reads = async_sessionmaker(reads_engine, expire_on_commit=False, autoflush=False, info={READS: True})
    if reads_only:
        factory = reads
    return Database(
        url=url, engine=engine, sessionmaker=factory, reads=reads, reads_engine=reads_engine, _embedded=embedded
    )


@contextlib.asynccontextmanager
async def session_scope(db: Database) -> AsyncIterator[AsyncSession]:
    """A unit of work for CLI commands and jobs: commit on success, roll back on error."""
    async with db.sessionmaker() as session:
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise


async def driver_connection(session: AsyncSession) -> Any:
    """The asyncpg connection under the session (inside its transaction), for hot paths where
    SQLAlchemy's statement handling costs more than the query: COPY, the window's reads."""
    conn = await session.connection()
    raw = await conn.get_raw_connection()
    return raw.driver_connection
