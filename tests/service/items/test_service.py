"""service/items/service.py, called as an endpoint calls it (``service.x(ctx, *, ...)``): what the schema
cannot check (settings, roles, the clock, other rows) refused with a 4xx that says what to fix; defaults
filled by the server; tombstones; listing limits and the effective view's rules."""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.dialects.postgresql.asyncpg import dialect as asyncpg_dialect

from schemas.items import ItemCreate
from service.db.engine import Database, driver_connection
from service.errors import BatchTooLarge, Forbidden, ItemNotFound, ServiceError, ValidationFailed
from service.items import repository, service
from service.items.service import ItemQuery
from tests.conftest import TenantKeys
from tests.helpers import copy_with_same_handle
from tests.service.service_context import service_context

NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)


def item(**fields: Any) -> ItemCreate:
    return ItemCreate.model_validate({"type": "fact", "content": "the team is two people", **fields})


def query(**changes: Any) -> ItemQuery:
    base: dict[str, Any] = {
        "types": [],
        "scopes": [],
        "statuses": [],
        "key": None,
        "domain": None,
        "session_id": None,
        "task_id": None,
        "stage_id": None,
        "step_id": None,
        "view": "all",
        "include_superseded": False,
        "include_expired": False,
        "include_deleted": False,
        "order": "desc",
        "limit": None,
        "cursor": None,
    }
    return ItemQuery(**{**base, **changes})


def user() -> str:
    return f"u-{secrets.token_hex(4)}"


async def refused(app: FastAPI, key: dict[str, str], error: type[ServiceError], **kw: Any) -> ServiceError:
    settings_changes = kw.pop("settings", {})
    with pytest.raises(error) as err:
        async with service_context(app, key, now=NOW, **settings_changes) as ctx:
            await service.create_items(ctx, user_id=kw.pop("user_id", user()), **kw)
    assert 400 <= err.value.status < 500
    return err.value


