# ruff: noqa: RUF001 - the Chinese sample text uses fullwidth punctuation on purpose.
"""POST /v1/users/{u}/search: the window's relevance as a tool — ranked items in force with their score
parts and why they matched, the request's filters and budget, and clear 4xx for what cannot be searched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from schemas.search import SearchResponse
from service.db.engine import Database
from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys
from tests.helpers import copy_with_same_handle

NOW = datetime.now(UTC)
LAG = "PostgreSQL replication lag on the orders replica reached 45 seconds during the nightly batch."
NOTES = [
    "The team lunch moved to Thursdays at noon in the small meeting room.",
    "Alice prefers reviewing pull requests in the morning before standup.",
    "The office printer on the second floor needs a new toner cartridge.",
    "Quarterly planning is scheduled for the first week of next month.",
    "Our CI runners were upgraded to the new base image on Monday.",
]


async def write(client: httpx.AsyncClient, tenant: TenantKeys, user: str, items: list[dict[str, Any]]) -> list[str]:
    r = await client.post(f"/v1/users/{user}/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return [i["id"] for i in r.json()["items"]]


async def search(client: httpx.AsyncClient, tenant: TenantKeys, user: str, **body: Any) -> dict[str, Any]:
    r = await client.post(f"/v1/users/{user}/search", json=body, headers=tenant.agent)
    assert r.status_code == 200, r.text
    SearchResponse.model_validate_json(r.content)
    out: dict[str, Any] = r.json()
    return out


async def seed(client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall, user: str) -> list[str]:
    notes = [{"type": "fact", "content": c, "source": "user"} for c in NOTES]
    lag = {"type": "tool_result", "content": LAG, "source": "tool", "session_id": "s-ops", "scope": "session"}
    ids = await write(client, tenant, user, [lag, *notes])
    await vectors.worker.drain()
    return ids


async def test_the_matching_item_comes_first_with_its_score_parts_and_why(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    lag, *_ = await seed(client, tenant, vectors, "s1")
    out = await search(client, tenant, "s1", query="How bad was the orders replica lag?")
    first = out["items"][0]
    assert first["item"]["id"] == lag and first["item"]["content"] == LAG
    assert first["score"] == 1.0 and first["lexical"] > 0 and first["vector"] > 0
    assert first["matched"] == ["orders", "replica", "lag"]  # the query's words, in its order; "the" is no term
    assert first["why"].startswith("words: orders, replica, lag (BM25 ")
    assert "meaning: cosine" in first["why"]
    assert [h["score"] for h in out["items"]] == sorted((h["score"] for h in out["items"]), reverse=True)
    assert out["tokens"] == {"budget": None, "used": sum(h["item"]["token_cost"] for h in out["items"])}
    assert out["warnings"] == []


async def test_filters_keep_only_what_they_name(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    lag, *_ = await seed(client, tenant, vectors, "s2")
    query = "replica lag lunch printer planning runners pull requests"
    everything = {h["item"]["id"] for h in (await search(client, tenant, "s2", query=query))["items"]}
    assert lag in everything and len(everything) >= 4
    facts = await search(client, tenant, "s2", query=query, types=["fact"])
    assert facts["items"] and {h["item"]["type"] for h in facts["items"]} == {"fact"}
    ops = await search(client, tenant, "s2", query=query, session_id="s-ops")
    assert [h["item"]["id"] for h in ops["items"]] == [lag]
    assert (await search(client, tenant, "s2", query=query, task_id="nothing-here"))["items"] == []
    later = await search(client, tenant, "s2", query=query, observed_after=(NOW + timedelta(hours=1)).isoformat())
    assert later["items"] == []
    assert len((await search(client, tenant, "s2", query=query, limit=2))["items"]) == 2


async def test_a_budget_takes_items_whole_best_first_and_skips_what_does_not_fit(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    await seed(client, tenant, vectors, "s3")
    query = "replica lag lunch printer planning runners pull requests"
    ranked = (await search(client, tenant, "s3", query=query))["items"]
    costs = [h["item"]["token_cost"] for h in ranked]
    budget = costs[0] + min(costs[1:]) if len(costs) > 1 else costs[0]
    out = await search(client, tenant, "s3", query=query, budget=budget)
    assert out["items"][0]["item"]["id"] == ranked[0]["item"]["id"]
    assert out["tokens"]["used"] <= budget and out["tokens"]["budget"] == budget
    assert out["tokens"]["used"] == sum(h["item"]["token_cost"] for h in out["items"])
    assert (await search(client, tenant, "s3", query=query, budget=1))["items"] == []


async def test_superseded_and_deleted_items_are_not_found(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    def fact(content: str, **more: Any) -> list[dict[str, Any]]:
        return [{"type": "fact", "content": content, "source": "user", **more}]

    (old,) = await write(client, tenant, "s4", fact("The deploy freeze starts Friday.", key="freeze", value="fri"))
    (new,) = await write(client, tenant, "s4", fact("The deploy freeze starts Monday.", key="freeze", value="mon"))
    (gone,) = await write(client, tenant, "s4", fact("A deploy freeze draft."))
    r = await client.delete(f"/v1/users/s4/items/{gone}", headers=tenant.agent)
    assert r.status_code == 200, r.text
    await vectors.worker.drain()
    found = [h["item"]["id"] for h in (await search(client, tenant, "s4", query="deploy freeze"))["items"]]
    assert found == [new] and old not in found


async def test_an_unknown_user_finds_nothing_and_another_tenant_sees_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys, vectors: VectorRecall
) -> None:
    await seed(client, tenant, vectors, "s5")
    assert (await search(client, tenant, "never-written", query="replica lag"))["items"] == []
    assert (await search(client, other_tenant, "s5", query="replica lag"))["items"] == []


async def test_what_cannot_be_searched_is_a_422_that_says_how_to_fix_it(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "x", "statuses": ["superseded"]}, "statuses"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 101}, "limit"),
        ({"query": "x", "budget": 0}, "budget"),
        ({"query": "x", "types": ["nonsense"]}, "types"),
        (
            {"query": "x", "observed_after": "2026-12-01T00:00:00Z", "observed_before": "2026-11-01T00:00:00Z"},
            "observed_after must be before observed_before",
        ),
        ({"query": "x", "surprise": 1}, "surprise"),
    ]
    for body, says in bad:
        r = await client.post("/v1/users/s6/search", json=body, headers=tenant.agent)
        assert r.status_code == 422, (body, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")
        assert says in r.text, (body, r.text)


async def test_a_query_that_is_a_handle_finds_its_item_first(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall, db: Database
) -> None:
    """A query that is exactly a handle (the end of an id, as a window shows it before a shortened item)
    finds that item first, saying so; the rankings' hits follow. The request's filters still apply, and a
    handle that ends several of the user's ids finds them all first."""
    lag, lunch, *_ = await seed(client, tenant, vectors, "s7")
    handle = lag[-8:]
    for query in (handle, f"[{handle}]", f" {handle.upper()} ", lag[-13:], lag):
        out = await search(client, tenant, "s7", query=query)
        first, *rest = out["items"]
        assert first["item"]["id"] == lag and first["score"] == 1.0, query
        assert first["why"] == f"handle: its id ends with {query.strip(' []').lower()}", first["why"]
        assert lag not in [h["item"]["id"] for h in rest]
    assert (await search(client, tenant, "s7", query=handle, limit=1))["items"][0]["item"]["id"] == lag
    cost = first["item"]["token_cost"]
    assert [h["item"]["id"] for h in (await search(client, tenant, "s7", query=handle, budget=cost))["items"]] == [lag]
    # Not a handle: a sentence holding one, or another user's; filtered out: not of the types asked for.
    for user, query, more in (
        ("s7", f"expand {handle}", {}),
        ("s7-other", handle, {}),
        ("s7", handle, {"types": ["fact"]}),
    ):
        out = await search(client, tenant, user, query=query, **more)
        assert all(not h["why"].startswith("handle:") and h["item"]["id"] != lag for h in out["items"]), query
    # A deleted item is not searched, even by its handle (GET …/items/{handle} reads it).
    assert (await client.delete(f"/v1/users/s7/items/{lunch}", headers=tenant.agent)).status_code == 200
    assert lunch not in [h["item"]["id"] for h in (await search(client, tenant, "s7", query=lunch[-8:]))["items"]]
    # A second item whose id ends alike (copied in SQL: ids are made by the service): both come first, by id.
    twin = await copy_with_same_handle(db, lag)
    both = (await search(client, tenant, "s7", query=handle))["items"][:2]
    assert [h["item"]["id"] for h in both] == sorted([lag, twin])
    assert all(h["why"].endswith("as 2 of the user's ids do (ask with more of the id)") for h in both), both
    assert (await search(client, tenant, "s7", query=lag[-13:]))["items"][0]["item"]["id"] == lag


