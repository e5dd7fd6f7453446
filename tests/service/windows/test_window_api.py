"""POST /v1/users/{u}/window through HTTP on a real PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx

from schemas.windows import OMITTED_LISTED, WindowResponse
from tests.conftest import TenantKeys

W = "/v1/users/w/window"
ITEMS = "/v1/users/w/items"


async def seed(client: httpx.AsyncClient, tenant: TenantKeys, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    r = await client.post(ITEMS + "/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return list(r.json()["items"])


async def window(client: httpx.AsyncClient, tenant: TenantKeys, **body: Any) -> httpx.Response:
    body.setdefault("input", "Which cache should we use?")
    body.setdefault("detail", "full")  # these tests read why each item was left out
    r = await client.post(W, json=body, headers=tenant.agent)
    if r.status_code == 200:
        WindowResponse.model_validate_json(r.content)  # the hot path builds plain data: hold it to the schema
    return r


async def test_full_mode_has_every_section_in_order(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await client.post(
        ITEMS, json={"type": "rule", "content": "Never share credentials.", "source": "system"}, headers=tenant.admin
    )
    await seed(
        client,
        tenant,
        [
            {"type": "constraint", "content": "Don't recommend Redis Cluster.", "hard": True, "source": "user"},
            {"type": "fact", "content": "The ops team is small (2 people).", "source": "user"},
            {"type": "decision", "content": "We use PostgreSQL 17.", "source": "user"},
            {"type": "tool_result", "content": '{"qps": 50000, "p99_ms": 12}', "source": "tool"},
            {"type": "episode", "content": "Last week we compared Memcached and Redis.", "source": "summary"},
        ],
    )
    r = await window(client, tenant, max_tokens=4000, goal="Pick a cache", plan="1. list options 2. compare")
    assert r.status_code == 200, r.text
    w = r.json()
    assert w["mode"] == "full"
    ids = [s["id"] for s in w["sections"]]
    assert ids == ["rules", "goal", "constraints", "plan", "facts", "tool_results", "background", "input"]
    text = w["text"]
    for fragment in (
        "Never share credentials.",
        "Don't recommend Redis Cluster.",
        "Pick a cache",
        "We use PostgreSQL 17.",
    ):
        assert fragment in text
    assert text.rstrip().endswith("Which cache should we use?")
    assert w["tokens"]["used"] <= 4000
    assert text.startswith("## Rules\n")
    assert w["prefix_tokens"] > 0


async def test_budget_too_small_is_422_with_required(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(client, tenant, [{"type": "constraint", "content": "x " * 300, "hard": True, "source": "user"}])
    r = await window(client, tenant, max_tokens=50)
    assert r.status_code == 422
    assert r.json()["type"] == "urn:ctxmem:problem:budget-too-small"
    assert r.json()["required"] > 50


async def test_pressure_compresses_then_compacts(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(
        client,
        tenant,
        [{"type": "constraint", "content": "Do not recommend Redis Cluster.", "hard": True, "source": "user"}]
        + [
            {"type": "tool_result", "content": f"Benchmark run {i}: " + "latency numbers " * 200, "source": "tool"}
            for i in range(20)
        ],
    )
    full = (await window(client, tenant, max_tokens=100_000)).json()
    assert full["mode"] == "full"
    # Condensing pays for a shortened line's handle only on long items (these are ~400 tokens); condensed
    # and whole are then worth about the same per token, so pressure condenses some and may drop one.
    mid_r = await window(client, tenant, max_tokens=full["tokens"]["used"] * 3 // 4)
    assert mid_r.status_code == 200, mid_r.text
    mid = mid_r.json()
    assert mid["mode"] in ("balanced", "compact")
    assert any(0 < p["level"] < 4 for s in mid["sections"] for p in s["items"])
    assert mid["tokens"]["used"] <= full["tokens"]["used"] * 3 // 4
    tight = (await window(client, tenant, max_tokens=400)).json()
    assert tight["mode"] == "compact"
    assert tight["tokens"]["used"] <= 400
    assert "Do not recommend Redis Cluster." in tight["text"]


async def test_scope_freshness_and_overrides(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    items = await seed(
        client,
        tenant,
        [
            {"type": "fact", "content": "budget is 300", "key": "budget", "value": 300, "source": "user"},
            {
                "type": "fact",
                "content": "budget is 800 for this task",
                "key": "budget",
                "value": 800,
                "source": "user",
                "scope": "task",
                "task_id": "t1",
            },
            {"type": "fact", "content": "only in session s2", "scope": "session", "session_id": "s2"},
            {
                "type": "tool_result",
                "content": "old QPS reading",
                "source": "tool",
                "observed_at": "2026-01-01T00:00:00Z",
            },
            {"type": "tool_result", "content": "fresh QPS reading", "source": "tool"},
        ],
    )
    broad, narrow, other_session, stale, fresh = (i["id"] for i in items)
    w = (await window(client, tenant, max_tokens=5000, task_id="t1", session_id="s1")).json()
    shown = {p["id"] for s in w["sections"] for p in s["items"]}
    assert narrow in shown and broad not in shown and other_session not in shown and stale not in shown
    assert fresh in shown
    omitted = {o["id"]: o["reason"] for o in w["omitted"]}
    assert "overridden" in omitted[broad] and "stale" in omitted[stale]
    assert any(stale in warning for warning in w["warnings"])
    outside = (await window(client, tenant, max_tokens=5000, task_id="t9")).json()
    shown = {p["id"] for s in outside["sections"] for p in s["items"]}
    assert broad in shown and narrow not in shown


async def test_superseded_never_shown_and_profile_sections(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    old = await client.post(
        ITEMS, json={"type": "fact", "content": "city Paris", "key": "city", "value": "Paris", "source": "user",
                     "observed_at": "2026-10-01T00:00:00Z"}, headers=tenant.agent,
    )  # fmt: skip
    await client.post(
        ITEMS, json={"type": "fact", "content": "city Berlin", "key": "city", "value": "Berlin", "source": "user"},
        headers=tenant.agent,
    )  # fmt: skip
    obs = {"dimension": "preference", "key": "brand", "value": "xiaomi", "domain": "phone", "context": "shop"}
    await client.post("/v1/users/w/observations", json={**obs, "session_id": "a"}, headers=tenant.agent)
    await client.post("/v1/users/w/observations", json={**obs, "session_id": "b"}, headers=tenant.agent)
    await client.post(
        "/v1/users/w/observations",
        json={**obs, "key": "form", "value": "foldable", "polarity": "dislike", "session_id": "c", "explicit": True,
              "confirmation": True},
        headers=tenant.agent,
    )  # fmt: skip
    await client.post(
        "/v1/users/w/observations",
        json={"dimension": "decision_style", "key": "pace", "value": "fast", "session_id": "c", "confirmation": True,
              "explicit": True},
        headers=tenant.agent,
    )  # fmt: skip
    w = (await window(client, tenant, max_tokens=5000, domains=["phone"])).json()
    assert "city Paris" not in w["text"] and "city Berlin" in w["text"]
    assert old.json()["id"] not in {p["id"] for s in w["sections"] for p in s["items"]}
    by_section = {s["id"]: s for s in w["sections"]}
    assert "decision_style.pace: fast" in w["text"] and by_section["profile"]["items"]
    assert "Do not recommend foldable" in w["text"]
    assert [p["reason"] for p in by_section["hints"]["items"]] == ["candidate hint (tentative); kept whole"]
    assert "tentative" in w["text"]


async def test_history_validation_and_archive(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    bad = [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "x", "content": "r"}]
    r = await window(client, tenant, max_tokens=1000, messages=bad)
    assert r.status_code == 422 and r.json()["index"] == 1 and r.json()["type"] == "urn:ctxmem:problem:history-invalid"
    r = await window(client, tenant, max_tokens=1000, messages=[{"role": "tool", "content": "r"}])
    assert r.status_code == 422
    msgs = [
        {"role": "user", "content": "tell me about caches " * 30},
        {"role": "assistant", "content": "Redis, Memcached, ... " * 30},
        {"role": "user", "content": "which one?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                               "function": {"name": "bench", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "memcached wins"},
    ]  # fmt: skip
    full = (await window(client, tenant, max_tokens=5000, messages=msgs)).json()
    assert len(full["messages"]) == 5
    r = await window(client, tenant, max_tokens=full["tokens"]["used"] - 100, messages=msgs, archive_dropped=True)
    assert r.status_code == 200, r.text
    w = r.json()
    assert w["messages"][0]["content"] == "which one?"
    assert len(w["messages"]) == 3 and w["archived_item_id"]
    ep = (await client.get(f"{ITEMS}/{w['archived_item_id']}", headers=tenant.agent)).json()
    assert ep["type"] == "episode" and "tell me about caches" in ep["content"]
    r = await client.post(W, json={"input": "x", "max_tokens": 10, "messages": msgs, "archive_dropped": True},
                          headers=tenant.operator)  # fmt: skip
    assert r.status_code == 403


async def test_budget_from_context_limit_tools_and_determinism(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(client, tenant, [{"type": "episode", "content": f"turn {i} " + "words " * 50} for i in range(10)])
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    a = await window(client, tenant, context_limit=2000, reserve_tokens=500, tools=tools)
    b = await window(client, tenant, context_limit=2000, reserve_tokens=500, tools=tools)
    assert a.status_code == 200 and a.content == b.content  # byte-identical
    w = a.json()
    assert w["tokens"]["budget"] == 1200  # min(2000 - 500, 0.6 * 2000)
    assert w["tokens"]["tools"] > 0 and w["tokens"]["used"] <= 1200
    assert w["tokens"]["used"] == w["tokens"]["text"] + w["tokens"]["messages"] + w["tokens"]["tools"]
    r = await window(client, tenant, context_limit=2000, reserve_tokens=1500, watermark=0.9)
    assert r.json()["tokens"]["budget"] == 500
    for bad in (
        {},
        {"max_tokens": 10, "context_limit": 100},
        {"max_tokens": 0},
        {"max_tokens": 2_000_001},
        {"context_limit": 100, "reserve_tokens": 100},
        {"max_tokens": 100, "watermark": 0},
        {"max_tokens": 100, "input": ""},
        {"max_tokens": 100, "messages": [{"role": "wizard", "content": "x"}]},
    ):
        r = await client.post(W, json={"input": "q", **bad}, headers=tenant.agent)
        assert r.status_code == 422, (bad, r.text)


async def test_window_for_new_user_and_tenant_isolation(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    await seed(client, tenant, [{"type": "fact", "content": "tenant A secret", "source": "user"}])
    r = await client.post(W, json={"input": "hello", "max_tokens": 500}, headers=other_tenant.agent)
    assert r.status_code == 200
    assert "secret" not in r.text and r.json()["mode"] == "full"


async def test_detail_summary_lists_the_relevant_omitted_and_counts_the_rest(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    """By default the response lists what was kept in full and, of what was left out, only the items
    relevant to the query (best first, at most OMITTED_LISTED), with every omitted item counted by kind of
    reason; detail "full" lists them all. Both are the same window otherwise, and each is deterministic."""
    items = [
        {"type": "fact", "content": f"Unrelated note {i} about the weather and the garden, at length."}
        for i in range(40)
    ]
    items += [
        {"type": "fact", "content": f"The orders replica lag reached {i} seconds during batch {i}."} for i in range(30)
    ]
    await seed(client, tenant, items)
    ask = {"input": "How bad is the orders replica lag?", "max_tokens": 200}
    summary = await window(client, tenant, **ask, detail="summary")
    default = await client.post(W, json=ask, headers=tenant.agent)
    full = await window(client, tenant, **ask, detail="full")
    assert summary.status_code == full.status_code == default.status_code == 200
    s, f = summary.json(), full.json()
    assert default.content == summary.content  # summary is the default
    assert (await window(client, tenant, **ask, detail="summary")).content == summary.content
    assert (await window(client, tenant, **ask, detail="full")).content == full.content
    assert {k: v for k, v in s.items() if k not in ("omitted", "omitted_summary")} == {
        k: v for k, v in f.items() if k not in ("omitted", "omitted_summary")
    }
    everything = {o["id"]: o["reason"] for o in f["omitted"]}
    assert f["omitted_summary"] == {**s["omitted_summary"], "listed": len(everything)}
    assert s["omitted_summary"]["count"] == len(everything) > OMITTED_LISTED
    assert sum(s["omitted_summary"]["reasons"].values()) == len(everything)
    listed = s["omitted"]
    assert 0 < len(listed) == s["omitted_summary"]["listed"] <= OMITTED_LISTED
    assert all(everything[o["id"]] == o["reason"] for o in listed)
    relevant = {o["id"] for o in f["omitted"] if "replica lag" in (await item(client, tenant, o["id"]))["content"]}
    assert {o["id"] for o in listed} <= relevant  # only items the query was about; the weather notes counted


async def item(client: httpx.AsyncClient, tenant: TenantKeys, item_id: str) -> dict[str, Any]:
    r = await client.get(f"{ITEMS}/{item_id}", headers=tenant.agent)
    assert r.status_code == 200
    out: dict[str, Any] = r.json()
    return out


async def test_shortened_items_name_handles_that_get_expands(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    """Eight long tool facts (~600 tokens each) under a tight budget: every shortened line starts with its
    handle, one note says how to expand, and GET …/items/{handle}?level=0 returns the whole text."""
    facts = [
        {
            "type": "tool_result",
            "content": f"Review {i} of the orders replica lag, finding {i}: " + "the replica fell behind. " * 120,
            "source": "tool",
        }
        for i in range(8)
    ]
    written = await seed(client, tenant, facts)
    by_id = {w["id"]: w for w in written}
    full = (await window(client, tenant, input="What did the replica lag reviews find?", max_tokens=100_000)).json()
    assert full["mode"] == "full" and "expand(id)" not in full["text"]
    r = await window(client, tenant, input="What did the replica lag reviews find?", max_tokens=800)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["tokens"]["used"] <= 800
    placed = {p["id"]: p["level"] for s in out["sections"] for p in s["items"]}
    shortened = [i for i in by_id if placed.get(i, 0) > 0]
    assert shortened and out["text"].count("expand(id)") == 1
    for iid in shortened:
        line = next(ln for ln in out["text"].splitlines() if f"[{iid[-8:]}]" in ln)
        assert line.startswith(f"- [{iid[-8:]}] ")
        got = await client.get(f"{ITEMS}/{iid[-8:]}", params={"level": 0}, headers=tenant.agent)
        assert got.status_code == 200 and got.json()["at_level"]["text"] == by_id[iid]["content"]
