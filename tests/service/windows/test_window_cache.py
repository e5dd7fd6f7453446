"""The per-process window cache (``ProcessCaches.windows``, service/caches.py): a window served from it is
byte for byte the window built from a fresh fetch, and every change to what a window reads — whoever makes it,
however it is made — sends the next request back to the database."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pydantic_core
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from schemas.items import ItemCreate
from schemas.windows import WindowRequest
from service.auth.principal import Principal
from service.caches import ProcessCaches, WindowCache, app_caches
from service.clock import Clock
from service.context import RequestContext
from service.db.engine import Database
from service.db.selection import Selection
from service.items.service import create_items
from service.recall import repository as recall_repository
from service.settings import Settings
from service.windows import repository
from service.windows.service import build_window
from tests.conftest import TenantKeys

USER = "cache-user"
ITEMS = f"/v1/users/{USER}/items"
BODY: dict[str, Any] = {"input": "Which cache should the small team pick?", "max_tokens": 100_000, "session_id": "s1"}

# The caches the repository's reads share within this module's tests, as one process's would.
CACHES = ProcessCaches()


@dataclass
class Windows:
    """Builds one user's window through the service, with the cache and without it."""

    db: Database
    app: FastAPI
    settings: Settings
    tenant: TenantKeys

    @property
    def caches(self) -> ProcessCaches:
        return app_caches(self.app.state)

    async def build(self, body: dict[str, Any], *, cache: bool, now: datetime) -> bytes:
        settings = self.settings if cache else self.settings.replace(window_cache_entries=0)
        principal = Principal(tenant_id=self.tenant.tenant_id, key_id=uuid.uuid4(), role="agent")
        async with self.db.sessionmaker() as session:
            ctx = RequestContext(session, principal, settings, self.app.state.tokenizer, now, caches=self.caches)
            window = await build_window(ctx, user_id=USER, req=WindowRequest.model_validate(body))
            await session.rollback()
        return pydantic_core.to_json(window)

    async def pair(self, body: dict[str, Any] | None = None, *, now: datetime | None = None) -> tuple[bytes, bool]:
        """The window through the cache, checked equal to the uncached one; and whether it was a hit."""
        body = body or BODY
        now = now or Clock().now()
        hits = self.caches.windows.hits
        cached = await self.build(body, cache=True, now=now)
        hit = self.caches.windows.hits > hits
        assert cached == await self.build(body, cache=False, now=now)
        return cached, hit


@pytest.fixture
def windows(db: Database, app: FastAPI, settings: Settings, tenant: TenantKeys) -> Windows:
    return Windows(db, app, settings, tenant)


