"""Every validation rule answers a clear 4xx problem+json and changes nothing."""

from __future__ import annotations

import json

import httpx
import pytest

from service.db.engine import Database
from tests.conftest import TenantKeys
from tests.helpers import tenant_rows

GOOD = {"type": "fact", "content": "ok"}


def with_(**changes: object) -> dict[str, object]:
    body = dict(GOOD)
    body.update(changes)
    return body


BAD_BODIES: list[tuple[str, object, int, str]] = [
    ("nul in content", with_(content="a\x00b"), 422, "content"),
    ("lone surrogate", with_(content="a\ud800b"), 422, "content"),
    ("empty content", with_(content=""), 422, "content"),
    ("blank content", with_(content="   \n"), 422, "content"),
    ("oversize content", with_(content="x" * 32_001), 422, "content"),
    ("unknown type", with_(type="memory"), 422, "type"),
    ("unknown source", with_(source="oracle"), 422, "source"),
    ("unknown authority", with_(authority="god"), 422, "authority"),
    ("unknown scope", with_(scope="planet"), 422, "scope"),
    ("unknown kind", with_(kind="rumour"), 422, "kind"),
    ("unknown status", with_(status="maybe"), 422, "status"),
    ("server-only status", with_(status="superseded"), 422, "status"),
    ("naive observed_at", with_(observed_at="2026-11-30T10:00:00"), 422, "observed_at"),
    ("naive expires_at", with_(expires_at="2027-11-30T10:00:00"), 422, "expires_at"),
    ("garbage datetime", with_(observed_at="yesterday"), 422, "observed_at"),
    ("confidence > 1", with_(confidence=1.5), 422, "confidence"),
    ("confidence < 0", with_(confidence=-0.1), 422, "confidence"),
    ("confidence string", with_(confidence="high"), 422, "confidence"),
    ("unknown field", with_(colour="red"), 422, "colour"),
    ("session scope without id", with_(scope="session"), 422, "session_id"),
    ("task scope without id", with_(scope="task"), 422, "task_id"),
    ("step scope without id", with_(scope="step"), 422, "step_id"),
    ("stage scope without id", with_(scope="stage", task_id="t"), 422, "stage_id"),
    ("hard non-constraint", with_(hard=True), 422, "constraints"),
    ("model claiming user authority", with_(source="model", authority="user"), 422, "authority"),
    (
        "expires before observed",
        with_(observed_at="2026-11-30T10:00:00Z", expires_at="2026-11-30T09:00:00Z"),
        422,
        "expires_at",
    ),
    ("future observed_at", with_(observed_at="2099-01-01T00:00:00Z"), 422, "future"),
    ("bad key chars", with_(key="has space"), 422, "key"),
    ("nul in key", with_(key="a\x00"), 422, "key"),
    ("bad domain", with_(domain="a/b c"), 422, "domain"),
    ("bad session id", with_(session_id="s\x00"), 422, "session_id"),
    ("long session id", with_(session_id="s" * 129), 422, "session_id"),
    ("nul inside value", with_(value={"a": ["b\x00"]}), 422, "value"),
    ("nul in value key", with_(value={"a\x00": 1}), 422, "value"),
    ("too deep value", with_(value=json.loads("[" * 40 + "]" * 40)), 422, "value"),
    ("bad related id", with_(related_ids=["not-a-uuid"]), 422, "related_ids"),
    ("unknown related id", with_(related_ids=["01a22f7f-09c6-71cb-8646-e35e5b608177"]), 422, "related_ids"),
    (
        "duplicate related ids",
        with_(related_ids=["01a22f7f-09c6-71cb-8646-e35e5b608177"] * 2),
        422,
        "duplicates",
    ),
    ("unknown variant", with_(variants={"tiny": "x"}), 422, "variants"),
    ("nul in variant", with_(variants={"condensed": "\x00"}), 422, "variants"),
    ("content is a number", with_(content=5), 422, "content"),
    ("body is a list", [GOOD], 422, "body"),
    ("body is a string", "fact", 422, "body"),
    ("token_cost from client", with_(token_cost=3), 422, "token_cost"),
    ("id from client", with_(id="01a22f7f-09c6-71cb-8646-e35e5b608177"), 422, "id"),
    # A vector component beyond a 32-bit float cannot be stored (it was a 500 with the right dimension).
    ("embedding value past float32", with_(embedding=[5e180] + [0.1] * 383), 422, "embedding"),
    ("confidence is a boolean", with_(confidence=False), 422, "confidence"),
    ("hard is a number", with_(type="constraint", hard=1), 422, "hard"),
]


