"""Test harness: one real PostgreSQL per test session, migrated once from empty.

``CTXMEM_TEST_DATABASE_URL`` points the suite at an existing server (a fresh database is created on it
and dropped afterwards); otherwise an embedded PostgreSQL is started in a temporary directory.
Tests isolate themselves by tenant: every test gets a tenant of its own (the ``tenant`` fixture), and
since every query filters by tenant, tests cannot see each other's rows. This keeps the real commit
path under test (idempotency, races and erasure depend on committed transactions), which a
rolled-back outer transaction would hide.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import pytest
from sqlalchemy.engine import make_url

from service.app import create_app
from service.auth.service import create_key
from service.clock import Clock
from service.db import migrate
from service.db.embedded import ensure_database, start_embedded
from service.db.engine import Database, create_database, plain_url, session_scope
from service.settings import Settings
from service.vectors.recall import VectorRecall, build_recall


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """A maintenance-database URL of a running PostgreSQL."""
    external = os.environ.get("CTXMEM_TEST_DATABASE_URL", "").strip()
    if external:
        yield plain_url(external)
        return
    tmp = Path(tempfile.mkdtemp(prefix="ctxmem-test-pg-"))
    server = start_embedded(tmp / "pg")
    yield server.get_uri()
    server.cleanup()
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
async def database_url(server_url: str) -> AsyncIterator[str]:
    name = f"ctxmem_test_{secrets.token_hex(4)}"
    await ensure_database(server_url, name)
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    yield url
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def settings(database_url: str, data_dir: Path) -> Settings:
    # No HNSW builds of the session's index (a test of 100,000 items would wait minutes for one); the
    # build is tested on indexes of its own (tests/service/vectors/test_edge_build.py).
    # One worker: the suite's index is the embedded default of one process (the pgvector backend and serve
    # --workers N are tested on their own, tests/service/vectors/ and tests/proof/test_workers.py).
    return Settings(
        database_url=database_url, data_dir=data_dir, tokenizer="o200k_base", vector_build_threshold=0, workers=1
    )


@pytest.fixture(scope="session")
async def db(settings: Settings) -> AsyncIterator[Database]:
    database = create_database(settings.database.url, settings)
    await migrate.upgrade(database.engine)
    yield database
    await database.dispose()


@pytest.fixture(scope="session")
async def vectors(db: Database, settings: Settings) -> AsyncIterator[VectorRecall]:
    """The default vector stack (embedded Qdrant Edge + hashing embedder) under the session data dir.
    No background worker runs in tests: a test drains the outbox when it wants the index up to date."""
    recall = await build_recall(db, settings)
    assert recall is not None
    yield recall
    await recall.index.close()
    await recall.embedder.close()


@pytest.fixture(scope="session")
def app(settings: Settings, db: Database, vectors: VectorRecall):  # type: ignore[no-untyped-def]
    return create_app(settings, database=db, vectors=vectors)


@pytest.fixture
async def client(app) -> AsyncIterator[httpx.AsyncClient]:  # type: ignore[no-untyped-def]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://ctxmem.test") as c:
        yield c


@dataclass
class TenantKeys:
    tenant_id: str
    agent: dict[str, str]
    operator: dict[str, str]
    admin: dict[str, str]


async def make_tenant(db: Database) -> TenantKeys:
    tenant_id = f"t-{secrets.token_hex(6)}"
    headers: dict[str, dict[str, str]] = {}
    async with session_scope(db) as session:
        for role in ("agent", "operator", "admin"):
            issued = await create_key(
                session, tenant_id=tenant_id, role=role, name=None, now=Clock().now(), actor="test"
            )
            headers[role] = {"Authorization": f"Bearer {issued.secret}"}
    return TenantKeys(tenant_id, headers["agent"], headers["operator"], headers["admin"])


@pytest.fixture
async def tenant(db: Database) -> TenantKeys:
    return await make_tenant(db)


@pytest.fixture
async def other_tenant(db: Database) -> TenantKeys:
    return await make_tenant(db)
