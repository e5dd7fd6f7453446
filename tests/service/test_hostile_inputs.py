"""Inputs a hostile client sends (issue #12, A and F): each gets a 4xx problem+json that says how to fix
it, and changes nothing."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import httpx
import pytest

from service.db.engine import Database
from tests.conftest import TenantKeys
from tests.helpers import tenant_rows


def forged(data: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


FORGED_CURSORS = [
    forged({"id": 5, "o": "desc"}),
    forged({"id": {}}),
    forged({"id": []}),
    forged({"id": None, "o": "desc"}),
    forged({"id": "0192e5a0-0000-7000-8000-000000000000", "o": 5}),
    forged({"id": "0192e5a0-0000-7000-8000-000000000000", "o": {"x": 1}}),
    forged([1, 2]),
    forged("x"),
    forged(7),
    "eyJpZCI6NSwibyI6ImRlc2MifQ",  # the reproduction
    "%%%",
    "////",
]


@pytest.mark.parametrize("route", ["items", "events"])
@pytest.mark.parametrize("cursor", FORGED_CURSORS)
async def test_forged_cursor_is_422_with_how_to_fix(
    client: httpx.AsyncClient, tenant: TenantKeys, route: str, cursor: str
) -> None:
    await client.post("/v1/users/cur/items", json={"type": "fact", "content": "c"}, headers=tenant.agent)
    r = await client.get(f"/v1/users/cur/{route}", params={"cursor": cursor}, headers=tenant.admin)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["type"] == "urn:ctxmem:problem:validation-error"
    assert "next_cursor" in body["detail"] or "order" in body["detail"]
    assert body["errors"][0]["loc"] == ["query", "cursor"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/users/dt/items", {"type": "fact", "content": "c", "observed_at": 0}),
        ("/v1/users/dt/items", {"type": "fact", "content": "c", "observed_at": 1.5}),
        ("/v1/users/dt/items", {"type": "fact", "content": "c", "expires_at": "1700000000"}),
        (
            "/v1/users/dt/observations",
            {"dimension": "goal", "key": "k", "value": "v", "session_id": "s", "observed_at": 17e8},
        ),
        ("/v1/jobs/expire/run", {"now": 0}),
        ("/v1/jobs/expire/run", {"now": "0"}),
    ],
)
async def test_bare_number_is_not_a_date_time(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, path: str, body: dict[str, object]
) -> None:
    before = await tenant_rows(db, tenant.tenant_id)
    runs = await client.get("/v1/jobs/runs", headers=tenant.admin)
    r = await client.post(path, json=body, headers=tenant.admin if "jobs" in path else tenant.agent)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert "RFC 3339" in r.json()["detail"]
    assert await tenant_rows(db, tenant.tenant_id) == before
    assert (await client.get("/v1/jobs/runs", headers=tenant.admin)).json() == runs.json()


async def test_rfc3339_date_times_still_accepted(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post(
        "/v1/users/dt/items",
        json={"type": "fact", "content": "c", "observed_at": "2026-09-01T10:00:00+02:00"},
        headers=tenant.agent,
    )
    assert r.status_code == 201, r.text
    assert datetime.fromisoformat(r.json()["observed_at"]) == datetime(2026, 9, 1, 8, tzinfo=UTC)


@pytest.mark.parametrize(
    ("path", "raw", "key"),
    [
        ("/v1/users/dup/items", b'{"type":"fact","content":"a","content":"b"}', "content"),
        ("/v1/users/dup/items", b'{"type":"fact","content":"a","value":{"x":1,"x":2}}', "x"),
        ("/v1/users/dup/items/batch", b'{"items":[{"type":"fact","content":"a"}],"items":[]}', "items"),
        (
            "/v1/users/dup/observations",
            b'{"dimension":"goal","key":"k","value":"v","session_id":"s","stance":"supports","stance":"contradicts"}',
            "stance",
        ),
    ],
)
async def test_duplicate_json_keys_are_refused(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, path: str, raw: bytes, key: str
) -> None:
    before = await tenant_rows(db, tenant.tenant_id)
    r = await client.post(path, content=raw, headers={**tenant.agent, "content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert f"{key!r} twice" in r.json()["detail"] and "send each key once" in r.json()["detail"]
    assert await tenant_rows(db, tenant.tenant_id) == before
    # the same key in different objects is fine
    ok = b'{"type":"fact","content":"a","value":{"content":1,"type":{"type":2}}}'
    r = await client.post(
        "/v1/users/dup/items", content=ok, headers={**tenant.agent, "content-type": "application/json"}
    )
    assert r.status_code == 201, r.text


async def test_get_on_batch_is_405_not_a_bad_item_id(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await client.post("/v1/users/m/items", json={"type": "fact", "content": "c"}, headers=tenant.agent)
    for method in ("GET", "DELETE"):
        r = await client.request(method, "/v1/users/m/items/batch", headers=tenant.agent)
        assert r.status_code == 405, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.headers["allow"] == "OPTIONS, POST"
    # an id that is not a UUID is still a 422 that says so
    r = await client.get("/v1/users/m/items/batchy", headers=tenant.agent)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["path", "item_id"]


async def test_allow_lists_every_method_of_the_path(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    item = (await client.post("/v1/users/m/items", json={"type": "fact", "content": "c"}, headers=tenant.agent)).json()
    path = f"/v1/users/m/items/{item['id']}"
    r = await client.options(path)
    assert r.status_code == 204
    assert r.headers["allow"] == "DELETE, GET, OPTIONS"
    r = await client.put(path, json={}, headers=tenant.agent)
    assert r.status_code == 405 and r.headers["allow"] == "DELETE, GET, OPTIONS"
    r = await client.options("/v1/users/m/items")
    assert r.status_code == 204 and r.headers["allow"] == "GET, OPTIONS, POST"
    assert (await client.options("/v1/nothing/here")).status_code == 404
