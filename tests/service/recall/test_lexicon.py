"""The per-process copy of a user's lexical index (service/recall/lexicon.py): it ranks exactly as
PostgreSQL does, and a change to the user's texts — a new item, a superseding write, a tombstone, an
erasure, an expiry — is seen by the next ranking; changes the worker has not applied yet are searched from
their text, as without the copy."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from service.caches import ProcessCaches
from service.db.engine import Database, session_scope
from service.recall import lexicon
from service.recall.repository import lexical_ranking
from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys

NOW = datetime.now(UTC)
WORDS = [
    "replica",
    "lag",
    "orders",
    "batch",
    "night",
    "cache",
    "session",
    "team",
    "deploy",
    "review",
    "budget",
    "invoice",
    "walrus",
]


async def seed(client: httpx.AsyncClient, tenant: TenantKeys, user: str, items: list[dict[str, Any]]) -> list[str]:
    r = await client.post(f"/v1/users/{user}/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return [i["id"] for i in r.json()["items"]]


# The process's caches, as the app's would hold them: a new set for each test (``fresh_copies``).
CACHES = ProcessCaches()


async def rank(db: Database, tenant: TenantKeys, user: str, query: str, *, copy: bool, now: datetime = NOW) -> Any:
    async with session_scope(db) as s:
        hits, _, _ = await lexical_ranking(
            s, caches=CACHES, tenant_id=tenant.tenant_id, user_id=user, query=query, limit=30, now=now, documents=60,
            lexicon_texts=5_000 if copy else 0, lexicon_postings=1_000_000,
        )  # fmt: skip
    return hits


@pytest.fixture(autouse=True)
def fresh_copies() -> Any:
    CACHES.clear()
    yield
    CACHES.clear()


async def test_the_copy_ranks_as_postgresql_does(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    rnd = random.Random(5)
    texts = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 12))) + "." for _ in range(60)]
    await seed(client, tenant, "same", [{"type": "episode", "content": t} for t in texts])
    await vectors.worker.drain()
    first = CACHES.lexicons.stores
    for query in ("replica lag", "orders batch at night", "walrus", "the team's budget review", "nothing here"):
        stored = CACHES.lexicons.stores
        copied = await rank(db, tenant, "same", query, copy=True)
        assert copied == await rank(db, tenant, "same", query, copy=False), query
        assert CACHES.lexicons.stores - stored <= 1
    assert len(CACHES.lexicons) == 1 and CACHES.lexicons.stores == first + 1  # built once, used for every query


async def test_every_change_to_the_users_texts_is_seen(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    ids = await seed(client, tenant, "chg", [{"type": "episode", "content": f"walrus note {i}"} for i in range(5)])
    await vectors.worker.drain()
    assert {i for i, _ in await rank(db, tenant, "chg", "walrus", copy=True)} == set(ids)

    # Written but not yet indexed: searched from its text (the copy is not used while changes are queued).
    (new,) = await seed(client, tenant, "chg", [{"type": "episode", "content": "walrus colony count"}])
    assert new in {i for i, _ in await rank(db, tenant, "chg", "walrus", copy=True)}
    await vectors.worker.drain()
    assert {i for i, _ in await rank(db, tenant, "chg", "walrus", copy=True)} == {*ids, new}

    # A tombstone, once applied, leaves the copy too.
    r = await client.delete(f"/v1/users/chg/items/{ids[0]}", headers=tenant.agent)
    assert r.status_code == 200, r.text
    await vectors.worker.drain()
    after = await rank(db, tenant, "chg", "walrus", copy=True)
    assert {i for i, _ in after} == {*ids[1:], new}
    assert after == await rank(db, tenant, "chg", "walrus", copy=False)

    # An erased user has nothing left to rank.
    r = await client.delete("/v1/users/chg", headers=tenant.admin)
    assert r.status_code in (200, 202, 204), r.text
    await vectors.worker.drain()
    assert await rank(db, tenant, "chg", "walrus", copy=True) == []


async def test_an_expired_text_is_left_out_at_the_time_it_expires(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    soon = NOW + timedelta(hours=1)
    lasting, expiring = await seed(client, tenant, "exp", [
        {"type": "fact", "content": "The walrus tank holds salt water."},
        {"type": "fact", "content": "The walrus show starts at noon.", "expires_at": soon.isoformat()},
    ])  # fmt: skip
    await vectors.worker.drain()
    for copy in (True, False):
        assert {i for i, _ in await rank(db, tenant, "exp", "walrus", copy=copy)} == {lasting, expiring}
        later = await rank(db, tenant, "exp", "walrus", copy=copy, now=soon + timedelta(seconds=1))
        assert {i for i, _ in later} == {lasting}


async def test_a_user_with_more_texts_than_the_limit_is_ranked_in_postgresql(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    await seed(client, tenant, "big", [{"type": "episode", "content": f"walrus fact {i}"} for i in range(12)])
    await vectors.worker.drain()
    async with session_scope(db) as s:
        hits, _, _ = await lexical_ranking(
            s, caches=CACHES, tenant_id=tenant.tenant_id, user_id="big", query="walrus", limit=30, now=NOW,
            lexicon_texts=10, lexicon_postings=1_000_000,
        )  # fmt: skip
    assert len(hits) == 12 and len(CACHES.lexicons) == 0


async def test_the_copy_follows_changes_by_delta_and_by_reconciling(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    """New rows are read by seq alone; a row written with a smaller seq than the copy has seen (a
    transaction that committed late) or removed is found by listing the user's (id, seq) pairs."""
    ids = await seed(client, tenant, "sync", [{"type": "episode", "content": f"walrus log {i}"} for i in range(8)])
    await vectors.worker.drain()
    key = (tenant.tenant_id, "sync")
    await rank(db, tenant, "sync", "walrus", copy=True)
    assert CACHES.lexicons.peek(key) is None  # a user's first ranking builds no copy: ranked in PostgreSQL
    await rank(db, tenant, "sync", "walrus", copy=True)
    first = CACHES.lexicons.peek(key)
    assert isinstance(first, lexicon.Lexicon) and len(first.at) == 8

    (new,) = await seed(client, tenant, "sync", [{"type": "episode", "content": "walrus sighting at dawn"}])
    await vectors.worker.drain()
    assert new in {i for i, _ in await rank(db, tenant, "sync", "walrus", copy=True)}
    grown = CACHES.lexicons.peek(key)
    assert isinstance(grown, lexicon.Lexicon)
    assert grown.keys[:8] == first.keys and len(grown.keys) == 9  # added to, not built again

    async with session_scope(db) as s:  # a re-index that committed late: a smaller seq than any seen
        await s.execute(
            text("UPDATE item_search SET tsv = to_tsvector('simple', 'narwhal tusk'), seq = 1 WHERE item_id = :i"),
            {"i": ids[3]},
        )
    assert [i for i, _ in await rank(db, tenant, "sync", "narwhal", copy=True)] == [ids[3]]
    assert ids[3] not in {i for i, _ in await rank(db, tenant, "sync", "walrus", copy=True)}
    for query in ("walrus", "narwhal", "dawn"):
        assert await rank(db, tenant, "sync", query, copy=True) == await rank(db, tenant, "sync", query, copy=False)

    for gone in ids[:4]:  # removed: masked, then built anew once they are a quarter of the copy
        r = await client.delete(f"/v1/users/sync/items/{gone}", headers=tenant.agent)
        assert r.status_code == 200, r.text
        await vectors.worker.drain()
        assert await rank(db, tenant, "sync", "walrus", copy=True) == await rank(
            db, tenant, "sync", "walrus", copy=False
        )
    last = CACHES.lexicons.peek(key)
    assert isinstance(last, lexicon.Lexicon) and len(last.at) == 5 and last.dead <= 0.25 * 5


