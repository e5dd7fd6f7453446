"""GET /v1/users/{u}/events: the user's timeline of items and profile, filterable, paginated."""

from __future__ import annotations

import httpx

from tests.conftest import TenantKeys


async def test_timeline_filters_and_pages(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await client.post(
        "/v1/users/tl/items", json={"type": "fact", "content": "a", "key": "k", "value": 1}, headers=tenant.agent
    )
    await client.post(
        "/v1/users/tl/items", json={"type": "fact", "content": "b", "key": "k", "value": 2}, headers=tenant.agent
    )
    obs = {"dimension": "goal", "key": "learn", "value": "rust", "session_id": "s1"}
    await client.post("/v1/users/tl/observations", json=obs, headers=tenant.agent)

    r = await client.get("/v1/users/tl/events", headers=tenant.agent)
    assert r.status_code == 403
    r = await client.get("/v1/users/tl/events", headers=tenant.operator)
    assert r.status_code == 200
    actions = [e["action"] for e in r.json()["items"]]
    assert actions == ["observation.added", "profile.created", "item.superseded", "item.created", "item.created"]
    items_only = (await client.get("/v1/users/tl/events?kind=item", headers=tenant.operator)).json()["items"]
    assert {e["action"] for e in items_only} == {"item.created", "item.superseded"}
    assert [e["rule"] for e in items_only] == ["recency", "recency", None]
    profile = (
        await client.get("/v1/users/tl/events?kind=profile&kind=observation&order=asc", headers=tenant.operator)
    ).json()["items"]
    assert [e["action"] for e in profile] == ["profile.created", "observation.added"]

    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/v1/users/tl/events", params=params, headers=tenant.operator)).json()
        seen += [e["id"] for e in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == 5 and seen == sorted(seen, reverse=True)
    assert (await client.get("/v1/users/tl/events?kind=nope", headers=tenant.operator)).status_code == 422
    ghost = await client.get("/v1/users/ghost/events", headers=tenant.operator)  # never written: known, empty
    assert ghost.status_code == 200 and ghost.json() == {"items": [], "next_cursor": None}
