"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import httpx

from tests.conftest import TenantKeys


async def test_healthz(client: httpx.AsyncClient) -> None:
    r = await client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


async def test_readyz_reports_database_and_migrations(client: httpx.AsyncClient) -> None:
    r = await client.get("/readyz")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ready"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["migrations"]["database"] == body["checks"]["migrations"]["code_head"]
    assert body["checks"]["tokenizer"] == {"name": "o200k_base", "exact": True}


async def test_readyz_not_ready_when_database_unreachable(settings) -> None:  # type: ignore[no-untyped-def]
    from service.app import create_app
    from service.db.engine import create_database

    broken = settings.model_copy(update={"database_url": "postgresql://nobody@127.0.0.1:1/none"})
    db = create_database(broken.database_url, broken)
    app = create_app(broken, database=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        r = await c.get("/readyz")
    await db.dispose()
    assert r.status_code == 503
    assert r.json()["status"] == "not-ready"
    assert r.json()["checks"]["database"].startswith("unreachable")


async def test_metrics_count_requests_by_route_and_status(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await client.post("/v1/users/m/items", json={"type": "fact", "content": "x"}, headers=tenant.agent)
    await client.get("/v1/users/m/items", headers=tenant.agent)
    await client.get("/v1/users/m/items", headers={})
    r = await client.get("/metrics")
    assert r.status_code == 200
    text = r.text
    assert 'handler="/v1/users/{user_id}/items"' in text
    assert 'status="201"' in text and 'status="401"' in text
    assert "http_request_duration_seconds_bucket" in text
