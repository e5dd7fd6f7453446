"""The window's candidates (docs/design.md §3.6 step 1) and its selection by value per token, through HTTP: what the
query is about is shown whole while unrelated items give way, and a user with 100,000 items costs a window
no more rows than one with a hundred."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from service.caches import ProcessCaches
from service.db.engine import Database, driver_connection
from service.db.selection import Selection
from service.recall import repository as recall_repository
from service.recall.repository import sql_literal
from service.settings import Settings
from service.vectors.recall import VectorRecall
from service.windows import repository
from tests.conftest import TenantKeys
from tests.service.windows.test_window_recall import placed, seed, window

EARLY = datetime(2000, 1, 1, tzinfo=UTC)  # "now" for reads that must find every item unexpired
LAG = "PostgreSQL replication lag on the orders replica reached 45 seconds during the nightly batch."
TOPICS = ["gardening", "soup recipes", "spring holidays", "a cycling trip", "the school play", "a new sofa"]

# The caches the repository's reads share within this module's tests, as one process's would.
CACHES = ProcessCaches()


async def test_the_fact_the_query_is_about_is_kept_whole_and_unrelated_notes_give_way(
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall
) -> None:
    notes = [
        {"type": "fact", "source": "user", "content": f"Note {i}: I told you about {TOPICS[i % 6]} at some length, "
         f"with details about the weather, the neighbours and what everybody wore that day ({i})."}
        for i in range(60)
    ]  # fmt: skip
    (lag, *_) = await seed(client, tenant, "lag", [{"type": "fact", "source": "tool", "content": LAG}, *notes])
    await vectors.worker.drain()
    ask = "How bad was the replication lag on the orders replica?"
    w = await window(client, tenant, "lag", input=ask, max_tokens=600)
    got = placed(w)
    assert got[lag][0] == 0 and LAG in w["text"]
    assert got[lag][1].startswith("background; relevance 1.00; kept whole") or got[lag][1].endswith("kept whole")
    assert w["tokens"]["used"] <= 600 and w["mode"] == "compact"
    # the notes that gave way say what they lost to: this window's cut
    assert w["omitted"] and all("cut" in o["reason"] or "did not fit" in o["reason"] for o in w["omitted"])
    assert w["cut"] > 0
    # a generous budget compresses nothing: every note whole
    roomy = await window(client, tenant, "lag", input=ask, max_tokens=20_000)
    assert roomy["mode"] == "full" and all(level == 0 for level, _ in placed(roomy).values())


async def test_a_user_with_100k_items_costs_a_window_a_bounded_set_of_rows(
    client: httpx.AsyncClient,
    tenant: TenantKeys,
    vectors: VectorRecall,
    settings: Settings,
    db: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rnd = random.Random(11)
    words = [
        "cache",
        "latency",
        "budget",
        "region",
        "replica",
        "failover",
        "queue",
        "index",
        "shard",
        "quota",
        "alert",
        "runbook",
    ]
    target_text = "The Zanzibar migration must finish before the fourteenth of March, the auditors said."
    (target,) = await seed(client, tenant, "big", [{"type": "episode", "source": "summary", "content": target_text}])
    constraint = {"type": "constraint", "hard": True, "source": "user", "content": "Never page the on-call at night."}
    await seed(client, tenant, "big", [constraint])
    for start in range(0, 100_000, 1000):
        batch = [
            {"type": "episode", "source": "summary",
             "content": f"Episode {start + i}: " + " ".join(rnd.choice(words) for _ in range(12))}
            for i in range(1000)
        ]  # fmt: skip
        await seed(client, tenant, "big", batch)
    await vectors.worker.drain()

    own: list[tuple[str, str]] = []
    real_own = recall_repository.user_postings_sql

    def spy(tenant_id: str, user_id: str) -> str:
        own.append((tenant_id, user_id))
        return real_own(tenant_id, user_id)

    monkeypatch.setattr(recall_repository, "user_postings_sql", spy)
    w = await window(client, tenant, "big", input="When must the Zanzibar migration finish?", max_tokens=2000)
    assert own == [(tenant.tenant_id, "big")]  # this user's postings, by a statement of this user's
    got = placed(w)
    assert got[target][0] == 0 and target_text in w["text"]  # the oldest item, found by retrieval
    assert "Never page the on-call at night." in w["text"]  # pinned, standing
    considered = len(got) + w["omitted_summary"]["count"]
    # the standing rows (one constraint), the newest few, and what the two rankings retrieved
    assert considered <= 2 + settings.window.recent_items + 2 * settings.recall.candidates, considered
    assert w["not_retrieved"] >= 100_002 - considered
    assert w["tokens"]["used"] <= 2000

    # The standing rows are read through the partial indexes, not by scanning the user's items.
    async with db.sessionmaker() as s:
        driver = await driver_connection(s)
        await driver.execute("ANALYZE context_item")
        args = (tenant.tenant_id, "big", "s1", "", "", "", None, settings.window.recent_items)
        plan = "\n".join(r[0] for r in await driver.fetch("EXPLAIN " + repository._ITEMS_SQL, *args))
        # The same rows read beside the ids and versions held (a window after a write): the same plan.
        held = "\n".join(r[0] for r in await driver.fetch("EXPLAIN " + repository._ITEMS_HELD_SQL, *args, "{}", "{}"))
        # Retrieved rows: one primary-key probe per id, the held versions read beside the ids (no join of
        # the ids with the held rows: as a nested loop it hashed every row's version once per held row).
        literal, versions = "{" + target + "}", "{NULL}"
        retrieved = "\n".join(
            r[0]
            for r in await driver.fetch(
                "EXPLAIN " + repository._RETRIEVED_HELD_SQL,
                tenant.tenant_id, "big", literal, EARLY, None, "s1", "", "", "", versions,
            )
        )  # fmt: skip
    assert "ix_context_item_standing" in plan and "ix_context_item_scoped" in plan, plan
    assert "ix_context_item_standing" in held and "ix_context_item_scoped" in held, held
    assert "Join Filter" not in retrieved and "Sort" not in retrieved, retrieved
    assert "pk_context_item" in retrieved or "ix_context_item_user_id_order" in retrieved, retrieved

    # Each query term's texts of this user are found inside the full-text index (tenant, user and term in
    # one GIN index): not everybody's texts holding the term filtered by user afterwards, nor the user's
    # 100,000 texts each tested against the query. The window runs the generic plan of every statement
    # (EXECUTE of a prepared statement under force_generic_plan shows it: an EXPLAIN with the parameters
    # bound shows a plan made for the values, which is not what runs): the postings' statement of a large
    # user names the user, so that its generic plan is made for this user's rows, not the average user's.
    async with db.sessionmaker() as s:
        driver = await driver_connection(s)
        await driver.execute("ANALYZE item_search")
        await driver.execute("SET plan_cache_mode = force_generic_plan")

        async def generic_plan(sql: str, types: str, *values: str) -> str:
            await driver.execute(f"PREPARE plan_check({types}) AS {sql}")
            try:
                rows = await driver.fetch(f"EXPLAIN EXECUTE plan_check({', '.join(values)})")
            finally:
                await driver.execute("DEALLOCATE plan_check")
            return "\n".join(r[0] for r in rows)

        t = f"'{tenant.tenant_id}'"
        plan = await generic_plan(
            real_own(tenant.tenant_id, "big"), "text[], timestamptz, int", "'{zanzibar,migrat}'", "now()", "1000"
        )
        # The first lexical statement reads the texts written since a seq from the index over (tenant,
        # user, seq), not by reading the user's 100,000 rows — with a copy's seq, and without one (a user
        # this large has no copy: a plan that scanned the table for "seq > NULL" cost 36 ms a window).
        firsts = [
            await generic_plan(
                recall_repository.LEXICAL_TERMS, "text, text, text, int, bigint", t, "'big'", "'zanzibar'", *a
            )
            for a in (("5001", str(10**12)), ("0", "NULL"))
        ]
        # The conversation context finds its items by primary key, not among the user's conversation turns.
        ids = "'{" + target + "}'"
        context = await generic_plan(
            recall_repository._CONVERSATION,
            "text, text, uuid[], int, timestamptz, uuid[], text, text[], text, text, text, text",
            t, "'big'", ids, "2", "'2000-01-01T00:00:00Z'", ids, "'[?]$'", "NULL", "'s1'", "''", "''", "''",
        )  # fmt: skip
        # Beside many small users, the one statement's generic plan is made for a user of a few hundred
        # texts (read the user's rows, test each against the query): the reason the large user's
        # postings name the user. 500 small users are copied from this one's rows, for this check only.
        copies = driver.transaction()
        await copies.start()
        try:
            await many_small_users(driver, tenant.tenant_id, "big", users=500, rows=40_000)
            shared = await generic_plan(
                recall_repository._POSTINGS, "text, text, text[], timestamptz, int",
                t, "'big'", "'{zanzibar,migrat}'", "now()", "1000",
            )  # fmt: skip
            own = await generic_plan(
                real_own(tenant.tenant_id, "big"), "text[], timestamptz, int", "'{zanzibar,migrat}'", "now()", "1000"
            )
        finally:
            await copies.rollback()
        await driver.execute("RESET plan_cache_mode")
    assert "ix_item_search_user_tsv" in plan, plan
    assert "ix_item_search_user_tsv" not in shared and "ix_item_search_user_tsv" in own, (shared, own)
    for first in firsts:
        since = [line for line in first.splitlines() if "Index Cond" in line and "(seq >" in line]
        assert "Index Scan using ix_item_search_user_seq" in first and since, first
        assert "Seq Scan on item_search" not in first, first
    by_key = [line for line in context.splitlines() if "Index Cond" in line and "(id = o" in line]
    user_wide = [line for line in context.splitlines() if line.strip().endswith("(user_id = $2))")]
    assert len(by_key) == 2 and not user_wide and "Hash" not in context and "Seq Scan" not in context, context


async def many_small_users(driver: Any, tenant_id: str, user_id: str, *, users: int, rows: int) -> None:
    """``rows`` of the user's items and their full-text rows copied to ``users`` other users of the tenant
    (new ids), and item_search analysed: a database where most users are small."""
    columns = [
        r["column_name"]
        for r in await driver.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = $1 AND table_schema = "
            "current_schema() ORDER BY ordinal_position",
            "context_item",
        )
    ]
    await driver.execute(
        "CREATE TEMP TABLE copied ON COMMIT DROP AS SELECT id AS old_id, gen_random_uuid() AS new_id, "
        f"'small-' || (row_number() OVER () % {users}) AS user_id FROM context_item "
        f"WHERE tenant_id = {sql_literal(tenant_id)} AND user_id = {sql_literal(user_id)} "
        f"LIMIT {rows}"
    )
    await driver.execute(
        "INSERT INTO end_user (tenant_id, user_id, created_at, updated_at) "
        "SELECT DISTINCT $1::text, user_id, now(), now() FROM copied",
        tenant_id,
    )
    chosen = ", ".join({"id": "m.new_id", "user_id": "m.user_id"}.get(c, f"c.{c}") for c in columns)
    await driver.execute(
        f"INSERT INTO context_item ({', '.join(columns)}) SELECT {chosen} "
        "FROM context_item c JOIN copied m ON m.old_id = c.id"
    )
    await driver.execute(
        "INSERT INTO item_search (item_id, tenant_id, user_id, tsv, expires_at) "
        "SELECT m.new_id, s.tenant_id, m.user_id, s.tsv, s.expires_at "
        "FROM item_search s JOIN copied m ON m.old_id = s.item_id"
    )
    await driver.execute("ANALYZE item_search")


async def test_a_window_with_room_to_spare_shows_older_items_too(
    client: httpx.AsyncClient, tenant: TenantKeys, settings: Settings
) -> None:
    """More items than the newest few, none matching the query, and a budget that holds them all: the window
    reads the older ones too rather than leave the budget unused."""
    n = settings.window.recent_items + 30
    ids = await seed(
        client,
        tenant,
        "roomy",
        [{"type": "episode", "source": "summary", "content": f"Old turn {i}."} for i in range(n)],
    )
    w = await window(client, tenant, "roomy", input="qqqq", max_tokens=20_000)
    assert set(ids) <= set(placed(w)) and w["mode"] == "full" and w["not_retrieved"] == 0
    tight = await window(client, tenant, "roomy", input="qqqq", max_tokens=300)
    assert tight["tokens"]["used"] <= 300 and tight["not_retrieved"] > 0  # no room: only the candidates


async def test_the_window_sql_applies_scopes_as_scoring_does(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    """The SQL of the window's reads is built from scoring.scopes (EVERYWHERE, INSTANCE_SCOPES): for items of
    every scope and instance, read from several places, it keeps exactly the items ``scopes.applies`` keeps."""
    from scoring.items import SCOPE_ID_FIELD
    from scoring.scopes import ScopeContext, Scoped, applies, scope_ref

    rnd = random.Random(5)
    items: list[dict[str, object]] = []
    for i in range(60):
        scope = rnd.choice(["user", "global", "session", "task", "stage", "step"])
        body: dict[str, object] = {"type": "fact", "content": f"scoped fact {i}", "scope": scope}
        field = SCOPE_ID_FIELD.get(scope)
        if field is not None:
            body[field] = rnd.choice(["a", "b"])
        items.append(body)
    r = await client.post("/v1/users/scopes/items/batch", json={"items": items}, headers=tenant.admin)
    assert r.status_code == 201, r.text
    written = r.json()["items"]
    ids = [i["id"] for i in written]
    for where in [{}, {"session": "a"}, {"session": "b", "task": "a"}, {"stage": "a", "step": "b"},
                  {"session": "a", "task": "b", "stage": "b", "step": "a"}]:  # fmt: skip
        ctx = ScopeContext(**{f"{k}_id": v for k, v in where.items()})
        expected = {
            i["id"] for i in written if applies(Scoped(i["id"], None, i["scope"], scope_ref(i["scope"], i)), ctx)
        }
        async with db.sessionmaker() as s:
            selection = Selection(
                tenant_id=tenant.tenant_id, user_id="scopes", **{f"{k}_id": v for k, v in where.items()}
            )
            rows, applicable = await repository.window_items(s, caches=CACHES, selection=selection, recent=1000)
            retrieved = await repository.retrieved_items(s, caches=CACHES, selection=selection, ids=ids, now=EARLY)
            # What the conversation context checks of the same rows for the window (and what the
            # retrieved rows are then taken from) applies the scopes the same way.
            context = await recall_repository.conversation_context(
                s, tenant_id=tenant.tenant_id, user_id="scopes", ids=ids, sources=[], reach=0, now=EARLY,
                selection=selection,
            )  # fmt: skip
            taken = await repository.retrieved_items(
                s, caches=CACHES, selection=selection, ids=ids, now=EARLY, checked=context.checked
            )
        assert {str(r["id"]) for r in rows} == expected and applicable == len(expected), where
        assert {str(row["id"]) for row, fits in retrieved if fits} == expected, where
        assert {i for i, seen in context.checked.items() if seen is not None and seen[1]} == expected, where
        assert [(str(row["id"]), fits) for row, fits in taken] == [(str(row["id"]), fits) for row, fits in retrieved]
        assert len(expected) < len(ids) or where == {"session": "a", "task": "b", "stage": "b", "step": "a"}


async def test_a_value_written_into_a_statement_reads_back_as_itself(db: Database) -> None:
    """``recall_repository.sql_literal`` (a large user's postings name the tenant and the user as constants): any
    text, quotes and backslashes included, reads back as itself, with standard_conforming_strings on or
    off; NUL, which PostgreSQL text cannot hold, is refused."""
    values = ["u-1", "o'brien", "back\\slash", "\\'; SELECT 1; --", "it''s", "用户", "a\\nb", "'", "\\"]
    async with db.sessionmaker() as s:
        driver = await driver_connection(s)
        for conforming in ("on", "off"):
            await driver.execute(f"SET standard_conforming_strings = {conforming}")
            for v in values:
                assert await driver.fetchval(f"SELECT {sql_literal(v)}::text") == v, (conforming, v)
        await driver.execute("RESET standard_conforming_strings")
        await s.rollback()
    with pytest.raises(ValueError, match="NUL"):
        sql_literal("a\x00b")
