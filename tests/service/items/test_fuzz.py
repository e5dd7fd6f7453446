"""No input produces a 500: random bodies, headers and paths against the real app and database."""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import TenantKeys

ALLOWED = {201, 403, 404, 413, 422}

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
FIELDS = [
    "type",
    "content",
    "key",
    "value",
    "domain",
    "source",
    "authority",
    "scope",
    "session_id",
    "task_id",
    "stage_id",
    "step_id",
    "hard",
    "kind",
    "status",
    "confidence",
    "observed_at",
    "expires_at",
    "variants",
    "related_ids",
]
plausible = {
    "type": st.sampled_from(["fact", "constraint", "tool_result", "rule", "x"]),
    "source": st.sampled_from(["user", "model", "tool", "system", "?"]),
    "scope": st.sampled_from(["user", "session", "task", "step", "stage", "global", ""]),
    "observed_at": st.sampled_from(
        [
            "2026-11-30T10:00:00Z",
            "2026-11-30T10:00:00",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59+14:00",
            "x",
        ]
    ),
    "expires_at": st.sampled_from(["2027-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "2026-11-30", ""]),
    "confidence": st.floats() | st.integers(min_value=-5, max_value=5) | st.text(max_size=3),
    "related_ids": st.lists(st.uuids().map(str) | st.text(max_size=5), max_size=3),
}


@st.composite
def bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "fact", "content": "seed"}
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=6, unique=True)):
        strategy = plausible.get(field, json_values)
        body[field] = draw(strategy | json_values)
    return body


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies(), batch=st.booleans())
async def test_random_item_bodies_never_500(
    client: httpx.AsyncClient, tenant: TenantKeys, body: dict[str, Any], batch: bool
) -> None:
    raw = json.dumps({"items": [body]} if batch else body, allow_nan=True).encode()
    path = "/v1/users/fuzz/items/batch" if batch else "/v1/users/fuzz/items"
    r = await client.post(path, content=raw, headers={**tenant.agent, "content-type": "application/json"})
    assert r.status_code in ALLOWED, (r.status_code, r.text)
    if r.status_code != 201:
        assert r.headers["content-type"] == "application/problem+json"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    user=st.text(max_size=20),
    tail=st.sampled_from(["items", "items/batch", "export", "", "items/x"]),
    query=st.dictionaries(
        st.sampled_from(["type", "status", "limit", "cursor", "order", "key", "include_expired"]),
        st.text(max_size=12),
        max_size=3,
    ),
    method=st.sampled_from(["GET", "POST", "DELETE"]),
)
async def test_random_paths_and_queries_never_500(
    client: httpx.AsyncClient, tenant: TenantKeys, user: str, tail: str, query: dict[str, str], method: str
) -> None:
    from urllib.parse import quote

    path = f"/v1/users/{quote(user, safe='')}/{tail}".rstrip("/")
    r = await client.request(method, path, params=query, headers=tenant.admin)
    assert r.status_code < 500, (method, path, query, r.status_code, r.text)