@pytest.mark.parametrize(("name", "body", "status", "mention"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
async def test_bad_item_is_rejected_and_writes_nothing(
    client: httpx.AsyncClient,
    tenant: TenantKeys,
    db: Database,
    name: str,
    body: object,
    status: int,
    mention: str,
) -> None:
    seed = await client.post("/v1/users/u1/items", json=GOOD, headers=tenant.agent)
    assert seed.status_code == 201
    before = await tenant_rows(db, tenant.tenant_id)
    raw = json.dumps(body, ensure_ascii=True).encode()
    r = await client.post(
        "/v1/users/u1/items", content=raw, headers={**tenant.agent, "content-type": "application/json"}
    )
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    problem = r.json()
    assert problem["status"] == status
    assert problem["type"].startswith("urn:ctxmem:problem:")
    assert mention in json.dumps(problem), problem
    assert await tenant_rows(db, tenant.tenant_id) == before


RAW_BODIES = [
    ("nan confidence", b'{"type": "fact", "content": "x", "confidence": NaN}'),
    ("infinite confidence", b'{"type": "fact", "content": "x", "confidence": Infinity}'),
    ("nan inside value", b'{"type": "fact", "content": "x", "value": {"a": NaN}}'),
    ("invalid json", b'{"type": "fact", "content": '),
    ("empty body", b""),
    ("not utf-8", b'{"type": "fact", "content": "\xff\xfe"}'),
    (
        "deeply nested json",
        b'{"type": "fact", "content": "x", "value": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ),
]


@pytest.mark.parametrize(("name", "raw"), RAW_BODIES, ids=[b[0] for b in RAW_BODIES])
async def test_malformed_json_is_422(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, name: str, raw: bytes
) -> None:
    before = await tenant_rows(db, tenant.tenant_id)
    r = await client.post(
        "/v1/users/u1/items", content=raw, headers={**tenant.agent, "content-type": "application/json"}
    )
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert await tenant_rows(db, tenant.tenant_id) == before


BAD_PATHS = [
    ("GET", "/v1/users/bad%20user/items"),
    ("GET", "/v1/users/" + "u" * 129 + "/items"),
    ("GET", "/v1/users/u%00/items"),
    ("GET", "/v1/users/u1/items/not-a-uuid"),
    ("DELETE", "/v1/users/u1/items/1234"),
    ("GET", "/v1/users/u1/items?type=memory"),
    ("GET", "/v1/users/u1/items?status=maybe"),
    ("GET", "/v1/users/u1/items?scope=planet"),
    ("GET", "/v1/users/u1/items?key=a%00b"),
    ("GET", "/v1/users/u1/items?domain=a%00"),
    ("GET", "/v1/users/u1/items?session_id=%00"),
    ("GET", "/v1/users/u1/items?limit=0"),
    ("GET", "/v1/users/u1/items?limit=100000"),
    ("GET", "/v1/users/u1/items?limit=abc"),
    ("GET", "/v1/users/u1/items?cursor=%%%"),
    ("GET", "/v1/users/u1/items?cursor=eyJpZCI6IjEifQ"),
    ("GET", "/v1/users/u1/items?order=sideways"),
    ("GET", "/v1/users/u1/items?include_deleted=perhaps"),
]


@pytest.mark.parametrize(("method", "path"), BAD_PATHS)
async def test_bad_ids_and_query_parameters_are_422(
    client: httpx.AsyncClient, tenant: TenantKeys, method: str, path: str
) -> None:
    await client.post("/v1/users/u1/items", json=GOOD, headers=tenant.agent)
    r = await client.request(method, path, headers=tenant.agent)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"


async def test_cursor_from_other_order_is_rejected(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await client.post("/v1/users/u1/items/batch", json={"items": [GOOD, GOOD, GOOD]}, headers=tenant.agent)
    page = (await client.get("/v1/users/u1/items?limit=1&order=asc", headers=tenant.agent)).json()
    r = await client.get(f"/v1/users/u1/items?order=desc&cursor={page['next_cursor']}", headers=tenant.agent)
    assert r.status_code == 422


async def test_oversize_body_is_413(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    before = await tenant_rows(db, tenant.tenant_id)
    big = {"items": [{"type": "fact", "content": "x" * 30_000} for _ in range(40)]}
    r = await client.post("/v1/users/u1/items/batch", json=big, headers=tenant.agent)
    assert r.status_code == 413
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["type"] == "urn:ctxmem:problem:payload-too-large"

    async def chunks():  # no Content-Length: the limit still holds on the streamed body
        for _ in range(40):
            yield b" " * 30_000

    r = await client.post(
        "/v1/users/u1/items", content=chunks(), headers={**tenant.agent, "content-type": "application/json"}
    )
    assert r.status_code == 413
    assert await tenant_rows(db, tenant.tenant_id) == before


async def test_batch_limits_and_atomicity(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    before = await tenant_rows(db, tenant.tenant_id)
    r = await client.post("/v1/users/u1/items/batch", json={"items": [GOOD] * 1001}, headers=tenant.agent)
    assert r.status_code == 413
    assert r.json()["type"] == "urn:ctxmem:problem:batch-too-large"
    r = await client.post("/v1/users/u1/items/batch", json={"items": []}, headers=tenant.agent)
    assert r.status_code == 422

    items = [dict(GOOD, content=f"item {i}") for i in range(10)]
    items[7] = dict(GOOD, content="bad\x00")
    r = await client.post("/v1/users/u1/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 422
    problem = r.json()
    assert problem["index"] == 7
    assert "items.7" in problem["detail"] or "items[7]" in problem["detail"]

    items[7] = dict(GOOD, observed_at="2099-01-01T00:00:00Z")  # a rule the service checks, not the schema
    r = await client.post("/v1/users/u1/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 422
    assert r.json()["index"] == 7 and r.json()["type"] == "urn:ctxmem:problem:batch-item-invalid"

    items[7] = dict(GOOD, source="system")  # an agent may not write system authority
    r = await client.post("/v1/users/u1/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 403 and r.json()["index"] == 7
    assert await tenant_rows(db, tenant.tenant_id) == before

    r = await client.post("/v1/users/u1/items/batch", json={"items": [GOOD] * 1000}, headers=tenant.agent)
    assert r.status_code == 201
    assert len(r.json()["items"]) == 1000


async def test_unknown_route_and_method_are_problems(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.get("/v1/nothing", headers=tenant.agent)
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    r = await client.put("/v1/users/u1/items", headers=tenant.agent)
    assert r.status_code == 405 and r.headers["content-type"] == "application/problem+json"


async def test_a_vector_component_too_small_for_a_32_bit_float_is_accepted(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    body = with_(embedding=[1e-300] + [0.25] * 383)
    r = await client.post("/v1/users/u1/items", json=body, headers=tenant.agent)
    assert r.status_code == 201, r.text
