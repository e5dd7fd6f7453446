"""Fixtures of the SDK tests: real ``ctxmem serve`` processes on loopback, each on a migrated database of its
own (a live server runs its outbox worker, which must not drain the rest of the suite's database), and
tenants with one key per role. The clients under test talk to them over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from service.db import migrate
from service.db.embedded import ensure_database
from service.db.engine import Database, create_database
from service.settings import Settings
from tests.conftest import TenantKeys, make_tenant
from tests.proof.live import LiveServer, start_server

# The main server has no rate limit (the tests send bursts); the limited one allows one request a second, and
# has extraction off (what an extract call answers then: 409 extraction-off).
UNLIMITED = {"CTXMEM_RATE_LIMIT_PER_SECOND": "0"}
LIMITED = {
    "CTXMEM_RATE_LIMIT_PER_SECOND": "1",
    "CTXMEM_RATE_LIMIT_BURST": "1",
    "CTXMEM_VECTOR_BACKEND": "off",
    "CTXMEM_EXTRACTOR": "off",
}


@dataclass
class Live:
    server: LiveServer
    db: Database

    @property
    def url(self) -> str:
        return self.server.base_url

    async def tenant(self) -> Keys:
        return Keys(await make_tenant(self.db))


@dataclass
class Keys:
    """A tenant's three keys, as the SDK takes them (the secret alone)."""

    raw: TenantKeys

    def _secret(self, headers: dict[str, str]) -> str:
        return headers["Authorization"].removeprefix("Bearer ")

    @property
    def agent(self) -> str:
        return self._secret(self.raw.agent)

    @property
    def operator(self) -> str:
        return self._secret(self.raw.operator)

    @property
    def admin(self) -> str:
        return self._secret(self.raw.admin)


@contextlib.asynccontextmanager
async def live_server(server_url: str, data_dir: Path, env: dict[str, str]) -> AsyncIterator[Live]:
    name = f"ctxmem_sdk_{secrets.token_hex(4)}"
    await ensure_database(server_url, name)
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    db = create_database(url, Settings(database_url=url, data_dir=data_dir, tokenizer="estimate"))
    try:
        await migrate.upgrade(db.engine)
        server = await asyncio.to_thread(start_server, url, data_dir / "serve", **env)
        try:
            yield Live(server, db)
        finally:
            await asyncio.to_thread(server.stop)
    finally:
        await db.dispose()
        conn = await asyncpg.connect(server_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


@pytest.fixture(scope="session")
async def live(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Live]:
    async with live_server(server_url, tmp_path_factory.mktemp("sdk-live"), UNLIMITED) as found:
        yield found


@pytest.fixture(scope="session")
async def limited(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Live]:
    async with live_server(server_url, tmp_path_factory.mktemp("sdk-limited"), LIMITED) as found:
        yield found


@pytest.fixture
async def keys(live: Live) -> Keys:
    return await live.tenant()


@pytest.fixture
async def limited_keys(limited: Live) -> Keys:
    """A fresh tenant on the limited server: its key has a bucket of its own (the limit is per key)."""
    return await limited.tenant()
