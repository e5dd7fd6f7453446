"""Ids that are URL dot-segments (issue #31): `.` and `..` are what `/v1/users/../items` loses to path
normalisation in browsers, HTTP libraries and proxies, so every route that adds data refuses them with a 422
that says why; rows stored under one before stay readable, exportable and erasable."""

from __future__ import annotations

import httpx
import pytest

from schemas.items import ItemCreate
from service.db.engine import Database
from tests.conftest import TenantKeys

pytestmark = pytest.mark.asyncio

DOTS = ("%2E", "%2e%2e")  # what a client that does not normalise sends for `.` and `..`
ITEM = {"type": "fact", "content": "Likes tea.", "source": "user"}


def _refused(r: httpx.Response, name: str) -> None:
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    detail = r.json()["detail"]
    assert name in detail and "dot-segment" in detail, detail


@pytest.mark.parametrize("dot", DOTS)
async def test_routes_that_add_data_refuse_a_dot_segment_user(
    client: httpx.AsyncClient, tenant: TenantKeys, dot: str
) -> None:
    base = f"/v1/users/{dot}"
    obs = {"dimension": "preference", "key": "drink", "value": "tea", "session_id": "s1"}
    for path, body in [
        ("/items", ITEM),
        ("/items/batch", {"items": [ITEM]}),
        ("/observations", obs),
        ("/observations/batch", {"observations": [obs]}),
        ("/sessions/s1/messages", {"messages": [{"role": "user", "content": "hi"}]}),
        ("/window", {"input": "hi", "max_tokens": 100}),
        ("/extract", {"messages": [{"role": "user", "content": "I like tea"}], "dry_run": True}),
    ]:
        _refused(await client.post(base + path, json=body, headers=tenant.agent), "user_id")


@pytest.mark.parametrize("dot", DOTS)
async def test_a_dot_segment_session_is_refused_where_it_would_store(
    client: httpx.AsyncClient, tenant: TenantKeys, dot: str
) -> None:
    r = await client.post(
        f"/v1/users/dots-ok/sessions/{dot}/messages",
        json={"messages": [{"role": "user", "content": "hi"}]},
        headers=tenant.agent,
    )
    _refused(r, "session_id")


@pytest.mark.parametrize("field", ["session_id", "task_id"])
@pytest.mark.parametrize("value", [".", ".."])
async def test_dot_segment_ids_in_a_body_are_refused(
    client: httpx.AsyncClient, tenant: TenantKeys, field: str, value: str
) -> None:
    scope = field.removesuffix("_id")
    r = await client.post("/v1/users/dots-ok/items", json={**ITEM, "scope": scope, field: value}, headers=tenant.agent)
    assert r.status_code == 422, r.text
    assert "dot-segment" in r.json()["detail"], r.text
    with pytest.raises(ValueError, match="dot-segment"):
        ItemCreate.model_validate({**ITEM, "scope": scope, field: value})


async def test_ids_with_dots_that_are_not_dot_segments_are_fine(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    for user in ("...", ".a", "a.", "a..b"):
        r = await client.post(f"/v1/users/{user}/items", json=ITEM, headers=tenant.agent)
        assert r.status_code == 201, (user, r.text)


async def test_rows_already_stored_under_a_dot_segment_stay_reachable(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    """A user `..` written before the rule (here straight through the service layer's table) is listed,
    exported, searched and erased through `%2e%2e`."""
    from sqlalchemy import text

    ok = await client.post("/v1/users/dots-seed/items", json=ITEM, headers=tenant.agent)
    assert ok.status_code == 201, ok.text
    async with db.engine.begin() as conn:
        await conn.execute(text("SET LOCAL session_replication_role = replica"))  # foreign keys: renamed together
        tables = [
            row[0]
            for row in await conn.execute(
                text(
                    "SELECT table_name FROM information_schema.columns WHERE column_name = 'user_id' "
                    "AND table_schema = current_schema() AND table_name NOT LIKE '%erasure%'"
                )
            )
        ]
        for table in tables:
            await conn.execute(text(f"UPDATE {table} SET user_id = '..' WHERE user_id = 'dots-seed'"))
    base = "/v1/users/%2e%2e"
    items = await client.get(f"{base}/items", headers=tenant.agent)
    assert items.status_code == 200 and len(items.json()["items"]) == 1, items.text
    item_id = items.json()["items"][0]["id"]
    assert (await client.get(f"{base}/items/{item_id}", headers=tenant.agent)).status_code == 200
    assert (await client.get(f"{base}/profile", headers=tenant.agent)).status_code == 200
    assert (await client.get(f"{base}/events", headers=tenant.operator)).status_code == 200
    found = await client.post(f"{base}/search", json={"query": "tea"}, headers=tenant.agent)
    assert found.status_code == 200, found.text
    export = await client.get(f"{base}/export", headers=tenant.admin)
    assert export.status_code == 200 and "Likes tea." in export.text, export.text[:300]
    erased = await client.delete(base, headers=tenant.admin)
    assert erased.status_code == 200, erased.text
    assert (await client.get(f"{base}/items", headers=tenant.agent)).json()["items"] == []


async def test_the_openapi_pattern_leaves_dot_segments_out_where_they_are_refused(client: httpx.AsyncClient) -> None:
    import re

    doc = (await client.get("/openapi.json")).json()
    for path, method in [("/v1/users/{user_id}/items", "post"), ("/v1/users/{user_id}/window", "post")]:
        (param,) = [p for p in doc["paths"][path][method]["parameters"] if p["name"] == "user_id"]
        pattern = param["schema"]["pattern"]
        assert not re.search(pattern, "..") and not re.search(pattern, ".") and re.search(pattern, "...")
    (param,) = [p for p in doc["paths"]["/v1/users/{user_id}/items"]["get"]["parameters"] if p["name"] == "user_id"]
    assert re.search(param["schema"]["pattern"], "..")
