"""The window's retrieve step (docs/design.md §3.6 step 1, §3.8): hybrid relevance decides what holds out under
pressure and brings relevant items from outside the window's scopes; without the index the window is
still served, ranked by PostgreSQL alone, and says ``degraded``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from schemas.windows import WindowResponse
from service.app import create_app
from service.caches import ProcessCaches
from service.db.engine import Database, session_scope
from service.recall.repository import lexical_ranking
from service.settings import Settings
from service.vectors.embedders import HashingEmbedder
from service.vectors.qdrant_edge import QdrantEdgeIndex
from service.vectors.recall import VectorRecall
from service.vectors.worker import OutboxWorker
from tests.conftest import TenantKeys

NOW = datetime.now(UTC)
TARGET = "We benchmarked Memcached against Redis: Memcached had the lower p99 latency for the session cache."
OTHERS = [
    "The team lunch moved to Thursdays at noon in the small meeting room.",
    "Alice prefers reviewing pull requests in the morning before standup.",
    "The office printer on the second floor needs a new toner cartridge.",
    "Quarterly planning is scheduled for the first week of next month.",
    "Bob is on vacation until the fourteenth and Carol covers his on-call.",
    "The design review for the onboarding flow was postponed by a week.",
    "Our CI runners were upgraded to the new base image on Monday.",
    "Marketing asked for screenshots of the dashboard for the newsletter.",
    "The wiki page about expense reports was rewritten for clarity.",
    "Somebody left an umbrella in the lobby and reception is keeping it.",
]
INPUT = "Let's continue where we left off."


async def seed(client: httpx.AsyncClient, tenant: TenantKeys, user: str, items: list[dict[str, Any]]) -> list[str]:
    r = await client.post(f"/v1/users/{user}/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return [i["id"] for i in r.json()["items"]]


async def window(client: httpx.AsyncClient, tenant: TenantKeys, user: str, **body: Any) -> dict[str, Any]:
    body.setdefault("input", INPUT)
    body.setdefault("detail", "full")  # these tests read why each item was left out
    r = await client.post(f"/v1/users/{user}/window", json=body, headers=tenant.agent)
    assert r.status_code == 200, r.text
    WindowResponse.model_validate_json(r.content)
    out: dict[str, Any] = r.json()
    return out


def placed(w: dict[str, Any]) -> dict[str, tuple[int, str]]:
    """Item id → (level, reason) of everything the window placed."""
    return {p["id"]: (p["level"], p["reason"]) for s in w["sections"] for p in s["items"]}


async def memory(client: httpx.AsyncClient, tenant: TenantKeys, user: str) -> str:
    """The target, oldest of all, then ten unrelated episodes, newer and newer; returns the target's id."""
    ep = {"type": "episode", "source": "summary"}
    items = [{**ep, "content": TARGET, "observed_at": (NOW - timedelta(days=90)).isoformat()}] + [
        {**ep, "content": c, "observed_at": (NOW - timedelta(days=9 - i)).isoformat()} for i, c in enumerate(OTHERS)
    ]
    return (await seed(client, tenant, user, items))[0]


def turn(session: str, minute: int, content: str, **kw: Any) -> dict[str, Any]:
    """A conversation turn of ``session``, ``minute`` minutes into a day 40 days before NOW."""
    at = (NOW - timedelta(days=40) + timedelta(minutes=minute)).isoformat()
    return {"type": "episode", "source": "summary", "session_id": session, "observed_at": at, "content": content, **kw}


async def squeezed_budget(client: httpx.AsyncClient, tenant: TenantKeys, user: str, target: str) -> int:
    """The largest budget at which, with a query matching nothing, the target is dropped: recency alone
    puts the oldest item first in line to give way."""
    full = await window(client, tenant, user, max_tokens=4000, query="qqqq")
    assert placed(full)[target][0] == 0
    budget = full["tokens"]["used"]
    while budget > 0:
        w = await window(client, tenant, user, max_tokens=budget, query="qqqq")
        if target not in placed(w):
            assert [o["id"] for o in w["omitted"]] == [target]
            return budget
        budget -= 2
    raise AssertionError("no budget squeezes the target")


