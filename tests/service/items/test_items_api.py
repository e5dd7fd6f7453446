"""Context items through HTTP on a real PostgreSQL: round trip, defaults, token cost, listing, delete."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from service.db.engine import Database
from tests.conftest import TenantKeys
from tests.helpers import count_rows

FULL_ITEM = {
    "type": "decision",
    "content": "Use PostgreSQL 17 with pgvector for the catalogue search.",
    "key": "db.engine",
    "value": {"engine": "postgresql", "version": 17, "extensions": ["pgvector"], "ok": True, "ratio": 0.5},
    "domain": "architecture",
    "source": "user",
    "authority": "user",
    "scope": "task",
    "session_id": "s-1",
    "task_id": "task-42",
    "stage_id": "design",
    "step_id": "step-3",
    "hard": False,
    "kind": "opinion",
    "status": "verified",
    "confidence": 0.75,
    "observed_at": "2026-11-30T10:00:00+00:00",
    "expires_at": "2027-06-01T00:00:00+00:00",
    "variants": {"condensed": "PG17+pgvector for search", "summary": "PG17", "index": "db choice"},
}


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_round_trip_of_every_field(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    first = await client.post("/v1/users/u1/items", json={"type": "fact", "content": "x"}, headers=tenant.agent)
    assert first.status_code == 201, first.text
    # Every write says how it was resolved, a keyless one too (it has no slot: always new).
    assert first.json()["resolution"] == {
        "outcome": "new",
        "rule": None,
        "active_id": first.json()["id"],
        "retired_ids": [],
        "overrides": [],
        "detail": "stored (no key: no slot to resolve against)",
    }
    body = dict(FULL_ITEM, related_ids=[first.json()["id"]])
    r = await client.post("/v1/users/u1/items", json=body, headers=tenant.agent)
    assert r.status_code == 201, r.text
    created = r.json()
    got = await client.get(f"/v1/users/u1/items/{created['id']}", headers=tenant.agent)
    assert got.status_code == 200
    item = got.json()
    assert created.pop("resolution")["outcome"] == "new"
    assert item.pop("resolution") is None
    assert item == created
    for field, value in body.items():
        if field in ("observed_at", "expires_at"):
            assert _ts(item[field]) == _ts(value), field
        else:
            assert item[field] == value, field
    assert item["user_id"] == "u1"
    assert item["token_model"] == "o200k_base"
    assert item["token_cost"] > 0
    assert item["superseded_by"] is None and item["valid_to"] is None and item["deleted_at"] is None


async def test_server_side_defaults(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    before = datetime.now(UTC)
    r = await client.post(
        "/v1/users/u1/items", json={"type": "fact", "content": "The team is small."}, headers=tenant.agent
    )
    assert r.status_code == 201, r.text
    item = r.json()
    assert item["source"] == "model"
    assert item["authority"] == "inferred"
    assert item["scope"] == "user"
    assert item["kind"] == "fact"
    assert item["status"] == "available"
    assert item["hard"] is False
    assert item["confidence"] == 0.5
    assert item["expires_at"] is None  # facts last until replaced
    assert before - timedelta(seconds=1) <= _ts(item["observed_at"]) <= datetime.now(UTC) + timedelta(seconds=1)
    assert item["created_at"] == item["observed_at"]

    r = await client.post(
        "/v1/users/u1/items", json={"type": "fact", "content": "u", "source": "user"}, headers=tenant.agent
    )
    assert (r.json()["authority"], r.json()["confidence"]) == ("user", 0.9)
    r = await client.post(
        "/v1/users/u1/items", json={"type": "fact", "content": "t", "source": "tool"}, headers=tenant.agent
    )
    assert r.json()["authority"] == "tool"
    r = await client.post(
        "/v1/users/u1/items",
        json={"type": "summary", "content": "s", "source": "summary"},
        headers=tenant.agent,
    )
    assert r.json()["authority"] == "summary"
    # An explicit lower authority is kept.
    r = await client.post(
        "/v1/users/u1/items",
        json={"type": "fact", "content": "x", "source": "user", "authority": "tool"},
        headers=tenant.agent,
    )
    assert r.json()["authority"] == "tool"


async def test_expiry_defaults_by_type_and_scope(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    observed = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    r = await client.post(
        "/v1/users/u1/items",
        json={
            "type": "tool_result",
            "content": "QPS 50k",
            "source": "tool",
            "observed_at": observed.isoformat(),
        },
        headers=tenant.agent,
    )
    assert _ts(r.json()["expires_at"]) == observed + timedelta(minutes=30)
    r = await client.post(
        "/v1/users/u1/items",
        json={
            "type": "plan",
            "content": "1. compare 2. pick",
            "scope": "step",
            "step_id": "st1",
            "observed_at": observed.isoformat(),
        },
        headers=tenant.agent,
    )
    assert _ts(r.json()["expires_at"]) == observed + timedelta(hours=2)
    r = await client.post(
        "/v1/users/u1/items",
        json={"type": "goal", "content": "pick a cache", "scope": "session", "session_id": "s1"},
        headers=tenant.agent,
    )
    assert _ts(r.json()["expires_at"]) - _ts(r.json()["observed_at"]) == timedelta(days=30)
    r = await client.post(
        "/v1/users/u1/items", json={"type": "preference", "content": "likes tea"}, headers=tenant.agent
    )
    assert r.json()["expires_at"] is None


# Known counts of the real o200k_base encoding (the app's tokenizer), computed once with tiktoken 0.14 — not
# with the service's own tokenizer, which is what is under test.
@pytest.mark.parametrize(
    ("text", "tokens"),
    [("hello world", 2), ("我们的运维团队很小", 6), ("Don't recommend Redis Cluster — 我们的运维团队很小。", 14)],
)
async def test_token_cost_english_chinese_mixed(
    client: httpx.AsyncClient, tenant: TenantKeys, text: str, tokens: int
) -> None:
    r = await client.post("/v1/users/u1/items", json={"type": "fact", "content": text}, headers=tenant.agent)
    assert r.status_code == 201
    assert (r.json()["token_cost"], r.json()["token_model"]) == (tokens, "o200k_base")


async def test_a_client_sent_token_cost_is_refused(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post(
        "/v1/users/u1/items", json={"type": "fact", "content": "x", "token_cost": 1}, headers=tenant.agent
    )
    assert r.status_code == 422  # the server computes it


async def test_list_filters_pagination_and_hidden_statuses(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    items = [{"type": "fact", "content": f"fact {i}", "domain": "phone" if i % 2 else "finance"} for i in range(7)] + [
        {"type": "goal", "content": "ship", "scope": "session", "session_id": "s9"},
        {
            "type": "constraint",
            "content": "no redis cluster",
            "key": "cache.exclude",
            "scope": "task",
            "task_id": "k1",
        },
        {
            "type": "tool_result",
            "content": "old",
            "source": "tool",
            "observed_at": "2026-01-01T00:00:00Z",
        },
    ]
    r = await client.post("/v1/users/u2/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    ids = [i["id"] for i in r.json()["items"]]
    assert ids == sorted(ids)  # time-ordered ids

    r = await client.get("/v1/users/u2/items", headers=tenant.agent)
    listed = r.json()["items"]
    assert len(listed) == 9  # the stale tool result is hidden
    assert [i["id"] for i in listed] == sorted(ids[:9], reverse=True)

    r = await client.get("/v1/users/u2/items?include_expired=true", headers=tenant.agent)
    assert len(r.json()["items"]) == 10

    async def ids_for(query: str) -> list[str]:
        resp = await client.get(f"/v1/users/u2/items?{query}", headers=tenant.agent)
        assert resp.status_code == 200, resp.text
        return [i["id"] for i in resp.json()["items"]]

    assert len(await ids_for("type=fact")) == 7
    assert len(await ids_for("type=goal&type=constraint")) == 2
    assert await ids_for("scope=session") == [ids[7]]
    assert await ids_for("key=cache.exclude") == [ids[8]]
    assert await ids_for("session_id=s9") == [ids[7]]
    assert await ids_for("task_id=k1") == [ids[8]]
    assert len(await ids_for("domain=phone")) == 3

    # cursor pagination walks everything exactly once, both orders
    for order in ("asc", "desc"):
        seen: list[str] = []
        cursor = None
        while True:
            q = f"limit=4&order={order}" + (f"&cursor={cursor}" if cursor else "")
            page = (await client.get(f"/v1/users/u2/items?{q}", headers=tenant.agent)).json()
            seen += [i["id"] for i in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == (sorted(ids[:9]) if order == "asc" else sorted(ids[:9], reverse=True))

    # delete hides an item; include_deleted and status=deleted show it
    r = await client.delete(f"/v1/users/u2/items/{ids[0]}", headers=tenant.agent)
    assert r.status_code == 200 and r.json()["status"] == "deleted"
    assert ids[0] not in await ids_for("limit=100")
    assert ids[0] in await ids_for("include_deleted=true&limit=100")
    assert await ids_for("status=deleted") == [ids[0]]
    assert await count_rows(db, tenant.tenant_id, "context_item", "u2") == 10  # a tombstone, not a delete


async def test_delete_tombstones_and_records_event(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    r = await client.post("/v1/users/u3/items", json={"type": "fact", "content": "tmp"}, headers=tenant.agent)
    item_id = r.json()["id"]
    events_before = await count_rows(db, tenant.tenant_id, "event", "u3")
    r = await client.delete(f"/v1/users/u3/items/{item_id}", headers=tenant.agent)
    assert r.status_code == 200
    deleted = r.json()
    assert deleted["status"] == "deleted" and deleted["deleted_at"] is not None
    assert await count_rows(db, tenant.tenant_id, "event", "u3") == events_before + 1
    # deleting a tombstone again changes nothing
    again = await client.delete(f"/v1/users/u3/items/{item_id}", headers=tenant.agent)
    assert again.status_code == 200 and again.json() == deleted
    assert await count_rows(db, tenant.tenant_id, "event", "u3") == events_before + 1
    got = await client.get(f"/v1/users/u3/items/{item_id}", headers=tenant.agent)
    assert got.json()["status"] == "deleted"


async def test_a_user_is_known_from_the_first_call_an_unknown_item_is_404(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    """An agent's first "load memory" call needs no special case: a user never written has empty memory."""
    r = await client.get("/v1/users/nobody/items", headers=tenant.agent)
    assert r.status_code == 200 and r.json() == {"items": [], "next_cursor": None}
    profile = await client.get("/v1/users/nobody/profile", headers=tenant.agent)
    assert profile.status_code == 200
    assert profile.json()["tiers"] == {} and profile.json()["effective"]["entries"] == []
    window = await client.post("/v1/users/nobody/window", json={"input": "hi", "max_tokens": 200}, headers=tenant.agent)
    assert window.status_code == 200
    # Reading does not create the user: erasing one never written still finds no one.
    erase = await client.delete("/v1/users/nobody", headers=tenant.admin)
    assert erase.status_code == 404 and erase.json()["type"] == "urn:ctxmem:problem:user-not-found"
    r = await client.get("/v1/users/nobody/items/01a22f7f-09c6-71cb-8646-e35e5b608177", headers=tenant.agent)
    assert r.status_code == 404
    assert r.json()["type"] == "urn:ctxmem:problem:item-not-found"
