"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import secrets

import httpx
from prometheus_client.parser import text_string_to_metric_families

from service.app import create_app
from service.db.engine import create_database
from service.settings import Settings
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


async def get_while_database_down(settings: Settings, path: str) -> httpx.Response:
    """GET ``path`` from an app whose database cannot be reached."""
    broken = settings.replace(database_url="postgresql://nobody@127.0.0.1:1/none")
    db = create_database(broken.database.url, broken)
    app = create_app(broken, database=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        r = await c.get(path)
    await db.dispose()
    return r


async def test_readyz_not_ready_when_database_unreachable(settings: Settings) -> None:
    r = await get_while_database_down(settings, "/readyz")
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


async def test_metrics_name_unmatched_paths_none_and_wrong_methods_by_their_route(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    """A path no route serves is ``none`` (never its raw path: that would make a series per address), a
    method the route refuses is counted under the route it matched, /metrics itself not at all, and the body
    sizes are the bodies' Content-Length."""
    first = (await client.get("/metrics")).text
    assert (await client.get(f"/v1/no-such-route/{secrets.token_hex(4)}", headers=tenant.agent)).status_code == 404
    assert (await client.delete("/v1/users/m/items/batch", headers=tenant.agent)).status_code == 405
    r = await client.post("/v1/users/m/items", json={"type": "fact", "content": "sized"}, headers=tenant.agent)
    assert r.status_code == 201
    sent, got = len(r.request.content), len(r.content)
    after = (await client.get("/metrics")).text
    requests = ("http_requests_total", "handler", "method", "status")
    assert moved(samples(first, *requests), samples(after, *requests)) == {
        ("none", "GET", "404"): 1,
        ("/v1/users/{user_id}/items/batch", "DELETE", "405"): 1,
        ("/v1/users/{user_id}/items", "POST", "201"): 1,
    }
    route = ("/v1/users/{user_id}/items",)
    for name, size in (("http_request_size_bytes_sum", sent), ("http_response_size_bytes_sum", got)):
        assert moved(samples(first, name, "handler"), samples(after, name, "handler")).get(route) == size
    fine = samples(after, "http_request_duration_highr_seconds_count")[()] - samples(
        first, "http_request_duration_highr_seconds_count"
    ).get((), 0.0)
    assert fine == 3


async def test_window_metrics_describe_the_windows_served(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    """Each window moves the context-management series by what it did: its mode, how full it is, what it
    kept whole or compressed or left out, whether its session's prefix was the previous window's, and how
    many of the items the query found reached it."""
    user = f"metrics-{tenant.tenant_id}"
    items = [
        {"type": "fact", "content": f"Note {i} about the orders replica lag and nightly batch sizes."}
        for i in range(30)
    ]
    items.append({"type": "constraint", "content": "Never restart the primary during business hours."})
    r = await client.post(f"/v1/users/{user}/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code in (200, 201), r.text
    first = (await client.get("/metrics")).text
    ask = {"input": "How bad is the orders replica lag?", "session_id": "s-1"}
    for body in ({**ask, "max_tokens": 4000}, {**ask, "max_tokens": 4000}, {**ask, "max_tokens": 150}):
        r = await client.post(f"/v1/users/{user}/window", json=body, headers=tenant.agent)
        assert r.status_code == 200, r.text
    small = r.json()
    after = (await client.get("/metrics")).text

    modes = moved(samples(first, "ctxmem_windows_total", "mode"), samples(after, "ctxmem_windows_total", "mode"))
    assert sum(modes.values()) == 3 and modes[(small["mode"],)] >= 1
    assert moved(
        samples(first, "ctxmem_window_prefix_total", "outcome"), samples(after, "ctxmem_window_prefix_total", "outcome")
    ) == {("first",): 1, ("reused",): 2}  # the rules section is the same in all three
    for ratio in ("ctxmem_window_utilisation_ratio_count", "ctxmem_window_pinned_share_ratio_count"):
        assert moved(samples(first, ratio), samples(after, ratio)) == {(): 3}
    outcomes = moved(
        samples(first, "ctxmem_window_items_total", "outcome"), samples(after, "ctxmem_window_items_total", "outcome")
    )
    placed = [p for s in small["sections"] for p in s["items"] if not p["id"].startswith("request:")]
    left_out = small["omitted_summary"]["count"]
    assert outcomes[("omitted",)] == left_out > 0  # the 150-token window left notes out
    assert outcomes[("whole",)] >= 2 * 31  # the generous windows kept every item whole
    assert sum(outcomes.values()) == 2 * 31 + len(placed) + left_out
    coverage = ("ctxmem_window_recall_coverage_ratio_count",)
    assert moved(samples(first, *coverage), samples(after, *coverage)) == {(): 3}
    full = ("ctxmem_window_recall_coverage_ratio_bucket", "le")
    assert moved(samples(first, *full), samples(after, *full)).get(("0.9",), 0) == 1  # only the small one missed


async def test_job_gauges_show_each_jobs_latest_run(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post("/v1/jobs/expire/run", json={}, headers=tenant.admin)
    assert r.status_code == 200, r.text
    run = r.json()
    text = (await client.get("/metrics")).text
    assert samples(text, "ctxmem_job_last_failed", "job")[("expire",)] == 0.0
    assert samples(text, "ctxmem_job_last_duration_seconds", "job")[("expire",)] >= 0.0
    finished = samples(text, "ctxmem_job_last_finished_timestamp_seconds", "job")[("expire",)]
    assert finished > 0 and run["status"] == "succeeded"


async def test_metrics_answer_while_the_database_is_down(settings: Settings) -> None:
    r = await get_while_database_down(settings, "/metrics")
    assert r.status_code == 200
    assert "ctxmem_job_last_failed" in r.text  # described, with no samples yet
