"""bench/extract.py on a tiny slice, against the suite's database and app: the invariants that hold whatever the
extractor's tuning (no record about the wrong speaker, none ungrounded; a hard constraint the rules recognise is
in every later window). The figures themselves are the benchmark's to report (``python -m bench.extract``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from bench.extract import (
    ARMS,
    STATEMENTS,
    holds,
    load_locomo,
    locomo_observations,
    off,
    recognised,
    retention,
    retention_conversations,
    retention_table,
    shares_words,
    sliding,
    table_message_ids,
    total_figures,
)
from service.app import create_app
from service.db.engine import Database
from service.settings import Settings
from service.tokenizer import build_tokenizer
from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys

# A LoCoMo-shaped conversation: Ann's and Bob's statements, some of them annotated as observations (one citing
# Bob's turn for a fact about Ann, which no record about Ann can rest on).
SAMPLE: dict[str, Any] = {
    "speaker_a": "Ann",
    "speaker_b": "Bob",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"dia_id": "D1:1", "speaker": "Ann", "text": "Hi Bob! I'm vegetarian now, by the way."},
        {"dia_id": "D1:2", "speaker": "Bob", "text": "Nice! I live in Berlin these days and I love spicy food."},
        {"dia_id": "D1:3", "speaker": "Ann", "text": "I love hiking. Please don't recommend steakhouses to me."},
        {"dia_id": "D1:4", "speaker": "Bob", "text": "Ann, you told me you moved to Lisbon, right?"},
        {"dia_id": "D1:5", "speaker": "Ann", "text": "Yes! And I'm vegetarian, as I said."},
    ],
    "session_1_observation": {
        "Ann": [["Ann is vegetarian.", "D1:1"], ["Ann loves hiking.", "D1:3"], ["Ann moved to Lisbon.", "D1:4"]],
        "Bob": [["Bob lives in Berlin.", "D1:2"], ["Bob loves spicy food.", ["D1:2"]]],
    },
}


def _client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test", timeout=60)


async def _observations(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, path: Path, **limits: int
) -> list[Any]:
    dialogues = load_locomo(path, **limits)
    ids = table_message_ids(db, tenant.tenant_id)
    return await locomo_observations(client, tenant.agent, dialogues, message_ids=ids)


async def test_locomo_records_are_about_the_user_and_grounded(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, tmp_path: Path
) -> None:
    (tmp_path / "1.json").write_text(json.dumps(SAMPLE), encoding="utf-8")
    rows = await _observations(client, tenant, db, tmp_path)
    assert [(r.sample_id, r.speaker) for r in rows] == [("1", "Ann"), ("1", "Bob")]
    total = total_figures(rows)
    assert total.records > 0
    assert (total.wrong_speaker, total.ungrounded, total.unresolved) == (0, 0, 0)
    ann, bob = rows
    # D1:4 is Bob's turn: the observation about Ann it supports cannot be learned from Ann's words.
    assert (ann.observations, ann.other_speaker_only, bob.observations) == (2, 1, 2)
    assert (ann.user_turns, bob.user_turns) == (3, 2)


def test_the_retention_generator_keeps_its_own_rules() -> None:
    conversations = retention_conversations(variants=2, gaps=(3, 5))
    assert len(conversations) == 2 * len(STATEMENTS)
    assert {c.statement.lang for c in conversations} == {"en", "zh"}
    for c in conversations:
        assert [s.exchanges_since_statement for s in c.steps] == [3, 9]
        for step in c.steps:
            assert not shares_words(step.question, c.statement.text)
    # Deterministic for a seed.
    again = retention_conversations(variants=2, gaps=(3, 5))
    assert [c.steps[1].before for c in again] == [c.steps[1].before for c in conversations]


def test_sliding_keeps_the_newest_messages_that_fit() -> None:
    history = [{"role": "user", "content": "one two three"}, {"role": "assistant", "content": "four"}]

    def count(text: str) -> int:
        return len(text.split())

    # Each message costs its words + 4; the question "q" 5: 14 - 5 leaves 9, room for "four" (5) only.
    assert sliding(history, "q", 14, count) == history[1:]
    assert sliding(history, "q", 100, count) == history
    assert holds("Don't recommend  Redis", "... don't recommend Redis Cluster")


async def test_retention_with_extraction_holds_the_hard_constraint_in_every_later_window(
    app: FastAPI, client: httpx.AsyncClient, tenant: TenantKeys, settings: Settings, db: Database, vectors: VectorRecall
) -> None:
    # The design's own examples (docs/design.md §3.9): one English, one Chinese.
    wanted = {"don't recommend Redis Cluster", "别推荐含花生的菜"}
    conversations = [c for c in retention_conversations(variants=1, gaps=(2, 8)) if c.statement.needle in wanted]
    assert len(conversations) == 2
    assert all(recognised(c) for c in conversations)
    tokenizer = build_tokenizer(settings.tokens.tokenizer, cache_dir=settings.resolved_tokenizer_cache_dir)
    async with _client(create_app(off(settings), database=db, vectors=vectors)) as raw:
        outcomes = await retention(
            {"extraction": client, "raw": raw},
            tenant.agent,
            conversations,
            budgets=[300],
            count=tokenizer.count,
            drain=vectors.worker.drain,
        )
    assert {o["arm"] for o in outcomes} == set(ARMS)
    mine = [o for o in outcomes if o["arm"] == "extraction"]
    assert len(mine) == 4
    assert all(o["held"] for o in mine), mine
    table = {(r["arm"], r["kind"]): r["300"] for r in retention_table(outcomes, [300])}
    assert table[("extraction", "hard constraint")] == (4, 4)
