"""service/db/engine.py: URL forms, one engine per process with the settings' pool, units of work that
commit or roll back, and the raw driver connection inside the session's transaction."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from service.db.engine import Database, async_url, create_database, driver_connection, plain_url, session_scope
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
