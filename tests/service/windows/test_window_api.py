"""POST /v1/users/{u}/window through HTTP on a real PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import TenantKeys

W = "/v1/users/w/window"
ITEMS = "/v1/users/w/items"


async def seed(client: httpx.AsyncClient, tenant: TenantKeys, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    r = await client.post(ITEMS + "/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return list(r.json()["items"])


async def window(client: httpx.AsyncClient, tenant: TenantKeys, **body: Any) -> httpx.Response:
    body.setdefault("input", "Which cache should we use?")
    return await client.post(W, json=body, headers=tenant.agent)


async def test_full_mode_has_every_section_in_order(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await client.post(
        ITEMS, json={"type": "rule", "content": "Never share credentials.", "source": "system"}, headers=tenant.admin
    )
    await seed(
        client,
        tenant,
        [
            {"type": "constraint", "content": "Don't recommend Redis Cluster.", "hard": True, "source": "user"},
            {"type": "fact", "content": "The ops team is small (2 people).", "source": "user"},
            {"type": "decision", "content": "We use PostgreSQL 17.", "source": "user"},
            {"type": "tool_result", "content": '{"qps": 50000, "p99_ms": 12}', "source": "tool"},
            {"type": "episode", "content": "Last week we compared Memcached and Redis.", "source": "summary"},
        ],
    )
    r = await window(client, tenant, max_tokens=4000, goal="Pick a cache", plan="1. list options 2. compare")
    assert r.status_code == 200, r.text
    w = r.json()
    assert w["mode"] == "full"
    ids = [s["id"] for s in w["sections"]]
    assert ids == ["rules", "goal", "constraints", "plan", "facts", "tool_results", "background", "input"]
    text = w["text"]
    for fragment in (
        "Never share credentials.",
        "Don't recommend Redis Cluster.",
        "Pick a cache",
        "We use PostgreSQL 17.",
    ):
        assert fragment in text
    assert text.rstrip().endswith("Which cache should we use?")
    assert w["tokens"]["used"] <= 4000
    assert text.startswith("## Rules\n")
    assert w["prefix_tokens"] > 0


async def test_budget_too_small_is_422_with_required(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(client, tenant, [{"type": "constraint", "content": "x " * 300, "hard": True, "source": "user"}])
    r = await window(client, tenant, max_tokens=50)
    assert r.status_code == 422
    assert r.json()["type"] == "urn:ctxmem:problem:budget-too-small"
    assert r.json()["required"] > 50


async def test_pressure_compresses_then_compacts(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(
        client,
        tenant,
        [{"type": "constraint", "content": "Do not recommend Redis Cluster.", "hard": True, "source": "user"}]
        + [
            {"type": "tool_result", "content": f"Benchmark run {i}: " + "latency numbers " * 40, "source": "tool"}
            for i in range(20)
        ],
    )
    full = (await window(client, tenant, max_tokens=100_000)).json()
    assert full["mode"] == "full"
    mid_r = await window(client, tenant, max_tokens=full["tokens"]["used"] // 2)
    assert mid_r.status_code == 200, mid_r.text
    mid = mid_r.json()
    assert mid["mode"] == "balanced"
    assert mid["tokens"]["used"] <= full["tokens"]["used"] // 2
    tight = (await window(client, tenant, max_tokens=400)).json()
    assert tight["mode"] == "compact"
    assert tight["tokens"]["used"] <= 400
    assert "Do not recommend Redis Cluster." in tight["text"]