def kept_instead(w: dict[str, Any], target: str) -> bool:
    """The target is in the window and something else was dropped in its place."""
    return target in placed(w) and bool(w["omitted"]) and target not in {o["id"] for o in w["omitted"]}


@pytest.fixture
async def client_for(db: Database, settings: Settings, vectors: VectorRecall) -> AsyncIterator[Any]:
    """A client of an app with other settings or another vector stack (``vectors=None``: recall off)."""
    clients: list[httpx.AsyncClient] = []

    async def make(vecs: VectorRecall | None = vectors, **overrides: Any) -> httpx.AsyncClient:
        app = create_app(settings.replace(**overrides), database=db, vectors=vecs)
        c = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test")
        clients.append(c)
        return c

    yield make
    for c in clients:
        await c.aclose()


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
async def test_a_relevant_old_item_holds_out_where_recency_alone_drops_it(
    client_for: Any, tenant: TenantKeys, vectors: VectorRecall, mode: str
) -> None:
    client = await client_for(recall_mode=mode)
    target = await memory(client, tenant, "r")
    await vectors.worker.drain()
    budget = await squeezed_budget(client, tenant, "r", target)
    w = await window(client, tenant, "r", max_tokens=budget, query="what was the Memcached p99 latency?")
    assert kept_instead(w, target), w
    assert w["warnings"] == []
    assert placed(w)[target][1].endswith("; relevance 1.00; kept whole")  # the reason names what kept it


