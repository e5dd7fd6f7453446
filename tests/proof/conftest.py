"""Fixtures of the proof tests: a database of their own and a real ``ctxmem serve`` on loopback.

The live server runs its own outbox worker, so it gets a database of its own (on the session's
PostgreSQL server): the rest of the suite drains the outbox of the shared test database itself and must
not find another process applying it.
"""

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

# No per-key rate limit on the live servers: the fuzzer and the races send thousands of requests with one
# key as fast as the machine allows, and the limiter has tests of its own (tests/service/test_rate_limit.py).
LIVE_ENV = {"CTXMEM_RATE_LIMIT_PER_SECOND": "0"}


@dataclass
class ProofDatabase:
    url: str
    db: Database


async def fresh_database(server_url: str, prefix: str) -> str:
    name = f"{prefix}_{secrets.token_hex(4)}"
    await ensure_database(server_url, name)
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


async def drop_database(server_url: str, url: str) -> None:
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def migrated_database(server_url: str, prefix: str, data_dir: Path) -> AsyncIterator[ProofDatabase]:
    """A fresh, migrated database of its own on the session's server, dropped at the end."""
    url = await fresh_database(server_url, prefix)
    db = create_database(url, Settings(database_url=url, data_dir=data_dir, tokenizer="estimate"))
    await migrate.upgrade(db.engine)
    try:
        yield ProofDatabase(url, db)
    finally:
        await db.dispose()
        await drop_database(server_url, url)


@pytest.fixture(scope="module")
async def proof_db(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ProofDatabase]:
    async with migrated_database(server_url, "ctxmem_proof", tmp_path_factory.mktemp("proof-data")) as proof:
        yield proof


@pytest.fixture(scope="module")
async def live(proof_db: ProofDatabase, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LiveServer]:
    data_dir: Path = tmp_path_factory.mktemp("live")
    server = await asyncio.to_thread(start_server, proof_db.url, data_dir, **LIVE_ENV)
    yield server
    await asyncio.to_thread(server.stop)


@pytest.fixture
async def live_tenant(proof_db: ProofDatabase) -> TenantKeys:
    return await make_tenant(proof_db.db)
