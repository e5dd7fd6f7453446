"""No window request produces a 500: random bodies against the real app, database and vector index, for a
user with items in several scopes (so the retrieve step ranks, recalls and re-checks on every call)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys

ALLOWED = {200, 403, 404, 413, 422}
USER = "wfuzz"

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
texts = st.text(max_size=60) | st.sampled_from(["Kafka retention?", "缓存 延迟", "'\\!&|:*", "", " "])
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "tool", "system", "x"]), "content": texts | json_values},
        optional={"tool_call_id": st.text(max_size=5), "tool_calls": json_values},
    ),
    max_size=4,
)
plausible: dict[str, Any] = {
    "input": texts,
    "query": texts,
    "max_tokens": st.integers(min_value=-5, max_value=5000) | st.sampled_from([2_000_001, 10**30]),
    "context_limit": st.integers(min_value=-5, max_value=200_000),
    "reserve_tokens": st.integers(min_value=-5, max_value=200_000),
    "watermark": st.floats(allow_nan=True),
    "session_id": st.sampled_from(["s1", "s2", "", "x" * 300]) | st.text(max_size=10),
    "task_id": st.text(max_size=10),
    "domains": st.lists(st.sampled_from(["infra", "sales", "", "x"]), max_size=3),
    "goal": texts,
    "plan": texts,
    "messages": messages,
    "tools": st.lists(json_values, max_size=2),
    "archive_dropped": st.booleans(),
}


sensible: dict[str, Any] = {
    "input": texts.filter(str.strip),
    "query": texts,
    "max_tokens": st.integers(min_value=50, max_value=3000),
    "session_id": st.sampled_from(["s1", "s2", "s3"]),
    "task_id": st.sampled_from(["t1", "t2"]),
    "domains": st.lists(st.sampled_from(["infra", "sales"]), max_size=2),
    "goal": texts.filter(str.strip),
    "archive_dropped": st.booleans(),
}


@st.composite
def bodies(draw: st.DrawFn) -> dict[str, Any]:
    """Half of the bodies are valid requests with random content (they reach the retrieve step and the
    assembly); the other half change any field to anything."""
    body: dict[str, Any] = {"input": "What is the Kafka retention?", "max_tokens": 800}
    if draw(st.booleans()):
        for field in draw(st.lists(st.sampled_from(sorted(sensible)), max_size=5, unique=True)):
            body[field] = draw(sensible[field])
        return body
    for field in draw(st.lists(st.sampled_from(sorted(plausible)), max_size=6, unique=True)):
        body[field] = draw(plausible[field] | json_values)
    return body


@pytest.fixture
async def seeded(client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall) -> TenantKeys:
    items = [
        {"type": "fact", "content": "Kafka retention is 7 days.", "scope": "session", "session_id": "s1"},
        {"type": "episode", "content": "We compared Redis and Memcached.", "domain": "infra"},
        {"type": "tool_result", "content": '{"qps": 5000}', "source": "tool"},
        {"type": "constraint", "content": "Never page at night.", "hard": True, "source": "user"},
        {"type": "fact", "content": "预算上限是每月五千元。", "scope": "task", "task_id": "t1"},
    ]
    r = await client.post(f"/v1/users/{USER}/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201
    await vectors.worker.drain()
    return tenant


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies())
async def test_random_window_bodies_never_500(
    client: httpx.AsyncClient, seeded: TenantKeys, body: dict[str, Any]
) -> None:
    raw = json.dumps(body, allow_nan=True).encode()
    r = await client.post(
        f"/v1/users/{USER}/window", content=raw, headers={**seeded.agent, "content-type": "application/json"}
    )
    assert r.status_code in ALLOWED, (r.status_code, r.text)
    if r.status_code != 200:
        assert r.headers["content-type"] == "application/problem+json"
    else:
        w = r.json()
        assert w["tokens"]["used"] <= w["tokens"]["budget"]
