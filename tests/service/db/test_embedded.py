"""service/db/embedded.py: the database a process connects to, and creating it once however many ask."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import asyncpg
import pytest

from service.db.embedded import ensure_database, resolve_database_url
from service.settings import Settings


@pytest.fixture
async def probe_name(server_url: str) -> AsyncIterator[str]:
    name = f"ctxmem_embedded_probe_{secrets.token_hex(4)}"
    yield name
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def databases_named(server_url: str, name: str) -> int:
    conn = await asyncpg.connect(server_url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM pg_database WHERE datname = $1", name))
    finally:
        await conn.close()


async def test_ensure_database_creates_once_and_then_leaves_it(server_url: str, probe_name: str) -> None:
    assert await databases_named(server_url, probe_name) == 0
    await ensure_database(server_url, probe_name)
    await ensure_database(server_url, probe_name)
    assert await databases_named(server_url, probe_name) == 1


async def test_ensure_database_is_safe_when_raced(server_url: str, probe_name: str) -> None:
    await asyncio.gather(*(ensure_database(server_url, probe_name) for _ in range(8)))
    assert await databases_named(server_url, probe_name) == 1


async def test_a_configured_url_is_used_as_is_and_nothing_is_started(settings: Settings) -> None:
    assert not settings.database.embedded
    assert await resolve_database_url(settings) == (settings.database.url, None)
