"""Conflict resolution through HTTP on a real PostgreSQL (docs/design.md §3.2): authority first, then recency,
reinforcement, corrections, scopes, hard constraints, concurrency — and nothing silently lost."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from sqlalchemy import text

from service.db.engine import Database
from tests.conftest import TenantKeys

URL = "/v1/users/u/items"


async def write(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    body.setdefault("type", "fact")
    body.setdefault("content", f"budget is {body.get('value')}")
    r = await client.post(URL, json=body, headers=headers)
    assert r.status_code == 201, r.text
    return dict(r.json())


async def active(client: httpx.AsyncClient, headers: dict[str, str], key: str, **params: str) -> list[dict[str, Any]]:
    r = await client.get(URL, params={"key": key, **params}, headers=headers)
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


async def history(client: httpx.AsyncClient, headers: dict[str, str], key: str) -> list[dict[str, Any]]:
    r = await client.get(URL, params={"key": key, "include_superseded": "true", "order": "asc"}, headers=headers)
    return list(r.json()["items"])


async def rules(db: Database, tenant_id: str) -> list[tuple[str, str | None]]:
    async with db.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT action, rule FROM event WHERE tenant_id = :t AND user_id = 'u' ORDER BY id"),
            {"t": tenant_id},
        )
        return [(r.action, r.rule) for r in rows]


async def test_model_guess_never_replaces_user_statement(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    user = await write(client, tenant.agent, key="budget", value=300, source="user", observed_at="2026-11-01T00:00:00Z")
    guess = await write(client, tenant.agent, key="budget", value=5000, source="model", confidence=1.0)
    assert guess["status"] == "superseded"
    assert guess["superseded_by"] == user["id"]
    assert guess["resolution"]["outcome"] == "rejected" and guess["resolution"]["rule"] == "authority"
    assert "user > inferred" in guess["status_reason"]
    assert [i["id"] for i in await active(client, tenant.agent, "budget")] == [user["id"]]
    # stored, not dropped
    assert [i["id"] for i in await history(client, tenant.agent, "budget")] == [user["id"], guess["id"]]


async def test_system_rule_beats_user_request(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    rule = await write(
        client,
        tenant.admin,
        type="rule",
        key="refunds",
        value="never",
        content="Never promise refunds",
        source="system",
    )
    ask = await write(
        client,
        tenant.agent,
        type="rule",
        key="refunds",
        value="always",
        content="Promise refunds",
        source="user",
    )
    assert ask["status"] == "superseded" and ask["superseded_by"] == rule["id"]
    assert ask["resolution"]["rule"] == "authority"
    # and the other way round: a system rule arriving later retires the user's value
    await write(client, tenant.agent, key="tone", value="casual", source="user")
    sys_tone = await write(client, tenant.admin, key="tone", value="formal", source="system")
    assert sys_tone["resolution"]["outcome"] == "replaced"
    assert [i["id"] for i in await active(client, tenant.agent, "tone")] == [sys_tone["id"]]


async def test_300_500_reinforced_then_corrected_back(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    a = await write(client, tenant.agent, key="budget", value=300, source="user", observed_at="2026-11-03T00:00:00Z")
    b = await write(client, tenant.agent, key="budget", value=500, source="user", observed_at="2026-11-09T00:00:00Z")
    assert b["resolution"] | {"detail": None} == {
        "outcome": "replaced",
        "rule": "recency",
        "active_id": b["id"],
        "retired_ids": [a["id"]],
        "overrides": [],
        "detail": None,
    }
    c = await write(client, tenant.agent, key="budget", value=500, source="user", content="budget 500 again")
    assert c["resolution"]["outcome"] == "reinforced" and c["resolution"]["active_id"] == b["id"]
    assert c["status"] == "superseded" and c["superseded_by"] == b["id"]
    current = (await active(client, tenant.agent, "budget"))[0]
    assert current["id"] == b["id"]
    assert current["support_count"] == 2
    assert 0.9 < current["confidence"] < 1.0  # raised from 0.9 by the damped noisy-OR
    # the user corrects: back to 300, retiring 500 at once (even though 500 is newer)
    d = await write(
        client,
        tenant.agent,
        key="budget",
        value=300,
        source="user",
        corrects=b["id"],
        observed_at="2026-11-05T00:00:00Z",
    )
    assert d["status"] == "available"
    assert d["resolution"]["rule"] == "correction" and d["resolution"]["retired_ids"] == [b["id"]]
    assert [i["id"] for i in await active(client, tenant.agent, "budget")] == [d["id"]]
    hist = await history(client, tenant.agent, "budget")
    assert [(i["id"], i["status"]) for i in hist] == [
        (a["id"], "superseded"),
        (b["id"], "superseded"),
        (c["id"], "superseded"),
        (d["id"], "available"),
    ]
    assert [i["superseded_by"] for i in hist] == [b["id"], d["id"], b["id"], None]
    assert all(i["status_reason"] for i in hist[:3])
    got = (await client.get(f"{URL}/{b['id']}", headers=tenant.agent)).json()
    assert got["superseded_by"] == d["id"] and "correction" in got["status_reason"]
    assert got["valid_to"] is not None
    assert await rules(db, tenant.tenant_id) == [
        ("item.created", None),
        ("item.created", "recency"),
        ("item.superseded", "recency"),
        ("item.created", "reinforcement"),
        ("item.reinforced", "reinforcement"),
        ("item.created", "correction"),
        ("item.superseded", "correction"),
    ]


async def test_backdated_older_fact_does_not_replace_newer(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    newer = await write(
        client, tenant.agent, key="city", value="Berlin", source="user", observed_at="2026-11-20T00:00:00Z"
    )
    older = await write(
        client, tenant.agent, key="city", value="Paris", source="user", observed_at="2026-10-01T00:00:00Z"
    )
    assert older["status"] == "superseded" and older["superseded_by"] == newer["id"]
    assert older["resolution"]["rule"] == "recency"
    assert [i["id"] for i in await active(client, tenant.agent, "city")] == [newer["id"]]


async def test_tie_breaks_confidence_then_id(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    at = "2026-11-20T00:00:00Z"
    strong = await write(client, tenant.agent, key="qps", value=50000, source="tool", observed_at=at, confidence=0.95)
    weak = await write(client, tenant.agent, key="qps", value=5000, source="tool", observed_at=at, confidence=0.6)
    assert weak["resolution"]["rule"] == "confidence" and weak["status"] == "superseded"
    later = await write(client, tenant.agent, key="qps", value=60000, source="tool", observed_at=at, confidence=0.95)
    assert later["resolution"]["rule"] == "id" and later["resolution"]["retired_ids"] == [strong["id"]]


async def test_same_value_with_higher_authority_takes_over(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    guess = await write(client, tenant.agent, key="lang", value="python", source="model")
    said = await write(client, tenant.agent, key="lang", value="python", source="user")
    assert said["resolution"]["outcome"] == "replaced" and said["resolution"]["rule"] == "authority"
    assert said["status"] == "available"
    # now a tool cannot override what the user said
    tool = await write(client, tenant.agent, key="lang", value="go", source="tool")
    assert tool["status"] == "superseded" and tool["superseded_by"] == said["id"]
    assert guess["id"] in [i["id"] for i in await history(client, tenant.agent, "lang")]


async def test_narrower_scope_overrides_only_inside_its_task(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    broad = await write(client, tenant.agent, key="budget", value=300, source="user")
    narrow = await write(client, tenant.agent, key="budget", value=800, source="user", scope="task", task_id="t1")
    assert narrow["status"] == "available" and narrow["resolution"]["overrides"] == [broad["id"]]
    # both stay active
    assert {i["id"] for i in await active(client, tenant.agent, "budget")} == {broad["id"], narrow["id"]}
    inside = await active(client, tenant.agent, "budget", view="effective", task_id="t1")
    assert [(i["id"], i["overrides"]) for i in inside] == [(narrow["id"], [broad["id"]])]
    outside = await active(client, tenant.agent, "budget", view="effective", task_id="t2")
    assert [(i["id"], i["overrides"]) for i in outside] == [(broad["id"], [])]
    nowhere = await active(client, tenant.agent, "budget", view="effective")
    assert [i["id"] for i in nowhere] == [broad["id"]]
    # a session-scoped value in another slot does not conflict with the task one either
    sess = await write(client, tenant.agent, key="budget", value=999, source="user", scope="session", session_id="s1")
    assert sess["status"] == "available"
    both = await active(client, tenant.agent, "budget", view="effective", task_id="t1", session_id="s1")
    assert [(i["id"], sorted(i["overrides"])) for i in both] == [(narrow["id"], sorted([broad["id"], sess["id"]]))]


async def test_correction_rules(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    rule = await write(client, tenant.admin, type="rule", key="pii", value="mask", content="Mask PII", source="system")
    r = await client.post(
        URL,
        json={
            "type": "rule",
            "key": "pii",
            "value": "show",
            "content": "show PII",
            "source": "user",
            "corrects": rule["id"],
        },
        headers=tenant.agent,
    )
    assert r.status_code == 409 and r.json()["type"] == "urn:ctxmem:problem:correction-refused"
    ok = await write(
        client,
        tenant.admin,
        type="rule",
        key="pii",
        value="show",
        content="show PII",
        source="user",
        corrects=rule["id"],
    )
    assert ok["resolution"]["rule"] == "correction" and ok["status"] == "available"
    # correcting something already retired is refused with the reason
    r = await client.post(
        URL,
        json={"type": "fact", "content": "x", "source": "user", "corrects": rule["id"]},
        headers=tenant.agent,
    )
    assert r.status_code == 409 and "already superseded" in r.json()["detail"]
    # only user statements correct; the target must exist for this user
    r = await client.post(
        URL,
        json={"type": "fact", "content": "x", "source": "tool", "corrects": ok["id"]},
        headers=tenant.agent,
    )
    assert r.status_code == 422
    r = await client.post(
        "/v1/users/other/items",
        json={"type": "fact", "content": "x", "source": "user", "corrects": ok["id"]},
        headers=tenant.agent,
    )
    assert r.status_code == 422
    # a keyless fact can be corrected too
    home = await write(client, tenant.agent, content="lives in Paris", source="user")
    moved = await write(client, tenant.agent, content="lives in Berlin", source="user", corrects=home["id"])
    assert moved["resolution"]["retired_ids"] == [home["id"]]
    got = (await client.get(f"{URL}/{home['id']}", headers=tenant.agent)).json()
    assert got["status"] == "superseded" and got["superseded_by"] == moved["id"]


async def test_hard_constraint_needs_equal_or_higher_authority(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    hard = await write(
        client, tenant.agent, type="constraint", hard=True, key="cache", value="no-redis-cluster",
        content="Don't recommend Redis Cluster", source="user",
    )  # fmt: skip
    tool = await write(
        client,
        tenant.agent,
        type="constraint",
        key="cache",
        value="redis-cluster",
        content="use it",
        source="tool",
    )
    assert tool["status"] == "superseded" and tool["superseded_by"] == hard["id"]
    user = await write(
        client, tenant.agent, type="constraint", hard=True, key="cache", value="memcached-only",
        content="Only memcached", source="user",
    )  # fmt: skip
    assert user["resolution"]["outcome"] == "replaced"


async def test_batch_resolves_in_order_and_atomically(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    items = [
        {
            "type": "fact",
            "content": "v1",
            "key": "plan",
            "value": 1,
            "source": "user",
            "observed_at": "2026-11-01T00:00:00Z",
        },
        {
            "type": "fact",
            "content": "v2",
            "key": "plan",
            "value": 2,
            "source": "user",
            "observed_at": "2026-11-02T00:00:00Z",
        },
        {"type": "fact", "content": "v2", "key": "plan", "value": 2, "source": "tool"},
        {
            "type": "fact",
            "content": "v0",
            "key": "plan",
            "value": 0,
            "source": "user",
            "observed_at": "2026-10-01T00:00:00Z",
        },
    ]
    r = await client.post(URL + "/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    out = r.json()["items"]
    assert [i["resolution"]["outcome"] for i in out] == ["new", "replaced", "reinforced", "rejected"]
    assert [i["status"] for i in out] == ["superseded", "available", "superseded", "superseded"]
    act = await active(client, tenant.agent, "plan")
    assert [i["id"] for i in act] == [out[1]["id"]] and act[0]["support_count"] == 2


async def test_fifty_concurrent_writers_to_one_slot(app, tenant: TenantKeys, db: Database) -> None:  # type: ignore[no-untyped-def]
    """Fifty clients, each on its own pooled connection (separate PostgreSQL sessions), write different
    values to one slot at once: exactly one stays active, all fifty are stored, no 500."""
    transport = httpx.ASGITransport(app=app)

    async def one(i: int) -> httpx.Response:
        async with httpx.AsyncClient(transport=transport, base_url="http://ctxmem.test") as c:
            return await c.post(
                "/v1/users/race/items",
                json={
                    "type": "fact",
                    "content": f"budget {i}",
                    "key": "budget",
                    "value": i,
                    "source": "user",
                },
                headers=tenant.agent,
            )

    responses = await asyncio.gather(*(one(i) for i in range(50)))
    assert [r.status_code for r in responses] == [201] * 50
    async with db.engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT status, count(*) FROM context_item"
                    " WHERE tenant_id = :t AND user_id = 'race' GROUP BY status"
                ),
                {"t": tenant.tenant_id},
            )
        ).all()
        dangling = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM context_item c"
                    " WHERE tenant_id = :t AND user_id = 'race' AND status = 'superseded'"
                    " AND NOT EXISTS (SELECT 1 FROM context_item w WHERE w.id = c.superseded_by)"
                ),
                {"t": tenant.tenant_id},
            )
        ).scalar_one()
    assert dict((s, n) for s, n in rows) == {"available": 1, "superseded": 49}
    assert dangling == 0