async def test_texts_written_since_come_with_the_rankings_first_statement(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a turn is stored, the copy is brought up to date from the rows the ranking's first statement
    read with the version: no statement of its own (here both of the copy's own statements would fail)."""
    await seed(client, tenant, "turns", [{"type": "episode", "content": f"walrus log {i}"} for i in range(6)])
    await vectors.worker.drain()
    for _ in range(2):  # the second ranking builds the copy
        await rank(db, tenant, "turns", "walrus", copy=True)
    built = lexicon.held(CACHES.lexicons, tenant.tenant_id, "turns")
    assert built is not None and len(built.at) == 6
    monkeypatch.setattr(lexicon, "_DELTA", "SELECT no_such_column FROM item_search")
    monkeypatch.setattr(lexicon, "_RECONCILE", "SELECT no_such_column FROM item_search")
    for i in range(3):
        (new,) = await seed(client, tenant, "turns", [{"type": "episode", "content": f"walrus turn {i} at dawn"}])
        await vectors.worker.drain()
        hits = await rank(db, tenant, "turns", "dawn", copy=True)
        assert new in {h for h, _ in hits}
        assert hits == await rank(db, tenant, "turns", "dawn", copy=False)
    grown = lexicon.held(CACHES.lexicons, tenant.tenant_id, "turns")
    assert grown is not None and len(grown.at) == 9 and grown.keys[:6] == built.keys