async def test_a_written_item_gets_the_servers_defaults(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        (written,) = await service.create_items(ctx, user_id=uid, items=[item()], batch=False)
    assert (written.user_id, written.status, written.observed_at, written.created_at) == (uid, "available", NOW, NOW)
    assert written.token_cost > 0 and written.token_model == "o200k_base"
    assert written.resolution is not None  # write responses say how the write was resolved
    async with service_context(app, tenant.operator, now=NOW) as ctx:
        again = await service.get_item(ctx, user_id=uid, item_id=written.id)
    assert again.id == written.id and again.resolution is None


async def test_a_key_that_may_not_write_is_forbidden(app: FastAPI, tenant: TenantKeys) -> None:
    err = await refused(app, tenant.operator, Forbidden, items=[item()], batch=False)
    assert "may not items:write" in err.detail


async def test_an_agent_may_not_write_system_authority_and_the_batch_index_is_named(
    app: FastAPI, tenant: TenantKeys
) -> None:
    err = await refused(app, tenant.agent, Forbidden, items=[item(), item(source="system")], batch=True)
    assert err.detail.startswith("items[1]: a agent key cannot write system authority")
    assert err.extra["index"] == 1
    async with service_context(app, tenant.admin, now=NOW) as ctx:
        (ok,) = await service.create_items(ctx, user_id=user(), items=[item(source="system")], batch=False)
    assert ok.authority == "system"


async def test_a_batch_over_the_setting_is_413_and_says_to_split(app: FastAPI, tenant: TenantKeys) -> None:
    err = await refused(
        app, tenant.agent, BatchTooLarge, items=[item()] * 3, batch=True, settings={"max_batch_items": 2}
    )
    assert err.status == 413
    assert "at most 2 items (setting CTXMEM_MAX_BATCH_ITEMS), got 3: split it" in err.detail


async def test_content_over_the_setting_names_its_length(app: FastAPI, tenant: TenantKeys) -> None:
    err = await refused(
        app,
        tenant.agent,
        ValidationFailed,
        items=[item(content="x" * 101)],
        batch=False,
        settings={"max_content_chars": 100},
    )
    assert "content has 101 characters; at most 100 are accepted (setting CTXMEM_MAX_CONTENT_CHARS)" in err.detail
    err = await refused(
        app,
        tenant.agent,
        ValidationFailed,
        items=[item(content="short", variants={"summary": "y" * 101})],
        batch=False,
        settings={"max_content_chars": 100},
    )
    assert err.detail.startswith("variants.summary has 101 characters")


async def test_an_embedding_of_the_wrong_dimension_is_refused(app: FastAPI, tenant: TenantKeys) -> None:
    dim = app.state.settings.vectors.embedding_dim
    err = await refused(app, tenant.agent, ValidationFailed, items=[item(embedding=[0.1] * (dim + 1))], batch=False)
    assert err.detail == f"embedding has {dim + 1} dimensions; this service embeds in {dim}"


async def test_observed_at_in_the_future_is_refused_by_the_requests_clock(app: FastAPI, tenant: TenantKeys) -> None:
    future = (NOW + timedelta(days=1)).isoformat()
    err = await refused(app, tenant.agent, ValidationFailed, items=[item(), item(observed_at=future)], batch=True)
    assert err.detail == "items[1]: observed_at is in the future" and err.extra["index"] == 1


async def test_related_ids_must_name_items_of_this_user(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        (mine,) = await service.create_items(ctx, user_id=uid, items=[item()], batch=False)
    ghost = uuid.uuid4()
    err = await refused(
        app,
        tenant.agent,
        ValidationFailed,
        user_id=uid,
        items=[item(related_ids=[str(mine.id), str(ghost)])],
        batch=False,
    )
    assert err.detail == f"related_ids not found for this user: {ghost}"
    err = await refused(app, tenant.agent, ValidationFailed, items=[item(related_ids=[str(mine.id)])], batch=False)
    assert "related_ids not found for this user" in err.detail  # another user's item is not found either


async def test_get_and_delete_of_an_unknown_item_are_404(app: FastAPI, tenant: TenantKeys) -> None:
    missing = uuid.uuid4()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        with pytest.raises(ItemNotFound, match=str(missing)):
            await service.get_item(ctx, user_id="nobody", item_id=missing)
        with pytest.raises(ItemNotFound):
            await service.delete_item(ctx, user_id="nobody", item_id=missing)


async def test_delete_is_a_tombstone_and_deleting_again_changes_nothing(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        (written,) = await service.create_items(ctx, user_id=uid, items=[item()], batch=False)
    later = NOW + timedelta(hours=1)
    async with service_context(app, tenant.agent, now=later) as ctx:
        gone = await service.delete_item(ctx, user_id=uid, item_id=written.id)
    assert (gone.status, gone.deleted_at) == ("deleted", later)
    async with service_context(app, tenant.agent, now=later + timedelta(hours=1)) as ctx:
        again = await service.delete_item(ctx, user_id=uid, item_id=written.id)
        listed = await service.list_items(ctx, user_id=uid, query=query())
        with_deleted = await service.list_items(ctx, user_id=uid, query=query(include_deleted=True))
    assert (again.status, again.deleted_at) == ("deleted", later)
    assert listed.items == []
    assert [i.id for i in with_deleted.items] == [written.id]


async def test_listing_pages_and_refuses_a_limit_over_the_setting(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        written = await service.create_items(
            ctx, user_id=uid, items=[item(content=f"fact {i}") for i in range(3)], batch=True
        )
    async with service_context(app, tenant.operator, now=NOW) as ctx:
        first = await service.list_items(ctx, user_id=uid, query=query(order="asc", limit=2))
        assert first.next_cursor is not None
        rest = await service.list_items(ctx, user_id=uid, query=query(order="asc", limit=2, cursor=first.next_cursor))
        with pytest.raises(ValidationFailed, match="limit must be at most 500"):
            await service.list_items(ctx, user_id=uid, query=query(limit=501))
        with pytest.raises(ValidationFailed, match="send the same order"):
            await service.list_items(ctx, user_id=uid, query=query(order="desc", cursor=first.next_cursor))
    assert [i.id for i in first.items + rest.items] == [w.id for w in written]
    assert rest.next_cursor is None


async def test_the_effective_view_shows_active_items_only(app: FastAPI, tenant: TenantKeys) -> None:
    async with service_context(app, tenant.operator, now=NOW) as ctx:
        for changes in ({"statuses": ["deleted"]}, {"include_deleted": True}, {"include_expired": True}):
            with pytest.raises(ValidationFailed, match="view=effective shows active items only"):
                await service.list_items(ctx, user_id=user(), query=query(view="effective", **changes))


async def test_the_effective_view_lets_the_narrowest_scope_win_per_key(app: FastAPI, tenant: TenantKeys) -> None:
    uid = user()
    async with service_context(app, tenant.agent, now=NOW) as ctx:
        general, session_one = await service.create_items(
            ctx,
            user_id=uid,
            items=[
                item(type="preference", key="tone", content="formal"),
                item(type="preference", key="tone", content="casual here", scope="session", session_id="s1"),
            ],
            batch=True,
        )
    async with service_context(app, tenant.operator, now=NOW) as ctx:
        inside = await service.list_items(ctx, user_id=uid, query=query(view="effective", session_id="s1"))
        outside = await service.list_items(ctx, user_id=uid, query=query(view="effective", session_id="s2"))
    assert [(i.id, i.overrides) for i in inside.items] == [(session_one.id, [general.id])]
    assert [(i.id, i.overrides) for i in outside.items] == [(general.id, [])]


def _stored_row(content: str, **fields: Any) -> dict[str, Any]:
    base = {"id": uuid.uuid4(), "type": "fact", "content": content, "key": None, "value": None, "variants": None,
            "token_cost": len(content.split()), "level_texts": None, "level_tokens": None}  # fmt: skip
    return {**base, **fields}


def test_item_levels_are_what_was_stored_at_write_time() -> None:
    row = _stored_row("the whole text", level_texts=["c1", "c2", "c3", "c4"], level_tokens=[1, 1, 1, 1])
    texts, tokens = service.item_levels(row, count=lambda t: len(t.split()))
    assert texts == ("the whole text", "c1", "c2", "c3", "c4")
    assert tokens == (3, 1, 1, 1, 1)


def test_item_levels_of_a_row_from_before_levels_were_stored_are_derived_and_never_grow() -> None:
    content = "We chose Redis for the session cache. It was cheaper to run. Thanks for the help with it!"
    texts, tokens = service.item_levels(_stored_row(content), count=lambda t: len(t.split()))
    assert texts[0] == content and len(texts) == len(tokens) == 5
    assert list(tokens) == sorted(tokens, reverse=True)  # each level at most as long as the one before
    assert "Redis" in texts[1]


async def test_get_item_at_a_level_returns_that_levels_text(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    content = (
        "We compared Redis and Memcached for the session cache over two weeks of production traffic. "
        "Redis had a p99 latency of 4 ms and Memcached 3 ms, but Redis keeps sessions across restarts. "
        "The team chose Redis because losing every session on a deploy is not acceptable. "
        "Thanks again to everyone who helped run the benchmark, it was a lot of work!"
    )
    r = await client.post("/v1/users/lv/items", json={"type": "fact", "content": content}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    iid = r.json()["id"]
    plain = (await client.get(f"/v1/users/lv/items/{iid}", headers=tenant.agent)).json()
    assert plain["at_level"] is None
    seen = []
    for level in range(5):
        r = await client.get(f"/v1/users/lv/items/{iid}", params={"level": level}, headers=tenant.agent)
        assert r.status_code == 200, r.text
        at = r.json()["at_level"]
        assert at["level"] == level and at["text"] and at["tokens"] > 0
        seen.append(at)
    assert seen[0]["text"] == content and seen[0]["tokens"] == plain["token_cost"]
    assert [a["tokens"] for a in seen] == sorted((a["tokens"] for a in seen), reverse=True)
    assert seen[4]["tokens"] < seen[0]["tokens"]
    for bad in ("5", "-1", "x"):
        r = await client.get(f"/v1/users/lv/items/{iid}", params={"level": bad}, headers=tenant.agent)
        assert r.status_code == 422 and "level" in r.text, r.text


async def test_get_item_by_handle_expands_a_shortened_item(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    """A handle is the end of an item's id (what a window shows before a shortened item): unique → the item,
    ending several of the user's ids → 409 ambiguous-handle listing them, ending none → 404."""
    content = "Review 3 of the orders replica lag, finding 0: " + "the replica fell behind by 40 seconds. " * 40
    r = await client.post("/v1/users/hd/items", json={"type": "tool_result", "content": content}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    iid = r.json()["id"]
    handle = iid[-8:]
    for ref in (handle, handle.upper(), iid[-13:], iid):
        got = await client.get(f"/v1/users/hd/items/{ref}", params={"level": 0}, headers=tenant.agent)
        assert got.status_code == 200, got.text
        assert got.json()["id"] == iid and got.json()["at_level"]["text"] == content
    # L4 of a long item is its index line, named by its handle as a window shows it.
    l4 = (await client.get(f"/v1/users/hd/items/{handle}", params={"level": 4}, headers=tenant.agent)).json()
    assert l4["at_level"]["text"].startswith(f"[{handle}] [ctx: tool_result: Review 3 of the")
    # Another user's handle names nothing here; nor does a handle of no item.
    assert (await client.get(f"/v1/users/other/items/{handle}", headers=tenant.agent)).status_code == 404
    missing = await client.get("/v1/users/hd/items/deadbeef", headers=tenant.agent)
    assert missing.status_code == 404 and missing.json()["type"] == "urn:ctxmem:problem:item-not-found"
    for bad in ("abc", "not-hex-at-all", "0" * 37):
        assert (await client.get(f"/v1/users/hd/items/{bad}", headers=tenant.agent)).status_code == 422
    # A second item whose id ends alike (copied in SQL: ids are made by the service) makes the handle ambiguous.
    twin = await copy_with_same_handle(db, iid)
    amb = await client.get(f"/v1/users/hd/items/{handle}", params={"level": 0}, headers=tenant.agent)
    assert amb.status_code == 409 and amb.headers["content-type"].startswith("application/problem+json")
    body = amb.json()
    assert body["type"] == "urn:ctxmem:problem:ambiguous-handle" and sorted(body["candidates"]) == sorted([iid, twin])
    assert "more of the id" in body["detail"]
    longer = await client.get(f"/v1/users/hd/items/{iid[-13:]}", headers=tenant.agent)
    assert longer.status_code == 200 and longer.json()["id"] == iid


async def test_a_handle_is_found_by_its_index_not_by_reading_the_users_items(db: Database, tenant: TenantKeys) -> None:
    """GET …/items/{handle} and a search for a handle probe ix_context_item_handle (tenant, user, the id's last
    8 characters) for a user of 20,000 items, for a handle of 8 characters and a longer one. The lookup is
    planned for its values whatever the connection's plan mode (the reads pool forces generic plans, which in a
    table of many tenants may pick another index and read all of the user's items), and the mode is given back."""
    async with db.sessionmaker() as s:
        driver = await driver_connection(s)
        await driver.execute(
            "INSERT INTO end_user (tenant_id, user_id, created_at, updated_at) VALUES ($1, 'many', now(), now())",
            tenant.tenant_id,
        )
        await driver.execute(
            """
            INSERT INTO context_item (id, tenant_id, user_id, type, content, source, authority, scope, hard, kind,
                                      status, confidence, observed_at, created_at, updated_at, token_cost, token_model)
            SELECT ctxmem_uuid7(), $1, 'many', 'fact', 'note ' || g, 'user', 'user', 'user', false, 'fact',
                   'available', 0.9, now(), now(), now(), 2, 'o200k_base'
            FROM generate_series(1, 20000) g
            """,
            tenant.tenant_id,
        )
        await driver.execute("ANALYZE context_item")
        some = str(await driver.fetchval("SELECT id FROM context_item WHERE tenant_id = $1 LIMIT 1", tenant.tenant_id))
        for handle in (some[-8:], some[-13:]):
            found = await repository.find_by_handle(
                s, tenant_id=tenant.tenant_id, user_id="many", handle=handle, limit=10
            )
            assert [str(i.id) for i in found] == [some]
            stmt = repository.handle_query(tenant_id=tenant.tenant_id, user_id="many", handle=handle, limit=10)
            compiled = stmt.compile(dialect=asyncpg_dialect())
            sql, values = str(compiled), [compiled.params[k] for k in compiled.positiontup or ()]
            bound = ", ".join("'" + str(v).replace("'", "''") + "'" for v in values)
            await driver.execute("SET plan_cache_mode = force_custom_plan")  # as find_by_handle plans it
            await driver.execute(f"PREPARE by_handle AS {sql}")
            try:
                plan = "\n".join(r[0] for r in await driver.fetch(f"EXPLAIN EXECUTE by_handle({bound})"))
            finally:
                await driver.execute("DEALLOCATE by_handle")
            await driver.execute("RESET plan_cache_mode")
            assert "ix_context_item_handle" in plan and "Seq Scan" not in plan, plan
        # The connection's own mode is back after a lookup (here the reads pool's).
        await driver.execute("SET plan_cache_mode = force_generic_plan")
        await repository.find_by_handle(s, tenant_id=tenant.tenant_id, user_id="many", handle=some[-8:], limit=10)
        assert await driver.fetchval("SELECT current_setting('plan_cache_mode')") == "force_generic_plan"
        await driver.execute("RESET plan_cache_mode")