async def seed(client: httpx.AsyncClient, tenant: TenantKeys, *, tool_expires_at: datetime | None = None) -> None:
    tool: dict[str, Any] = {"type": "tool_result", "content": '{"qps": 50000, "p99_ms": 12}', "source": "tool"}
    if tool_expires_at is not None:
        tool["expires_at"] = tool_expires_at.isoformat()
    items = [
        {"type": "constraint", "content": "Don't recommend Redis Cluster.", "hard": True, "source": "user"},
        {"type": "fact", "content": "The ops team is small (2 people).", "source": "user"},
        {"type": "fact", "content": "budget is 300", "key": "budget", "value": 300, "source": "user"},
        {"type": "decision", "content": "We use PostgreSQL 17.", "source": "user"},
        {"type": "goal", "content": "Pick a cache for session data", "source": "user"},
        tool,
        {"type": "fact", "content": "only in session s1", "scope": "session", "session_id": "s1"},
        {"type": "fact", "content": "only in session s2", "scope": "session", "session_id": "s2"},
    ] + [{"type": "episode", "content": f"turn {i}: compared caches " + "latency words " * 20} for i in range(12)]
    r = await client.post(ITEMS + "/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    obs = {"dimension": "preference", "key": "brand", "value": "memcached", "context": "chat"}
    for session in ("a", "b"):
        r = await client.post(
            f"/v1/users/{USER}/observations", json={**obs, "session_id": session}, headers=tenant.agent
        )
        assert r.status_code in (200, 201), r.text


async def items_of(client: httpx.AsyncClient, tenant: TenantKeys) -> list[dict[str, Any]]:
    r = await client.get(ITEMS + "?limit=500&order=asc", headers=tenant.agent)
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


async def test_a_cached_window_is_the_fresh_one_byte_for_byte(
    client: httpx.AsyncClient, tenant: TenantKeys, windows: Windows
) -> None:
    await seed(client, tenant)
    bodies: list[dict[str, Any]] = [
        BODY,
        {**BODY, "max_tokens": 400},  # compact: index lines and drops
        {**BODY, "max_tokens": 900, "goal": "Pick a cache", "query": "latency of caches"},
        {**BODY, "session_id": "s2", "task_id": "t1", "plan": "1. list 2. compare", "domains": ["phone"]},
        {
            "input": "and now?",
            "context_limit": 2000,
            "reserve_tokens": 500,
            "messages": [{"role": "user", "content": "old question " * 40}, {"role": "user", "content": "and now?"}],
        },
    ]
    hits = []
    for body in bodies:
        hits.append((await windows.pair(body))[1])
        _, hit = await windows.pair(body)
        assert hit  # the same rows: served from the cache, and still equal to a fresh build
    # Budget, goal, plan, query and history are the request's own: they share the selection's entry.
    assert hits == [False, True, True, False, False]


async def _write(client: httpx.AsyncClient, tenant: TenantKeys, items: list[dict[str, Any]]) -> None:
    r = await client.post(ITEMS, json={"type": "fact", "content": "A new fact about Memcached.", "source": "user"},
                          headers=tenant.agent)  # fmt: skip
    assert r.status_code == 201


async def _delete(client: httpx.AsyncClient, tenant: TenantKeys, items: list[dict[str, Any]]) -> None:
    target = next(i for i in items if i["content"].startswith("The ops team"))
    assert (await client.delete(f"{ITEMS}/{target['id']}", headers=tenant.agent)).status_code in (200, 204)


async def _supersede(client: httpx.AsyncClient, tenant: TenantKeys, items: list[dict[str, Any]]) -> None:
    r = await client.post(ITEMS, json={"type": "fact", "content": "budget is 800", "key": "budget", "value": 800,
                                       "source": "user"}, headers=tenant.agent)  # fmt: skip
    assert r.json()["resolution"]["outcome"] == "replaced"


async def _reinforce(client: httpx.AsyncClient, tenant: TenantKeys, items: list[dict[str, Any]]) -> None:
    # Same slot, same value: the active row only gains confidence and a supporting write.
    r = await client.post(ITEMS, json={"type": "fact", "content": "budget is 300", "key": "budget", "value": 300,
                                       "source": "user"}, headers=tenant.agent)  # fmt: skip
    assert r.json()["resolution"]["outcome"] == "reinforced"


async def _observe(client: httpx.AsyncClient, tenant: TenantKeys, items: list[dict[str, Any]]) -> None:
    obs = {"dimension": "preference", "key": "tone", "value": "terse", "context": "chat", "session_id": "s1"}
    r = await client.post(f"/v1/users/{USER}/observations", json=obs, headers=tenant.agent)
    assert r.status_code in (200, 201), r.text


async def _confirm(client: httpx.AsyncClient, tenant: TenantKeys, items: list[dict[str, Any]]) -> None:
    profile = (await client.get(f"/v1/users/{USER}/profile", headers=tenant.agent)).json()
    (entry_id,) = [e["id"] for domains in profile["tiers"].values() for es in domains.values() for e in es]
    r = await client.post(f"/v1/users/{USER}/profile/{entry_id}/confirm", json={}, headers=tenant.agent)
    assert r.status_code == 200, r.text


async def _erase(client: httpx.AsyncClient, tenant: TenantKeys, items: list[dict[str, Any]]) -> None:
    assert (await client.delete(f"/v1/users/{USER}", headers=tenant.admin)).status_code == 200


CHANGES: dict[str, Callable[[httpx.AsyncClient, TenantKeys, list[dict[str, Any]]], Awaitable[None]]] = {
    "write": _write,
    "delete": _delete,
    "supersede": _supersede,
    "reinforce": _reinforce,
    "observation": _observe,
    "confirm": _confirm,
    "erase": _erase,
}


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_every_change_sends_the_next_window_to_the_database(
    change: str, client: httpx.AsyncClient, tenant: TenantKeys, windows: Windows
) -> None:
    await seed(client, tenant)
    before, _ = await windows.pair()
    _, hit = await windows.pair()
    assert hit
    await CHANGES[change](client, tenant, await items_of(client, tenant))
    after, hit = await windows.pair()  # equal to a fresh build (checked inside)
    assert not hit
    assert after != before


async def test_a_change_that_leaves_updated_at_alone_is_seen(
    client: httpx.AsyncClient, tenant: TenantKeys, windows: Windows, db: Database
) -> None:
    """Any UPDATE writes a new row version: the cache does not rely on the writer bumping updated_at."""
    await seed(client, tenant)
    before, _ = await windows.pair()
    _, hit = await windows.pair()
    assert hit
    async with db.engine.begin() as conn:
        changed = await conn.execute(
            text("UPDATE context_item SET content = content || ' (edited)' WHERE tenant_id = :t AND type = 'decision'"),
            {"t": tenant.tenant_id},
        )
        assert changed.rowcount == 1
    after, hit = await windows.pair()
    assert not hit
    assert "We use PostgreSQL 17. (edited)" in after.decode() and after != before


async def test_an_item_passing_its_expiry_is_seen(
    client: httpx.AsyncClient, tenant: TenantKeys, windows: Windows
) -> None:
    # Windows asked at noon UTC tomorrow (no midnight, when values' ages change and every entry is renewed, in
    # the next 31 minutes, whatever time the test runs at), the tool result expiring 30 minutes after it.
    now = (Clock().now() + timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    await seed(client, tenant, tool_expires_at=now + timedelta(minutes=30))
    before, _ = await windows.pair(now=now)
    _, hit = await windows.pair(now=now + timedelta(minutes=29))
    assert hit  # nothing changed and nothing expired yet
    after, hit = await windows.pair(now=now + timedelta(minutes=31))
    assert not hit
    assert "stale tool result" in after.decode() and "stale tool result" not in before.decode()


async def test_selections_have_their_own_entries(
    client: httpx.AsyncClient, tenant: TenantKeys, windows: Windows
) -> None:
    await seed(client, tenant)
    s1, _ = await windows.pair({**BODY, "session_id": "s1"})
    s2, _ = await windows.pair({**BODY, "session_id": "s2"})
    assert "only in session s1" in s1.decode() and "only in session s2" not in s1.decode()
    assert "only in session s2" in s2.decode() and "only in session s1" not in s2.decode()
    for session in ("s1", "s2"):
        _, hit = await windows.pair({**BODY, "session_id": session})
        assert hit


async def test_a_transaction_that_wrote_neither_reads_nor_fills_the_cache(
    client: httpx.AsyncClient, tenant: TenantKeys, windows: Windows, db: Database, app: FastAPI, settings: Settings
) -> None:
    await seed(client, tenant)
    await windows.pair()
    principal = Principal(tenant_id=tenant.tenant_id, key_id=uuid.uuid4(), role="agent")
    cache = app_caches(app.state).windows
    counts = (cache.hits, cache.misses, cache.stores)
    async with db.sessionmaker() as session:
        ctx = RequestContext(
            session, principal, settings, app.state.tokenizer, Clock().now(), caches=app_caches(app.state)
        )
        await create_items(
            ctx, user_id=USER, items=[ItemCreate(type="fact", content="uncommitted fact", source="user")], batch=False
        )
        window = await build_window(ctx, user_id=USER, req=WindowRequest.model_validate(BODY))
        await session.rollback()
    assert "uncommitted fact" in window["text"]
    assert (cache.hits, cache.misses, cache.stores) == counts
    after, hit = await windows.pair()
    assert hit and "uncommitted fact" not in after.decode()


async def test_concurrent_requests_share_the_cache(
    client: httpx.AsyncClient, tenant: TenantKeys, windows: Windows
) -> None:
    await seed(client, tenant)
    now = Clock().now()
    fresh = await windows.build(BODY, cache=False, now=now)
    together = await asyncio.gather(*(windows.build(BODY, cache=True, now=now) for _ in range(6)))
    assert set(together) == {fresh}
    assert await windows.build(BODY, cache=True, now=now) == fresh


@dataclass
class Entry:
    version: tuple[int, int, int, int]
    rows: int
    valid_from: datetime | None = None
    valid_until: datetime | None = None

    def valid_at(self, now: datetime) -> bool:
        return self.valid_until is None or now < self.valid_until


def test_the_cache_is_bounded_by_entries_and_rows() -> None:
    cache, now, v = WindowCache(), Clock().now(), (1, 2, 3, 4)
    for k in "abc":
        cache.put(k, Entry(v, 10), max_entries=2, max_rows=100)
    assert cache.get("a", v, now) is None and cache.get("b", v, now) and cache.get("c", v, now)  # LRU: a went
    assert cache.get("b", v, now)  # b is now the most recent
    cache.put("d", Entry(v, 85), max_entries=10, max_rows=100)  # 10 + 10 + 85 > 100: the least recent (c) goes
    assert cache.get("c", v, now) is None and cache.get("b", v, now) and cache.rows == 95
    cache.put("e", Entry(v, 101), max_entries=10, max_rows=100)  # larger than the whole budget: not kept
    assert cache.get("e", v, now) is None and cache.rows == 95
    cache.put("b", Entry(v, 1), max_entries=10, max_rows=100)  # replacing an entry replaces its rows
    assert cache.rows == 86 and len(cache) == 2
    assert cache.get("b", (9, 9, 9, 9), now) is None  # another version: a miss
    cache.put("x", Entry(v, 1, valid_until=now), max_entries=10, max_rows=100)
    assert cache.get("x", v, now) is None  # past the first expiry it covers
    cache.put("y", Entry(v, 1), max_entries=0, max_rows=100)
    assert cache.get("y", v, now) is None  # turned off


async def test_a_state_rebuilt_after_an_item_write_keeps_the_profile_and_the_rows_it_held(
    client: httpx.AsyncClient, tenant: TenantKeys, windows: Windows, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an item is written the state is rebuilt, but the profile entries are not read again, nor the
    columns of rows the replaced state held; after an observation the entries are. Either way the window
    is the one a fresh build gives (``pair``)."""
    await seed(client, tenant)
    await windows.pair()
    reads: list[str] = []
    real_entries, real_items = repository.window_entries, repository.window_items

    async def entries(*args: Any, **kwargs: Any) -> Any:
        reads.append("entries")
        return await real_entries(*args, **kwargs)

    async def items(*args: Any, held: Any = (), **kwargs: Any) -> Any:
        reads.append(f"items held {len(held)}")
        return await real_items(*args, held=held, **kwargs)

    monkeypatch.setattr(repository, "window_entries", entries)
    monkeypatch.setattr(repository, "window_items", items)
    await _write(client, tenant, [])
    reads.clear()
    await windows.build(BODY, cache=True, now=Clock().now())
    (held,) = reads  # the items only, sent with the ids of the rows the state held
    assert held.startswith("items held ") and int(held.split()[-1]) > 10
    await _observe(client, tenant, [])
    reads.clear()
    after, hit = await windows.pair()
    assert not hit and "entries" in reads[:2] and "terse" in after.decode()


async def test_rows_held_are_read_again_only_in_a_new_version(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    """``repository.window_items`` with the ids of rows it read before returns what a full read returns,
    the unchanged rows as the records it holds and a row updated since as read now."""
    items = [{"type": "constraint", "content": f"rule {i}", "source": "user"} for i in range(3)]
    r = await client.post(ITEMS + "/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    selection = Selection(
        tenant_id=tenant.tenant_id,
        user_id=USER,
        session_id=None,
        task_id=None,
        stage_id=None,
        step_id=None,
        domains=None,
    )
    async with db.sessionmaker() as session:
        first, _ = await repository.window_items(session, caches=CACHES, selection=selection, recent=5)
        ids = [str(r["id"]) for r in first]
        await session.execute(
            text("UPDATE context_item SET content = 'rule edited' WHERE tenant_id = :t AND id = :i"),
            {"t": tenant.tenant_id, "i": ids[1]},
        )
        again, _ = await repository.window_items(session, caches=CACHES, selection=selection, recent=5, held=ids)
        full, _ = await repository.window_items(session, caches=CACHES, selection=selection, recent=5)
        await session.rollback()
    assert len(first) == 3
    columns = list(full[0].keys())  # a held read also says which rows it sent without their columns
    assert [[r[c] for c in columns] for r in again] == [[r[c] for c in columns] for r in full]
    assert again[0] is first[0] and again[2] is first[2]
    assert again[1] is not first[1] and again[1]["content"] == "rule edited"


async def test_retrieved_rows_held_are_read_again_only_in_a_new_version(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    """``repository.retrieved_items`` returns the given ids in the given order; rows it read before in the
    same version come back as the records it holds (their columns not sent), a row updated since as read
    now, a row never read in full — wherever they stand among the ids."""
    items = [{"type": "fact", "content": f"retrieved fact {i}", "source": "user"} for i in range(5)]
    r = await client.post(ITEMS + "/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    ids = [i["id"] for i in r.json()["items"]]
    selection = Selection(tenant_id=tenant.tenant_id, user_id=USER)
    async with db.sessionmaker() as session:
        now = datetime(2000, 1, 1, tzinfo=UTC)  # before any expiry: every item is in force
        first = await repository.retrieved_items(session, caches=CACHES, selection=selection, ids=ids[:4], now=now)
        await session.execute(
            text("UPDATE context_item SET content = 'retrieved fact edited' WHERE tenant_id = :t AND id = :i"),
            {"t": tenant.tenant_id, "i": ids[2]},
        )
        order = [ids[4], ids[3], ids[2], ids[0], ids[1]]  # a new one first, the held ones out of order
        again = await repository.retrieved_items(session, caches=CACHES, selection=selection, ids=order, now=now)
        await session.rollback()
    held = {str(row["id"]): row for row, _ in first}
    assert [str(row["id"]) for row, _ in again] == order
    assert all(fits for _, fits in again)
    for row, _ in again:
        i = str(row["id"])
        if i in (ids[0], ids[1], ids[3]):
            assert row is held[i]
        else:
            assert row is not held.get(i) and row["content"] is not None
    assert {str(row["id"]): row["content"] for row, _ in again} == {
        ids[0]: "retrieved fact 0",
        ids[1]: "retrieved fact 1",
        ids[2]: "retrieved fact edited",
        ids[3]: "retrieved fact 3",
        ids[4]: "retrieved fact 4",
    }


async def test_retrieved_rows_the_conversation_context_checked_are_taken_without_a_read(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The conversation context reads, for a window's selection, each scored row's version and whether the
    window may show it now. Given that, ``retrieved_items`` leaves out the rows it may not show, takes the
    rows this process holds in that version as held, and reads only the others: the same rows, in the same
    order and with the same scopes, as its own read of all of them."""
    items: list[dict[str, Any]] = [{"type": "fact", "content": f"checked fact {i}", "source": "user"} for i in range(6)]
    items[4]["domain"] = "sales"  # outside the window's domains
    items[5].update(scope="session", session_id="s2")  # another session's: recalled, not applicable
    r = await client.post(ITEMS + "/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    ids = [i["id"] for i in r.json()["items"]]
    selection = Selection(tenant_id=tenant.tenant_id, user_id=USER, session_id="s1", domains=("ops",))
    now = datetime(2000, 1, 1, tzinfo=UTC)
    order = [ids[5], ids[4], ids[3], ids[2], ids[1], ids[0], str(uuid.uuid4())]  # and one not the user's
    read: list[list[str]] = []
    real_read = repository._read_retrieved

    async def spy(session: Any, held: Any, *, selection: Selection, ids: list[str], now: datetime) -> Any:
        read.append(list(ids))
        return await real_read(session, held, selection=selection, ids=ids, now=now)

    async def checked() -> dict[str, recall_repository.Checked | None]:
        context = await recall_repository.conversation_context(
            session, tenant_id=tenant.tenant_id, user_id=USER, ids=order, sources=[], reach=0, now=now,
            selection=selection,
        )  # fmt: skip
        return context.checked

    async with db.sessionmaker() as session:
        first = await repository.retrieved_items(session, caches=CACHES, selection=selection, ids=ids[:3], now=now)
        for sql in ("SET content = 'checked fact edited'", "SET status = 'superseded'"):
            await session.execute(
                text(f"UPDATE context_item {sql} WHERE tenant_id = :t AND id = :i"),
                {"t": tenant.tenant_id, "i": ids[1] if "content" in sql else ids[2]},
            )
        monkeypatch.setattr(repository, "_read_retrieved", spy)
        seen = await checked()
        taken = await repository.retrieved_items(
            session, caches=CACHES, selection=selection, ids=order, now=now, checked=seen
        )
        again = await repository.retrieved_items(
            session, caches=CACHES, selection=selection, ids=order, now=now, checked=await checked()
        )
        monkeypatch.undo()
        full = await repository.retrieved_items(session, caches=CACHES, selection=selection, ids=order, now=now)
        await session.rollback()
    # the superseded row, the one outside the domains and the unknown id are checked unusable
    assert [i for i in order if seen.get(i, ()) is None] == [ids[4], ids[2], order[-1]]
    assert read == [[ids[5], ids[3], ids[1]]]  # the edited row and those never held; then nothing at all
    held = {str(row["id"]): row for row, _ in first}
    assert taken[-1][0] is held[ids[0]]
    expected = [(ids[5], False, "checked fact 5"), (ids[3], True, "checked fact 3"),
                (ids[1], True, "checked fact edited"), (ids[0], True, "checked fact 0")]  # fmt: skip
    for got in (taken, again, full):
        assert [(str(row["id"]), fits, row["content"]) for row, fits in got] == expected
