"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

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

    broken = settings.replace(database_url="postgresql://nobody@127.0.0.1:1/none")
    db = create_database(broken.database.url, broken)
    app = create_app(broken, database=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        r = await c.get("/readyz")
    await db.dispose()
    assert r.status_code == 503
    assert r.json()["status"] == "not-ready"
    assert r.json()["checks"]["database"].startswith("unreachable")


def samples(exposition: str, name: str, *labels: str) -> dict[tuple[str, ...], float]:
    """The values of the sample ``name`` by the given labels, from a /metrics exposition."""
    return {
        tuple(s.labels[label] for label in labels): s.value
        for family in text_string_to_metric_families(exposition)
        for s in family.samples
        if s.name == name
    }


def moved(before: dict[tuple[str, ...], float], after: dict[tuple[str, ...], float]) -> dict[tuple[str, ...], float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}


async def test_metrics_count_requests_by_route_and_status(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    """The counters move by exactly the requests this test makes (other tests share the app's registry, so
    the check is on the difference, not on the presence of a label)."""
    first = (await client.get("/metrics")).text
    for _ in range(2):
        r = await client.post("/v1/users/m/items", json={"type": "fact", "content": "x"}, headers=tenant.agent)
        assert r.status_code == 201
    assert (await client.get("/v1/users/m/items", headers=tenant.agent)).status_code == 200
    for _ in range(3):
        assert (await client.get("/v1/users/m/items", headers={})).status_code == 401
    r = await client.get("/metrics")
    assert r.status_code == 200
    route = "/v1/users/{user_id}/items"
    requests = ("http_requests_total", "handler", "method", "status")
    assert moved(samples(first, *requests), samples(r.text, *requests)) == {
        (route, "POST", "201"): 2,
        (route, "GET", "200"): 1,
        (route, "GET", "401"): 3,
    }
    timed = ("http_request_duration_seconds_count", "handler", "method")
    assert moved(samples(first, *timed), samples(r.text, *timed)) == {(route, "POST"): 2, (route, "GET"): 4}
