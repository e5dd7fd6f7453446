"""After an erasure, no row of any table names the user (issue #12, C): not the idempotency records (their
paths named the user until the 24 h purge), not the outbox, not the index."""

from __future__ import annotations

import httpx
from sqlalchemy import text

from service.db.engine import Database
from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys

USER = "victim.erase@example.com"


async def rows_naming(db: Database, needle: str) -> dict[str, int]:
    """Rows of every table of the schema whose text form, or any bytea column as UTF-8, contains needle."""
    found: dict[str, int] = {}
    async with db.engine.connect() as conn:
        tables = (
            await conn.execute(
                text(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
                    " AND table_type = 'BASE TABLE' AND table_name <> 'alembic_version'"
                )
            )
        ).scalars()
        for table in list(tables):
            binary = (
                await conn.execute(
                    text(
                        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()"
                        " AND table_name = :t AND data_type = 'bytea'"
                    ),
                    {"t": table},
                )
            ).scalars()
            tests = [f'strpos("{table}"::text, :n) > 0'] + [f'position(:b IN "{c}") > 0' for c in binary]
            sql = f'SELECT count(*) FROM "{table}" WHERE ' + " OR ".join(tests)  # names from the catalogue
            count = (await conn.execute(text(sql), {"n": needle, "b": needle.encode()})).scalar_one()
            if count:
                found[table] = int(count)
    return found


async def test_no_table_names_an_erased_user(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    base = f"/v1/users/{USER}"
    r = await client.post(
        f"{base}/items/batch",
        json={"items": [{"type": "fact", "content": f"fact {i}", "key": f"k{i}", "value": i} for i in range(4)]},
        headers={**tenant.agent, "Idempotency-Key": "w-1"},
    )
    assert r.status_code == 201, r.text
    first = r.json()["items"][0]["id"]
    assert (await client.delete(f"{base}/items/{first}", headers={**tenant.agent, "Idempotency-Key": "d-1"})).is_success
    obs = {"dimension": "preference", "key": "editor", "value": "vim", "session_id": "s1", "explicit": True}
    r = await client.post(f"{base}/observations", json=obs, headers={**tenant.agent, "Idempotency-Key": "o-1"})
    assert r.status_code in (200, 201), r.text
    r = await client.post(
        f"{base}/window",
        json={"input": "which editor?", "max_tokens": 500, "archive_dropped": True},
        headers=tenant.agent,
    )
    assert r.status_code == 200, r.text
    assert (await client.get(f"{base}/export", headers=tenant.admin)).status_code == 200
    await vectors.worker.drain()
    assert await rows_naming(db, USER), "the probe finds the user before the erasure"

    r = await client.delete(base, headers={**tenant.admin, "Idempotency-Key": "erase-1"})
    assert r.status_code == 200, r.text
    await vectors.worker.drain()
    assert await rows_naming(db, USER) == {}
    assert await vectors.index.count(tenant_id=tenant.tenant_id, user_id=USER) == 0

    # The erasure's own record still replays, and still tells a different request apart.
    again = await client.delete(base, headers={**tenant.admin, "Idempotency-Key": "erase-1"})
    assert again.status_code == 200 and again.content == r.content
    assert again.headers["idempotent-replayed"] == "true"
    other = await client.delete("/v1/users/someone-else", headers={**tenant.admin, "Idempotency-Key": "erase-1"})
    assert other.status_code == 422, other.text
    assert USER not in other.text and "/v1/users/{user_id}" in other.json()["detail"]
