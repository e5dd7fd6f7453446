"""service/health/endpoints.py: /healthz never touches the database; /readyz is 200 or 503 with its checks."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from service.app import create_app
from service.db.engine import create_database
from service.settings import Settings


@pytest.fixture
async def broken_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    broken = settings.replace(database_url="postgresql://nobody@127.0.0.1:1/none")
    db = create_database(broken.database.url, broken)
    app = create_app(broken, database=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c
    await db.dispose()


async def test_liveness_holds_while_the_database_is_gone(broken_client: httpx.AsyncClient) -> None:
    r = await broken_client.get("/healthz")
    assert (r.status_code, r.json()) == (200, {"status": "ok"})


async def test_readiness_is_503_not_ready_while_the_database_is_gone(broken_client: httpx.AsyncClient) -> None:
    r = await broken_client.get("/readyz")
    assert r.status_code == 503
    assert set(r.json()) == {"status", "checks"}
    assert r.json()["status"] == "not-ready"


async def test_readiness_is_200_ready_and_needs_no_key(client: httpx.AsyncClient) -> None:
    r = await client.get("/readyz")
    assert r.status_code == 200
    assert r.json()["status"] == "ready"
    assert {"database", "migrations", "vectors", "tokenizer"} <= set(r.json()["checks"])
