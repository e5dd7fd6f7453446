"""The batch write path stays set-based: a 1,000-item batch costs a handful of statements, not one per row.
(Speed itself is measured in bench/ingest.py, not asserted here.)"""

from __future__ import annotations

import httpx
from sqlalchemy import event

from service.db.engine import Database
from tests.conftest import TenantKeys


async def test_batch_of_1000_uses_a_constant_number_of_statements(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    items = [
        {
            "type": ["fact", "tool_result", "preference"][i % 3],
            "content": f"item {i}",
            **({"key": f"k{i % 7}", "value": {"n": i}} if i % 2 else {}),
            **({"domain": "d"} if i % 5 == 0 else {}),
            "source": "user" if i % 4 else "tool",
        }
        for i in range(1000)
    ]
    statements: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        statements.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", count)
    try:
        r = await client.post(
            "/v1/users/bulk/items/batch", json={"items": items}, headers={**tenant.agent, "Idempotency-Key": "bulk-1"}
        )
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", count)
    assert r.status_code == 201, r.text
    assert len(statements) <= 15, statements
    out = r.json()["items"]
    assert [i["value"] for i in out[1:6:2]] == [{"n": 1}, {"n": 3}, {"n": 5}]
    got = await client.get(f"/v1/users/bulk/items/{out[1]['id']}", headers=tenant.agent)
    assert got.json()["value"] == {"n": 1}
