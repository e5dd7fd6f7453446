"""The window's candidates (docs/design.md §3.6 step 1) and its selection by value per token, through HTTP: what the
query is about is shown whole while unrelated items give way, and a user with 100,000 items costs a window
no more rows than one with a hundred."""

from __future__ import annotations

import random

import httpx

from service.db.engine import Database, driver_connection
from service.settings import Settings
from service.vectors.recall import VectorRecall
from service.windows import repository
from tests.conftest import TenantKeys
from tests.service.windows.test_window_recall import placed, seed, window

LAG = "PostgreSQL replication lag on the orders replica reached 45 seconds during the nightly batch."
TOPICS = ["gardening", "soup recipes", "spring holidays", "a cycling trip", "the school play", "a new sofa"]


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
    client: httpx.AsyncClient, tenant: TenantKeys, vectors: VectorRecall, settings: Settings, db: Database
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

    w = await window(client, tenant, "big", input="When must the Zanzibar migration finish?", max_tokens=2000)
    got = placed(w)
    assert got[target][0] == 0 and target_text in w["text"]  # the oldest item, found by retrieval
    assert "Never page the on-call at night." in w["text"]  # pinned, standing
    considered = len(got) + len(w["omitted"])
    # the standing rows (one constraint), the newest few, and what the two rankings retrieved
    assert considered <= 2 + settings.window_recent_items + 2 * settings.recall_candidates, considered
    assert w["not_retrieved"] >= 100_002 - considered
    assert w["tokens"]["used"] <= 2000

    # The standing rows are read through the partial indexes, not by scanning the user's items.
    async with db.sessionmaker() as s:
        driver = await driver_connection(s)
        await driver.execute("ANALYZE context_item")
        args = (tenant.tenant_id, "big", "s1", "", "", "", None, settings.window_recent_items)
        plan = "\n".join(r[0] for r in await driver.fetch("EXPLAIN " + repository._ITEMS_SQL, *args))
    assert "ix_context_item_standing" in plan and "ix_context_item_scoped" in plan, plan


async def test_a_window_with_room_to_spare_shows_older_items_too(
    client: httpx.AsyncClient, tenant: TenantKeys, settings: Settings
) -> None:
    """More items than the newest few, none matching the query, and a budget that holds them all: the window
    reads the older ones too rather than leave the budget unused."""
    n = settings.window_recent_items + 30
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
