"""The async engine and session factory, and the URL they connect to."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

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


@dataclass
class Database:
    """One engine and one session factory for the process; built in the app's lifespan or a CLI command."""

    url: str
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    _embedded: Any = field(default=None, repr=False)

    async def dispose(self) -> None:
        await self.engine.dispose()


def create_database(url: str, settings: Settings, *, embedded: Any = None) -> Database:
    engine = create_async_engine(
        async_url(url),
        pool_size=settings.database.pool_size,
        max_overflow=settings.database.max_overflow,
        pool_pre_ping=False,
        connect_args={
            "server_settings": {"application_name": "ctxmem"},
            "timeout": settings.database.connect_timeout_seconds,
        },
    )
    factory = async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
    return Database(url=url, engine=engine, sessionmaker=factory, _embedded=embedded)


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
