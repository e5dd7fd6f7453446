"""service/db/engine.py: URL forms, one engine per process with the settings' pool, units of work that
commit or roll back, and the raw driver connection inside the session's transaction."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from service.db.engine import (
    READS,
    Database,
    async_url,
    create_database,
    driver_connection,
    plain_url,
    session_scope,
)
from service.settings import Settings


@pytest.mark.parametrize(
    ("url", "asyncpg_form", "libpq_form"),
    [
        ("postgresql://u:p@h:5432/d", "postgresql+asyncpg://u:p@h:5432/d", "postgresql://u:p@h:5432/d"),
        ("postgresql+asyncpg://u@h/d", "postgresql+asyncpg://u@h/d", "postgresql://u@h/d"),
        (
            "postgresql://u@/d?host=/run/pg",
            "postgresql+asyncpg://u@/d?host=%2Frun%2Fpg",
            "postgresql://u@/d?host=%2Frun%2Fpg",
        ),
        ("postgresql://u:s%40cret@h/d", "postgresql+asyncpg://u:s%40cret@h/d", "postgresql://u:s%40cret@h/d"),
    ],
)
def test_url_forms_keep_everything_but_the_driver(url: str, asyncpg_form: str, libpq_form: str) -> None:
    assert async_url(url) == asyncpg_form
    assert plain_url(url) == libpq_form
    assert plain_url(async_url(url)) == plain_url(url)


async def test_the_engine_has_the_settings_pool_and_names_itself(settings: Settings) -> None:
    tuned = settings.replace(db_pool_size=3, db_max_overflow=1)
    database = create_database(settings.database.url, tuned)
    try:
        assert database.engine.pool.size() == 3  # type: ignore[attr-defined]
        async with database.engine.connect() as conn:
            assert (await conn.execute(text("SHOW application_name"))).scalar_one() == "ctxmem"
        async with database.sessionmaker() as session:
            assert session.sync_session.expire_on_commit is False
    finally:
        await database.dispose()


async def test_the_reads_pool_runs_generic_plans_outside_a_transaction(settings: Settings) -> None:
    """``Database.reads``: its own connections (named ``ctxmem-reads``), generic plans set when each is made,
    autocommit — so a read there sends no BEGIN, SET LOCAL or COMMIT — while the main pool keeps PostgreSQL's
    defaults and its transactions. A replica's Database is the reads pool alone."""
    database = create_database(settings.database.url, settings)
    replica = create_database(settings.database.url, settings, reads_only=True)
    try:
        async with database.reads() as session:
            driver = await driver_connection(session)
            assert await driver.fetchval("SHOW plan_cache_mode") == "force_generic_plan"
            assert await driver.fetchval("SHOW application_name") == "ctxmem-reads"
            assert not driver.is_in_transaction()
            assert session.info[READS] is True
        async with database.sessionmaker() as session:
            driver = await driver_connection(session)
            assert await driver.fetchval("SHOW plan_cache_mode") == "auto"
            await session.execute(text("SELECT 1"))
            assert driver.is_in_transaction()  # the session's transaction, once it has run something
            assert READS not in session.info
        async with replica.sessionmaker() as session:
            driver = await driver_connection(session)
            assert await driver.fetchval("SHOW plan_cache_mode") == "force_generic_plan"
            assert not driver.is_in_transaction()
    finally:
        await database.dispose()
        await replica.dispose()


@pytest.fixture
async def scratch(db: Database) -> AsyncIterator[str]:
    name = f"engine_probe_{secrets.token_hex(4)}"
    async with db.engine.begin() as conn:
        await conn.execute(text(f"CREATE TABLE {name} (v int)"))
    yield name
    async with db.engine.begin() as conn:
        await conn.execute(text(f"DROP TABLE {name}"))


async def rows(db: Database, table: str) -> list[int]:
    async with db.engine.connect() as conn:
        return [r[0] for r in await conn.execute(text(f"SELECT v FROM {table} ORDER BY v"))]


async def test_session_scope_commits_on_success_and_rolls_back_on_error(db: Database, scratch: str) -> None:
    async with session_scope(db) as session:
        await session.execute(text(f"INSERT INTO {scratch} VALUES (1)"))
    assert await rows(db, scratch) == [1]

    class Boom(Exception):
        pass

    async def fail_midway() -> None:
        async with session_scope(db) as session:
            await session.execute(text(f"INSERT INTO {scratch} VALUES (2)"))
            raise Boom

    with pytest.raises(Boom):
        await fail_midway()
    assert await rows(db, scratch) == [1]


async def test_the_driver_connection_is_inside_the_session_transaction(db: Database, scratch: str) -> None:
    async with db.sessionmaker() as session:
        await session.execute(text(f"INSERT INTO {scratch} VALUES (7)"))
        driver = await driver_connection(session)
        assert await driver.fetchval(f"SELECT count(*) FROM {scratch}") == 1  # sees the uncommitted row
        assert driver.is_in_transaction()
        await session.rollback()
    assert await rows(db, scratch) == []