ZH_RELEVANT = "运维团队太小，用不了 Redis 集群，只能先用单机版。"
ZH_UNRELATED = ["数据仓库用的是 ClickHouse。", "用户的猫叫小白。"]
ZH_NOTES = ["周六我们去香山爬山，风景很美。", "我每天早上喝一杯美式咖啡。", "婚礼定在明年五月。", "我女儿读研究生。"]


async def test_chinese_matches_by_words_not_characters(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    """Texts sharing only characters with the query (用) rank well below the one sharing its words (集群),
    and ``why`` names the terms that matched, not the query's whole phrase."""
    items = [{"type": "fact", "content": c, "source": "user"} for c in [ZH_RELEVANT, *ZH_UNRELATED, *ZH_NOTES]]
    relevant, *unrelated = (await write(client, tenant, "zh", items))[:3]
    await vectors.worker.drain()
    out = await search(client, tenant, "zh", query="Redis 集群可以用吗")
    by_id = {h["item"]["id"]: h for h in out["items"]}
    first = out["items"][0]
    assert first["item"]["id"] == relevant
    assert first["matched"] == ["redis", "集群", "用"]
    assert first["why"].startswith("words: redis, 集群, 用 (BM25 ")
    for i in unrelated:
        hit = by_id.get(i)
        assert hit is None or (hit["score"] < 0.5 and hit["matched"] == ["用"]), hit
