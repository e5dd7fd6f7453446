"""service/demo.py: the sliding window it compares against, and a short run that keeps both constraints
verbatim and cleans up after itself. (The full ``ctxmem demo`` command: tests/test_cli.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import text

from scoring.history import message_tokens
from service.db.engine import Database
from service.demo import NO_CLUSTER, SMALL_TEAM, run_demo, sliding_window
from service.settings import Settings


def count(text: str) -> int:
    return len(text.split())


def history() -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": json.dumps({"q": "x"})}}
    return [
        {"role": "user", "content": "one two three four five six seven eight nine ten"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "a b c d e f g h i j k l m n o p"},
        {"role": "user", "content": "short"},
    ]


def test_the_sliding_window_keeps_the_newest_that_fit_and_never_starts_with_a_tool_result() -> None:
    messages = history()
    costs = [message_tokens(m, count) for m in messages]
    kept, used = sliding_window(messages, sum(costs), count)
    assert (kept, used) == (messages, sum(costs))
    # Room for the last two only: the tool result's call fell out, so the result goes too.
    kept, used = sliding_window(messages, costs[2] + costs[3], count)
    assert kept == [messages[3]] and used == costs[3]
    assert sliding_window(messages, 0, count) == ([], 0)


@pytest.mark.parametrize("budget", [0, 5, 20, 60, 1000])
def test_the_sliding_window_never_exceeds_its_budget(budget: int) -> None:
    kept, used = sliding_window(history(), budget, count)
    assert used <= budget
    assert used == sum(message_tokens(m, count) for m in kept)
    assert not kept or kept[0]["role"] != "tool"


async def test_a_short_demo_keeps_both_constraints_and_removes_its_tenant(
    settings: Settings, db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await run_demo(settings, db, turns=3, budget=1000) == 0
    out = capsys.readouterr().out
    assert "both constraints verbatim in every window since turn 2: yes" in out
    assert SMALL_TEAM in out and NO_CLUSTER in out
    tenant = out.split("ctxmem demo — tenant ", 1)[1].split(",", 1)[0]
    assert f"cleaned up: tenant {tenant} erased and removed" in out
    async with db.engine.connect() as conn:
        for table in ("tenant", "api_key", "context_item", "event"):
            column = "id" if table == "tenant" else "tenant_id"
            n = (await conn.execute(text(f"SELECT count(*) FROM {table} WHERE {column} = :t"), {"t": tenant})).scalar()
            assert n == 0, table
