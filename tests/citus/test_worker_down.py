"""A worker that stops: its tenants are answered 503 with Retry-After, the others are served; once it is back,
its tenants are served again (issue #34 item 4)."""

from __future__ import annotations

import asyncpg
import httpx

from service.db.engine import Database, plain_url
from service.settings import Settings
from tests.citus.cluster import Cluster
from tests.conftest import TenantKeys, make_tenant


async def _tenants_by_worker(db: Database, settings: Settings, cluster: Cluster) -> dict[int, TenantKeys]:
    """One tenant on each worker: tenants are made until both workers hold one."""
    on: dict[int, TenantKeys] = {}
    conn = await asyncpg.connect(plain_url(settings.database.url))
    try:
        for _ in range(64):
            tenant = await make_tenant(db)
            port = await conn.fetchval(
                "SELECT s.nodeport FROM citus_shards s "
                "WHERE s.shardid = get_shard_id_for_distribution_column('context_item', $1::text) "
                "AND s.table_name = 'context_item'::regclass",
                tenant.tenant_id,
            )
            on.setdefault(port, tenant)
            if len(on) == len(cluster.workers):
                return on
    finally:
        await conn.close()
    raise AssertionError(f"64 tenants, all on {sorted(on)}")


async def _window(client: httpx.AsyncClient, tenant: TenantKeys) -> httpx.Response:
    return await client.post(
        "/v1/users/down/window", json={"input": "what is the budget?", "max_tokens": 400}, headers=tenant.agent
    )


async def test_a_stopped_worker_fails_its_tenants_with_503_and_serves_the_others(
    client: httpx.AsyncClient, db: Database, settings: Settings, cluster: Cluster
) -> None:
    tenants = await _tenants_by_worker(db, settings, cluster)
    for tenant in tenants.values():
        r = await client.post(
            "/v1/users/down/items", json={"type": "fact", "content": "the budget is 5,000"}, headers=tenant.agent
        )
        assert r.status_code == 201, r.text
        assert (await _window(client, tenant)).status_code == 200
    worker = cluster.workers[0]
    down, up = tenants[worker.port], tenants[cluster.workers[1].port]
    worker.stop()
    try:
        for _ in range(2):  # and again: the pool's connections to the coordinator are still good
            r = await _window(client, down)
            assert r.status_code == 503, r.text
            assert r.headers["content-type"].startswith("application/problem+json") and "Retry-After" in r.headers
            assert r.json()["type"] == "urn:ctxmem:problem:unavailable"
            w = await client.post("/v1/users/down/items", json={"type": "fact", "content": "lost?"}, headers=down.agent)
            assert w.status_code == 503, w.text
            r = await _window(client, up)
            assert r.status_code == 200, r.text
            assert "the budget is 5,000" in r.json()["text"]
    finally:
        worker.start()
        await worker.wait_ready()
    r = await _window(client, down)
    assert r.status_code == 200, r.text
    items = await client.get("/v1/users/down/items", headers=down.agent)
    assert [i["content"] for i in items.json()["items"]] == ["the budget is 5,000"]  # the refused write left nothing
