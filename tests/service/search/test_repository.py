"""service/search/repository.py against PostgreSQL: the filters keep exactly what they name, and the query
words an item holds are found through the lexical analyser (stems: "deployed" matches "deployment")."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

import httpx

from service.db.engine import Database
from service.search import repository
from tests.conftest import TenantKeys

NOW = datetime.now(UTC)


async def test_filters_and_matched_words(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    user = f"q-{secrets.token_hex(4)}"
    items = [
        {"type": "fact", "content": "The deployment failed on the orders replica.", "domain": "ops"},
        {"type": "tool_result", "content": "Replica lag 45 s.", "source": "tool", "session_id": "s1"},
        {"type": "fact", "content": "Old note about lunch.", "observed_at": (NOW - timedelta(days=30)).isoformat()},
    ]
    r = await client.post(f"/v1/users/{user}/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    ids = [i["id"] for i in r.json()["items"]]
    in_force = ("available", "verified", "missing")

    async def kept(**filters: object) -> set[str]:
        async with db.sessionmaker() as s:
            found = await repository.filtered_items(
                s,
                tenant_id=tenant.tenant_id,
                user_id=user,
                ids=ids,
                filters=repository.Filters(**{"statuses": in_force, **filters}),  # type: ignore[arg-type]
                now=NOW,
            )
        return set(found)

    assert await kept() == set(ids)
    assert await kept(types=["tool_result"]) == {ids[1]}
    assert await kept(domains=["ops"]) == {ids[0]}
    assert await kept(session_id="s1") == {ids[1]}
    assert await kept(observed_before=NOW - timedelta(days=1)) == {ids[2]}
    assert await kept(observed_after=NOW - timedelta(days=1)) == {ids[0], ids[1]}
    assert await kept(statuses=["verified"]) == set()
    async with db.sessionmaker() as s:
        found = await repository.filtered_items(
            s, tenant_id="another-tenant", user_id=user, ids=ids, filters=repository.Filters(in_force), now=NOW
        )
        assert found == {}
        words = await repository.matched_words(
            s, tenant_id=tenant.tenant_id, ids=ids, query="Why was the deployed replica lagging?"
        )
    assert words[ids[0]] == ["deployed", "replica"] and words[ids[1]] == ["replica", "lagging"] and words[ids[2]] == []
