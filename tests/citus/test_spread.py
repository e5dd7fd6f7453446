"""Tenants spread over the workers, and a tenant's window reaches one worker only (issue #34 item 4)."""

from __future__ import annotations

from collections import Counter

import asyncpg
import httpx

from service.db.engine import Database, plain_url
from service.recall.repository import LEXICAL_TERMS
from service.settings import Settings
from service.windows.repository import _ENTRIES_SQL, _ITEMS_SQL, _VERSION_SQL
from tests.citus.cluster import Cluster
from tests.conftest import make_tenant

TENANTS = 16


async def test_tenants_rows_land_on_both_workers_and_a_window_is_one_router_query(
    client: httpx.AsyncClient, db: Database, settings: Settings, cluster: Cluster
) -> None:
    tenants = [await make_tenant(db) for _ in range(TENANTS)]
    for tenant in tenants:
        r = await client.post(
            "/v1/users/spread/items", json={"type": "fact", "content": "spread fact"}, headers=tenant.agent
        )
        assert r.status_code == 201, r.text
        r = await client.post(
            "/v1/users/spread/window", json={"input": "spread", "max_tokens": 500}, headers=tenant.agent
        )
        assert r.status_code == 200, r.text

    conn = await asyncpg.connect(plain_url(settings.database.url))
    try:
        placement = {
            t.tenant_id: await conn.fetchval(
                "SELECT s.nodeport FROM citus_shards s "
                "WHERE s.shardid = get_shard_id_for_distribution_column('context_item', $1::text) "
                "AND s.table_name = 'context_item'::regclass",
                t.tenant_id,
            )
            for t in tenants
        }
        # Counted on the shards themselves, not through the coordinator.
        per_node = Counter[int]()
        for row in await conn.fetch(
            "SELECT s.nodeport, r.result::int AS n FROM run_command_on_shards('context_item', "
            "$$SELECT count(*) FROM %s WHERE user_id = 'spread'$$) AS r JOIN citus_shards s USING (shardid) "
            "WHERE r.success"
        ):
            per_node[row["nodeport"]] += row["n"]
        workers = {w.port for w in cluster.workers}
        assert set(placement.values()) == workers, placement
        assert per_node.keys() <= workers and sum(per_node.values()) == TENANTS, per_node
        assert all(per_node[port] > 0 for port in workers), per_node

        # The window's statements for one tenant: a router plan, one task, on the worker holding its shard.
        tenant = tenants[0].tenant_id
        selection = (tenant, "spread", "", "", "", "", None)
        for sql, args in (
            (_VERSION_SQL, (*selection, 20)),
            (_ITEMS_SQL, (*selection, 20)),
            (_ENTRIES_SQL, (tenant, "spread")),
            (LEXICAL_TERMS, (tenant, "spread", "spread fact", 0, None)),
        ):
            plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN {sql}", *args))
            assert "Task Count: 1" in plan, plan
            assert f"port={placement[tenant]}" in plan, plan
    finally:
        await conn.close()