async def test_the_query_defaults_to_the_input(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    target = await memory(client, tenant, "d")
    await vectors.worker.drain()
    budget = await squeezed_budget(client, tenant, "d", target)
    w = await window(client, tenant, "d", max_tokens=budget, input="Remind me: Memcached p99 latency?")
    assert kept_instead(w, target)


async def test_modes_differ_a_misspelling_is_found_by_vectors_only(
    client_for: Any, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    """The hashing embedder's character n-grams survive a typo; full-text search does not."""
    lexical, vector = await client_for(recall_mode="lexical"), await client_for(recall_mode="vector")
    target = await memory(lexical, tenant, "m")
    await vectors.worker.drain()
    budget = await squeezed_budget(lexical, tenant, "m", target)
    typo = "Memcahced benchmrak latnecy?"
    assert target not in placed(await window(lexical, tenant, "m", max_tokens=budget, query=typo))
    assert kept_instead(await window(vector, tenant, "m", max_tokens=budget, query=typo), target)


async def test_relevant_items_of_other_sessions_are_recalled_and_only_active_ones(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    s1 = {"scope": "session", "session_id": "s1", "source": "user", "key": "kafka.retention"}
    kafka, old, gone, unrelated = await seed(
        client, tenant, "o",
        [
            {**s1, "type": "fact", "content": "Kafka topic retention is 14 days.", "value": 14},
            {**s1, "type": "fact", "content": "Kafka topic retention is 7 days.", "value": 7,
             "observed_at": (NOW - timedelta(days=3)).isoformat()},
            {**s1, "type": "fact", "content": "Kafka consumers retry three times before the dead letter topic.",
             "key": "kafka.retries"},
            {**s1, "type": "fact", "content": "The staging database is reset every night at two.", "key": "db.reset"},
        ],
    )  # fmt: skip
    await vectors.worker.drain()
    # deleted after the index had it: the index still answers with it until the outbox is applied
    assert (await client.delete(f"/v1/users/o/items/{gone}", headers=tenant.agent)).status_code == 200
    w = await window(client, tenant, "o", max_tokens=2000, session_id="s2", query="How long is Kafka retention?")
    got = placed(w)
    assert kafka in got and got[kafka][1].startswith("recalled: relevant to the query (fact from session s1)")
    assert next(s["id"] for s in w["sections"] if any(p["id"] == kafka for p in s["items"])) == "background"
    assert old not in got  # superseded
    assert gone not in got  # deleted, though still in the index
    assert unrelated not in got  # not relevant: session s1's items do not apply to s2 otherwise
    # A query about nothing in s1 recalls nothing from it
    w = await window(client, tenant, "o", max_tokens=2000, session_id="s2", query="qqqq")
    assert not {kafka, old, gone, unrelated} & set(placed(w))
    # and the session's own window has its items as usual, not as recalled
    w = await window(client, tenant, "o", max_tokens=2000, session_id="s1", query="Kafka retention")
    assert placed(w)[kafka][1] == "user-stated; relevance 1.00; kept whole" and unrelated in placed(w)


async def test_recall_limit_and_domains(client_for: Any, tenant: TenantKeys, vectors: VectorRecall) -> None:
    client = await client_for(recall_limit=2)
    ids = await seed(
        client, tenant, "l",
        [{"type": "fact", "scope": "session", "session_id": "a", "content": f"Kafka partition note number {i}.",
          "domain": "infra" if i % 2 else "sales"} for i in range(6)],
    )  # fmt: skip
    await vectors.worker.drain()
    w = await window(client, tenant, "l", max_tokens=3000, session_id="b", query="Kafka partition note")
    assert len(set(placed(w)) & set(ids)) == 2
    w = await window(
        client, tenant, "l", max_tokens=3000, session_id="b", query="Kafka partition note", domains=["infra"]
    )
    recalled = set(placed(w)) & set(ids)
    assert recalled and recalled <= {ids[i] for i in (1, 3, 5)}
    off = await client_for(recall_limit=0)
    w = await window(off, tenant, "l", max_tokens=3000, session_id="b", query="Kafka partition note")
    assert not set(placed(w)) & set(ids)


async def test_other_tenants_items_are_never_recalled(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys, vectors: VectorRecall
) -> None:
    theirs = await seed(client, other_tenant, "same", [{"type": "fact", "scope": "session", "session_id": "x",
                                                        "content": "Kafka retention is 30 days."}])  # fmt: skip
    await seed(client, tenant, "same", [{"type": "fact", "content": "Unrelated note about lunch."}])
    await vectors.worker.drain()
    w = await window(client, tenant, "same", max_tokens=2000, session_id="y", query="Kafka retention days")
    assert theirs[0] not in placed(w) and "30 days" not in w["text"]


async def test_recall_off_is_degraded_but_lexical_relevance_still_works(
    client_for: Any, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    client = await client_for(vecs=None)
    target = await memory(client, tenant, "n")
    budget = await squeezed_budget(client, tenant, "n", target)
    w = await window(client, tenant, "n", max_tokens=budget, query="Memcached p99 latency")
    assert any(x.startswith("degraded: vector recall is off") for x in w["warnings"])
    assert kept_instead(w, target)


async def test_index_down_is_degraded_and_served_from_postgresql(
    client_for: Any, tenant: TenantKeys, db: Database, settings: Settings, tmp_path: Path
) -> None:
    index = QdrantEdgeIndex(tmp_path / "down", dim=settings.vectors.embedding_dim)
    await index.ensure_collection()
    embedder = HashingEmbedder(dim=settings.vectors.embedding_dim)
    down = VectorRecall(index, embedder, OutboxWorker(db, index, embedder, batch_size=100, max_backoff=1))
    client = await client_for(vecs=down)
    target = await memory(client, tenant, "x")
    budget = await squeezed_budget(client, tenant, "x", target)
    await index.close()  # the index goes down
    w = await window(client, tenant, "x", max_tokens=budget, query="Memcached p99 latency")
    assert any(x.startswith("degraded: vector index unavailable") for x in w["warnings"]), w["warnings"]
    assert kept_instead(w, target)  # still ranked, by full-text search
    assert w["tokens"]["used"] <= budget


async def test_a_lagging_index_is_not_trusted(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    target = await memory(client, tenant, "g")
    await vectors.worker.drain()
    budget = await squeezed_budget(client, tenant, "g", target)
    async with db.engine.begin() as conn:  # a change queued an hour ago and never applied
        await conn.execute(
            text(
                "INSERT INTO vector_outbox (tenant_id, user_id, item_id, op, created_at, next_attempt_at) "
                "VALUES (:t, 'g', :i, 'sync', now() - interval '1 hour', now() + interval '1 hour')"
            ),
            {"t": tenant.tenant_id, "i": target},
        )
    try:
        w = await window(client, tenant, "g", max_tokens=budget, query="Memcached p99 latency")
        # an hour, plus the seconds the test took since (a loaded machine can take more than one)
        lags = [int(m.group(1)) for x in w["warnings"] if (m := re.search(r"vector index is (\d+)s behind", x))]
        assert lags and 3600 <= lags[0] < 3660, w["warnings"]
        assert kept_instead(w, target)
    finally:
        async with db.engine.begin() as conn:
            await conn.execute(text("DELETE FROM vector_outbox WHERE tenant_id = :t"), {"t": tenant.tenant_id})


async def test_another_users_backlog_does_not_degrade_this_users_window(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    """The lag probe asks about this user's own queued changes: every one of them is in the index, so
    its vector ranking is trusted, however long another user's change has waited."""
    target = await memory(client, tenant, "h")
    other = await memory(client, tenant, "h-other")
    await vectors.worker.drain()
    async with db.engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO vector_outbox (tenant_id, user_id, item_id, op, created_at, next_attempt_at) "
                "VALUES (:t, 'h-other', :i, 'sync', now() - interval '1 hour', now() + interval '1 hour')"
            ),
            {"t": tenant.tenant_id, "i": other},
        )
    try:
        w = await window(client, tenant, "h", max_tokens=4000, query="Memcached p99 latency")
        assert not any(x.startswith("degraded") for x in w["warnings"]), w["warnings"]
        assert any(p["id"] == target for s in w["sections"] for p in s["items"])
        lagging = await window(client, tenant, "h-other", max_tokens=4000, query="Memcached p99 latency")
        assert any("vector index is 3600s behind" in x for x in lagging["warnings"]), lagging["warnings"]
    finally:
        async with db.engine.begin() as conn:
            await conn.execute(text("DELETE FROM vector_outbox WHERE tenant_id = :t"), {"t": tenant.tenant_id})


async def test_lexical_index_is_maintained_by_the_worker(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    async def indexed() -> int:
        async with db.engine.connect() as conn:
            q = text("SELECT count(*) FROM item_search WHERE tenant_id = :t")
            return int((await conn.execute(q, {"t": tenant.tenant_id})).scalar_one())

    ids = await seed(client, tenant, "s", [{"type": "fact", "content": f"note {i} about queues"} for i in range(4)])
    assert await indexed() == 0  # off the write path

    async def found(query: str) -> set[str]:
        async with session_scope(db) as s:
            hits, _, _ = await lexical_ranking(
                s, caches=ProcessCaches(), tenant_id=tenant.tenant_id, user_id="s", query=query, limit=10, now=NOW
            )
            return {i for i, _ in hits}

    # Not yet indexed, still found: the lexical ranking reads the queued changes from their content.
    assert await found("queue") == set(ids)  # stemmed: queue ~ queues
    await vectors.worker.drain()
    assert await indexed() == 4
    assert await found("queue") == set(ids) and await found("lunch") == set()
    await client.delete(f"/v1/users/s/items/{ids[0]}", headers=tenant.agent)
    await vectors.worker.drain()
    assert await indexed() == 3
    await client.delete("/v1/users/s", headers=tenant.admin)
    await vectors.worker.drain()
    assert await indexed() == 0


NASTY_QUERIES = [
    "'",
    "\\",
    "a\\b",
    "E'x'",
    "!&|():*<->",
    "a:b c:*",
    "'; DROP TABLE item_search; --",
    "   ",
    "the and of",
    "😀",
    "𠜎𠜱",
    "x" * 30_000,
    "a " * 5_000,
    "<2> !!",
    "café ﬁ",
    "\u200b\u200d",
]


@pytest.mark.parametrize("query", NASTY_QUERIES)
async def test_any_query_text_is_searched_safely(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall, query: str
) -> None:
    """Query text reaches full-text search and the embedder: operators, quotes, backslashes, stop words
    only, emoji, huge inputs are searched as text (or match nothing), never an error."""
    await seed(client, tenant, "q", [{"type": "fact", "content": "a\\b E'x' café: the cache"}])
    for drained in (False, True):  # unindexed (analysed at query time), then from item_search
        if drained:
            await vectors.worker.drain()
        w = await window(client, tenant, "q", max_tokens=1000, query=query)
        assert w["warnings"] == [], w["warnings"]


async def test_rows_from_before_levels_give_the_same_window(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    """Rows written before compression levels were stored (level_texts NULL) get them derived on read —
    applicable and recalled rows alike — and the window is the same, byte for byte."""
    long = "Kafka retention was debated at length. " * 12
    await seed(client, tenant, "lg", [
        {"type": "fact", "content": long, "key": "kafka.retention", "value": {"days": 7}, "source": "user"},
        {"type": "tool_result", "content": '{"topic": "orders", "retention_days": 7, "partitions": 12}',
         "source": "tool", "variants": {"summary": "orders topic: 7 days"}},
        {"type": "episode", "content": long + "In session one.", "scope": "session", "session_id": "one"},
    ] + [{"type": "episode", "content": f"unrelated chatter {i} " * 8} for i in range(20)])  # fmt: skip
    await vectors.worker.drain()
    body = {"query": "Kafka retention days", "session_id": "two", "max_tokens": 260}
    before = await client.post("/v1/users/lg/window", json={"input": "retention?", **body}, headers=tenant.agent)
    async with db.engine.begin() as conn:
        n = await conn.execute(
            text("UPDATE context_item SET level_texts = NULL, level_tokens = NULL WHERE tenant_id = :t"),
            {"t": tenant.tenant_id},
        )
        assert n.rowcount == 23  # type: ignore[attr-defined]
    after = await client.post("/v1/users/lg/window", json={"input": "retention?", **body}, headers=tenant.agent)
    assert before.status_code == after.status_code == 200
    w = before.json()
    assert any(p["reason"].startswith("recalled") for s in w["sections"] for p in s["items"])
    # Something gave way, so the levels (their texts, tokens and hulls) were weighed; at this size (~100 tokens)
    # a shortened line does not pay for its handle, so the items are whole or left out.
    assert w["mode"] == "compact" and w["omitted_summary"]
    assert after.content == before.content


async def test_expired_items_are_not_recalled_before_the_expire_job_runs(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    """An item past its expires_at is still `available` (and in the index) until the expire job runs; the
    re-check in PostgreSQL keeps it out all the same."""
    past = (NOW - timedelta(hours=1)).isoformat()
    soon = (NOW + timedelta(days=1)).isoformat()
    stale, fresh = await seed(client, tenant, "ex", [
        {"type": "fact", "content": "Zookeeper quorum is five nodes.", "scope": "session", "session_id": "old",
         "observed_at": (NOW - timedelta(hours=2)).isoformat(), "expires_at": past},
        {"type": "fact", "content": "Zookeeper ensemble runs on dedicated hosts.", "scope": "session",
         "session_id": "old", "expires_at": soon},
    ])  # fmt: skip
    await vectors.worker.drain()
    assert await vectors.index.count(tenant_id=tenant.tenant_id, user_id="ex") == 2  # the index still has both
    w = await window(client, tenant, "ex", max_tokens=2000, session_id="new", query="Zookeeper quorum nodes")
    assert fresh in placed(w) and stale not in placed(w)


async def _walrus_hits(db: Database, tenant: TenantKeys) -> set[Any]:
    """The lexical ranking of "walrus" for user cap, analysing at most two pending texts itself."""
    async with session_scope(db) as s:
        hits, _, _ = await lexical_ranking(
            s,
            caches=ProcessCaches(),
            tenant_id=tenant.tenant_id,
            user_id="cap",
            query="walrus",
            limit=10,
            now=NOW,
            pending=2,
        )
    return {i for i, _ in hits}


async def test_unindexed_changes_are_searched_newest_first_up_to_a_cap(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, vectors: VectorRecall
) -> None:
    """Before the worker reaches them, a user's newest `lexical_pending_limit` changes are searched from
    their text; older ones once indexed (a bulk import does not make every window analyse it all)."""
    await vectors.worker.drain()
    ids = await seed(client, tenant, "cap", [{"type": "fact", "content": f"walrus fact {i}"} for i in range(5)])
    found = await _walrus_hits(db, tenant)
    assert found == set(ids[3:])  # the two newest
    await vectors.worker.drain()
    found = await _walrus_hits(db, tenant)
    assert found == set(ids)


def test_the_fusion_weight_is_the_embedders_unless_set(settings: Settings) -> None:
    """Full-text search leads the hashing embedder (itself a lexical signal: 0.7) and shares the say with a
    sentence model (0.5); the setting overrides both."""
    from types import SimpleNamespace

    from service.recall.service import fuse

    lexical, vector = [("a", 2.0)], [("b", 0.95)]
    hashing = SimpleNamespace(embedder=HashingEmbedder())
    assert fuse(lexical, vector, settings, hashing) == pytest.approx({"a": 0.7, "b": 0.3})  # type: ignore[arg-type]
    sentence = SimpleNamespace(embedder=SimpleNamespace(min_score=0.2, lexical_weight=0.5))
    assert fuse(lexical, vector, settings, sentence) == pytest.approx({"a": 0.5, "b": 0.5})  # type: ignore[arg-type]
    fixed = settings.replace(fusion_lexical_weight=0.2)
    assert fuse(lexical, vector, fixed, hashing) == pytest.approx({"a": 0.2, "b": 0.8})  # type: ignore[arg-type]


async def test_lexical_ranking_weighs_rare_terms_over_common_ones(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall, db: Database
) -> None:
    """BM25 over the user's texts: a term most of the user's items hold says little (its inverse document
    frequency is near 0), a rare one much — whether the texts are indexed yet or analysed at query time."""
    common = [{"type": "episode", "content": f"Deploy notes for service {i}: the deploy went fine."} for i in range(30)]
    rare = {"type": "episode", "content": "Kubernetes ingress certificates were rotated."}
    ids = await seed(client, tenant, "idf", [*common, rare])
    for drained in (False, True):
        if drained:
            await vectors.worker.drain()
        async with session_scope(db) as s:
            hits, _, _ = await lexical_ranking(
                s, caches=ProcessCaches(), tenant_id=tenant.tenant_id, user_id="idf", query="deploy kubernetes",
                limit=50, now=NOW, documents=31,
            )  # fmt: skip
        score = dict(hits)
        assert hits[0][0] == ids[30] and len(hits) == 31  # every text with the common term is still a hit
        assert score[ids[30]] > 5 * max(score[i] for i in ids[:30])


async def test_a_turn_is_relevant_in_its_conversation(
    client_for: Any, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    """The reply to a matching question shares no word with the query, yet it is what answers it: a
    conversation turn gains half the relevance of its best neighbour (a quarter two turns away) in the same
    session, so it holds its place where, ranked alone, it gives way. Turns of another session, items that
    are not episodes, and context_share 0 get nothing from it."""
    chat = [
        turn("s1", 0, "Melanie: Hi Caroline, how was the pottery workshop on Saturday?"),
        turn("s1", 1, "Caroline: I made a small blue bowl and a mug for my sister!"),
        turn("s1", 2, "Melanie: That sounds lovely, send me a picture."),
        turn("s1", 3, "Caroline: Will do, it is drying on the windowsill now."),
    ]
    other = [turn("s2", 0, "Caroline: I made pancakes for breakfast this morning.")]
    fact = [{"type": "fact", "source": "user", "content": "Caroline made a pottery wheel booking."}]
    filler = [turn(f"f{i}", 0, f"{c} ({i})") for i, c in enumerate(OTHERS * 3)]
    # in_session and answered off on both: this is about neighbours alone (test_a_turn_leans_towards_its_session,
    # test_a_question_hands_a_share_to_its_reply)
    on = await client_for(session_share=0.0, question_share=0.0)
    off = await client_for(context_share=0.0, session_share=0.0, question_share=0.0)
    ids = await seed(on, tenant, "conv", chat + other + fact + filler)
    await vectors.worker.drain()
    q = "What did she create at the pottery workshop?"
    ranked = {}
    for name, client in (("on", on), ("off", off)):
        w = await window(client, tenant, "conv", max_tokens=4000, query=q)
        values = {p["id"]: p["value"] for s in w["sections"] for p in s["items"]}
        ranked[name] = values
    on_v, off_v = ranked["on"], ranked["off"]
    question, reply, later = ids[:3]
    # the reply (one turn on) and the next but one (two turns on) gain; the question is still the best
    assert on_v[reply] > off_v[reply] and on_v[later] > off_v[later]
    assert on_v[question] > on_v[reply] > on_v[later]
    # a turn of another session, and a fact, get nothing from s1's question
    assert on_v[ids[4]] == pytest.approx(off_v[ids[4]]) and on_v[ids[5]] == pytest.approx(off_v[ids[5]])
    # under pressure: with context the reply is whole in the window, without it the reply gives way
    budget = 120
    tight_on = await window(on, tenant, "conv", max_tokens=budget, query=q)
    tight_off = await window(off, tenant, "conv", max_tokens=budget, query=q)
    assert chat[1]["content"] in tight_on["text"], tight_on["text"]
    assert chat[1]["content"] not in tight_off["text"], tight_off["text"]


async def test_a_question_hands_a_share_to_its_reply(
    client_for: Any, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    """A question and its reply are an adjacency pair (scoring.relevance.answered): a turn that ends in a
    question shares the query's words but the answer is in the turn after it, so the question keeps
    (1 - question_share) of its relevance and hands the share to its reply; a statement and its neighbours
    are not touched. question_share 0 turns it off."""
    chat = [
        turn("s1", 0, "Melanie: How was the pottery workshop on Saturday?"),
        turn("s1", 1, "Caroline: I made a small blue bowl and a mug for my sister!"),
        turn("s2", 0, "Caroline: At the pottery workshop on Saturday I learned to make a vase."),
        turn("s2", 1, "Melanie: Lovely, send me a picture of it."),
    ]
    filler = [turn(f"f{i}", 0, f"{c} ({i})") for i, c in enumerate(OTHERS * 3)]
    # in_session off on both, so that only answered differs
    on, off = await client_for(session_share=0.0), await client_for(session_share=0.0, question_share=0.0)
    ids = await seed(on, tenant, "asks", chat + filler)
    await vectors.worker.drain()
    q = "What did she make at the pottery workshop on Saturday?"
    values = {}
    for name, client in (("on", on), ("off", off)):
        w = await window(client, tenant, "asks", max_tokens=4000, query=q)
        values[name] = {p["id"]: p["value"] for s in w["sections"] for p in s["items"]}
    on_v, off_v = values["on"], values["off"]
    question, reply, statement, after = ids[:4]
    # the statement matches best either way; the reply gains on its question, which loses; the statement and
    # the turn after it (no question before it) are not touched
    assert max(on_v, key=on_v.__getitem__) == statement == max(off_v, key=off_v.__getitem__)
    assert on_v[reply] > off_v[reply] and on_v[question] < off_v[question]
    assert on_v[statement] == pytest.approx(off_v[statement]) and on_v[after] == pytest.approx(off_v[after])


async def test_a_turn_leans_towards_its_session(client_for: Any, tenant: TenantKeys, vectors: VectorRecall) -> None:
    """A session in which several turns match the query is about it (in_session): its turns' relevance leans
    towards the session's, so a turn that matches a little there outranks an equal or slightly better lone
    match in a session about something else; within a session the order holds, and an item outside any
    conversation (a fact) moves only with the renormalisation. session_share 0 turns it off."""
    trip = [
        turn("s1", 0, "Jon: We went on a camping trip to the lake last weekend."),
        turn("s1", 1, "Gina: The lake sounds lovely! Was the camping cold at night?"),
        turn("s1", 2, "Jon: A little. The best part of the trip was the sunrise over the water."),
    ]
    lone = [turn("s2", 0, "Gina: My cousin is planning a camping trip to Lisbon in the spring.")]
    fact = [{"type": "fact", "source": "user", "content": "Jon owns a four-person tent for camping."}]
    filler = [turn(f"f{i}", 0, f"{c} ({i})") for i, c in enumerate(OTHERS * 3)]
    # context_share and question_share 0 on both, so that only in_session differs
    on = await client_for(context_share=0.0, question_share=0.0)
    off = await client_for(context_share=0.0, session_share=0.0, question_share=0.0)
    ids = await seed(on, tenant, "sess", trip + lone + fact + filler)
    await vectors.worker.drain()
    q = "How was the camping trip at the lake?"
    relevance: dict[str, dict[str, float]] = {}
    for name, client in (("on", on), ("off", off)):
        w = await window(client, tenant, "sess", max_tokens=4000, query=q)
        reasons = {p["id"]: p["reason"] for s in w["sections"] for p in s["items"]}
        relevance[name] = {i: float(m[1]) for i, r in reasons.items() if (m := re.search(r"relevance (\d\.\d+)", r))}
    on_r, off_r = relevance["on"], relevance["off"]
    first, second, third, other, tent = ids[:5]
    # off: the lone match of another session outranks the trip's third turn; on, the trip's session lifts it
    assert off_r[other] > off_r[third] and on_r[third] > on_r[other]
    assert on_r[third] > off_r[third] and on_r[other] < off_r[other]
    # the order within the session holds, its best is still the best
    for r in (on_r, off_r):
        assert r[first] == 1.0 and r[first] > r[second] > r[third]
    # the fact, in no session, keeps its own relevance (up to the renormalisation and the reason's rounding)
    assert on_r[tent] == pytest.approx(off_r[tent], abs=0.02)


async def test_a_query_naming_a_date_prefers_what_was_observed_then(
    client_for: Any, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    """in_period: "... in March 2025" asks about what was observed in March 2025; a scored item observed then
    outranks a slightly better match from May, an item matching nothing is not brought in by its date alone,
    and period_share 0 turns it off."""

    def episode(at: str, content: str) -> dict[str, Any]:
        return {"type": "episode", "source": "summary", "observed_at": at, "content": content}

    march = episode("2025-03-12T10:00:00+00:00", "We picked Redis for the session cache.")
    may = episode("2025-05-20T10:00:00+00:00", "We chose Redis for the session cache.")
    unrelated = episode("2025-03-13T10:00:00+00:00", "The office printer needs toner.")
    filler = [episode("2025-08-01T10:00:00+00:00", f"{c} ({i})") for i, c in enumerate(OTHERS * 2)]
    on, off = await client_for(), await client_for(period_share=0.0)
    ids = await seed(on, tenant, "dated", [march, may, unrelated, *filler])
    await vectors.worker.drain()
    q = "Which session cache did we choose in March 2025?"
    relevance: dict[str, dict[str, float]] = {}
    for name, client in (("on", on), ("off", off)):
        w = await window(client, tenant, "dated", max_tokens=4000, query=q)
        reasons = {p["id"]: p["reason"] for s in w["sections"] for p in s["items"]}
        relevance[name] = {i: float(m[1]) for i, r in reasons.items() if (m := re.search(r"relevance (\d\.\d+)", r))}
    on_r, off_r = relevance["on"], relevance["off"]
    assert off_r[ids[1]] > off_r[ids[0]] and on_r[ids[0]] > on_r[ids[1]]
    assert ids[2] not in off_r and ids[2] not in on_r  # the printer turn matches nothing: its date brings nothing
