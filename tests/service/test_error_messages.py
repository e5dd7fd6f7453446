"""Errors say what was wrong and how to fix it (issue #14): each case is a mistake a newcomer makes, sent
through the app, and the problem's ``detail`` must name the field, the limit or the setting, or the fix."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import TenantKeys

pytestmark = pytest.mark.asyncio

ITEMS = "/v1/users/err-user/items"
WINDOW = "/v1/users/err-user/window"


async def detail_of(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    detail: str = r.json()["detail"]
    return detail


async def test_a_window_without_a_budget_says_how_to_give_one(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    detail = await detail_of(await client.post(WINDOW, json={"input": "hi"}, headers=tenant.agent), 422)
    assert "a budget is needed" in detail and "max_tokens" in detail and "context_limit" in detail
    both = await client.post(WINDOW, json={"input": "hi", "max_tokens": 9, "context_limit": 99}, headers=tenant.agent)
    assert "not both" in await detail_of(both, 422)


async def test_content_over_the_limit_names_its_length_and_the_setting(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    r = await client.post(ITEMS, json={"type": "fact", "content": "x" * 40_000}, headers=tenant.agent)
    detail = await detail_of(r, 422)
    assert "40,000 characters" in detail and "32,000" in detail and "CTXMEM_MAX_CONTENT_CHARS" in detail
    assert "items" not in detail.split("characters")[0]


async def test_a_form_body_says_to_send_json(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    # What `curl -d 'type=fact&content=x'` sends.
    r = await client.post(
        ITEMS,
        content=b"type=fact&content=x",
        headers={**tenant.agent, "Content-Type": "application/x-www-form-urlencoded"},
    )
    detail = await detail_of(r, 422)
    assert "Content-Type: application/json" in detail and "x-www-form-urlencoded" in detail
    array = await client.post(ITEMS, json=["not", "an", "object"], headers=tenant.agent)
    assert "must be a JSON object" in await detail_of(array, 422)


def tool_call(function: dict[str, object]) -> dict[str, object]:
    return {
        "input": "and now?",
        "max_tokens": 500,
        "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": function}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
    }


async def test_tool_call_arguments_must_be_a_json_encoded_string(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    as_object = tool_call({"name": "get_weather", "arguments": {"city": "Lisbon"}})
    detail = await detail_of(await client.post(WINDOW, json=as_object, headers=tenant.agent), 422)
    assert "messages[1].tool_calls[0].function.arguments" in detail and "JSON-encoded string" in detail
    missing = tool_call({"name": "get_weather"})
    detail = await detail_of(await client.post(WINDOW, json=missing, headers=tenant.agent), 422)
    assert detail == "messages[1].tool_calls[0].function.arguments is required"
    fine = tool_call({"name": "get_weather", "arguments": "{}"})
    assert (await client.post(WINDOW, json=fine, headers=tenant.agent)).status_code == 200


async def test_an_unknown_field_suggests_the_closest_one(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post(ITEMS, json={"type": "fact", "contnet": "x", "content": "y"}, headers=tenant.agent)
    assert await detail_of(r, 422) == "unknown field 'contnet'; did you mean 'content'?"
    batch = {"items": [{"type": "fact", "content": "ok"}, {"type": "fact", "content": "y", "sesion_id": "s"}]}
    r = await client.post(f"{ITEMS}/batch", json=batch, headers=tenant.agent)
    body = r.json()
    assert r.status_code == 422 and body["index"] == 1
    assert body["detail"] == "unknown field 'items[1].sesion_id'; did you mean 'session_id'?"
    far = await client.post(WINDOW, json={"input": "x", "max_tokens": 9, "zzz": 1}, headers=tenant.agent)
    detail = await detail_of(far, 422)
    assert detail.startswith("unknown field 'zzz'; known fields: input, max_tokens, context_limit")


async def test_limits_name_their_setting(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    big = await client.post(
        ITEMS,
        content=b"{" + b" " * (2 * 1024 * 1024) + b"}",
        headers={**tenant.agent, "Content-Type": "application/json"},
    )
    detail = await detail_of(big, 413)
    assert "CTXMEM_MAX_BODY_BYTES" in detail
    many = {"items": [{"type": "fact", "content": f"n{i}"} for i in range(1001)]}
    detail = await detail_of(await client.post(f"{ITEMS}/batch", json=many, headers=tenant.agent), 413)
    assert "CTXMEM_MAX_BATCH_ITEMS" in detail and "1,001" in detail


async def test_forbidden_names_the_role_that_may(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    detail = await detail_of(await client.post("/v1/jobs/expire/run", headers=tenant.agent), 403)
    assert "role 'agent'" in detail and "needs a key with role 'admin'" in detail
    detail = await detail_of(await client.get("/v1/users/err-user/events", headers=tenant.agent), 403)
    assert "'operator' or 'admin'" in detail
