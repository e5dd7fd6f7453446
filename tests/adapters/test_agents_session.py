"""The Agents SDK session against the real service: the Session contract, case by case, with the SDK's own
SQLiteSession as the reference (the SDK ships no reusable session conformance suite), a real Runner with the
SDK's ScriptedModel and a function tool, and what only ctxmem does (the window fits the stored history)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import set_tracing_disabled
from agents.memory import Session, SQLiteSession
from ctxmem_client import AsyncClient, AsyncUser
from ctxmem_client.agents import CtxmemSession

from tests.sdk.conftest import Keys, Live

set_tracing_disabled(True)

ITEMS: list[Any] = [
    {"role": "user", "content": "Find me a flight to Lisbon."},
    {"type": "message", "role": "developer", "content": "Be brief."},
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "search_flights",
        "arguments": '{"to": "LIS"}',
        "id": "fc_1",
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": '{"flights": ["TP123"]}'},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "TP123 lands at 21:40.", "annotations": []}],
    },
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "checked the time"}]},
    {"role": "user", "content": [{"type": "input_text", "text": "Book it."}]},
]


@pytest.fixture
async def user(live: Live, keys: Keys) -> AsyncIterator[AsyncUser]:
    async with AsyncClient(live.url, api_key=keys.agent) as client:
        yield client.user("alice")


async def contract(session: Session) -> list[Any]:
    seen: list[Any] = [await session.get_items()]
    await session.add_items(ITEMS[:3])
    await session.add_items([])
    await session.add_items(ITEMS[3:])
    seen += [await session.get_items(), await session.get_items(limit=2), await session.get_items(limit=0)]
    seen += [await session.pop_item(), await session.pop_item(), await session.get_items()]
    await session.clear_session()
    seen.append(await session.pop_item())  # nothing left to pop
    seen.append(await session.get_items())
    await session.add_items(ITEMS[:1])
    seen.append(await session.get_items())
    await session.clear_session()
    await session.clear_session()
    return seen


async def test_contract_matches_the_reference_session(user: AsyncUser) -> None:
    ours = CtxmemSession("s-contract", user)
    assert isinstance(ours, Session)
    assert await contract(ours) == await contract(SQLiteSession("s-contract"))


async def test_items_are_stored_as_chat_messages(user: AsyncUser) -> None:
    await CtxmemSession("s-chat", user).add_items(ITEMS)
    stored = [m.message async for m in user.iter_messages("s-chat")]
    assert [m["role"] for m in stored] == ["user", "developer", "assistant", "tool", "assistant", "assistant", "user"]
    assert stored[0] == ITEMS[0]  # an easy message is its own chat form
    assert stored[2]["tool_calls"][0]["function"] == {"name": "search_flights", "arguments": '{"to": "LIS"}'}
    assert stored[3] == {"role": "tool", "tool_call_id": "call_1", "content": '{"flights": ["TP123"]}'}
    assert stored[4]["content"] == "TP123 lands at 21:40." and stored[4]["agents_item"] == ITEMS[4]
    assert stored[5].get("content") is None and stored[5]["agents_item"] == ITEMS[5]
    window = await user.window(input="Book it.", max_tokens=2000, session_id="s-chat", format="openai")
    assert window.prompt is not None
    assert any(m.get("content") == "TP123 lands at 21:40." for m in window.prompt["messages"])


async def test_chat_only_storage_is_lossy_and_refuses_what_has_no_chat_form(user: AsyncUser) -> None:
    session = CtxmemSession("s-lossy", user, keep_original=False)
    await session.add_items(ITEMS[:5])
    got = await session.get_items()
    assert got[0] == ITEMS[0]
    assert got[2] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "search_flights",
        "arguments": '{"to": "LIS"}',
    }
    assert got[4] == {"role": "assistant", "content": "TP123 lands at 21:40."}
    assert all(["agents_item" not in m.message async for m in user.iter_messages("s-lossy")])
    with pytest.raises(ValueError, match="no chat form"):
        await session.add_items(ITEMS[5:6])


async def test_pop_item_takes_back_the_newest_message_only(user: AsyncUser) -> None:
    session = CtxmemSession("s-pop", user)
    await session.add_items(ITEMS[:3])
    assert await session.pop_item() == ITEMS[2]
    assert await session.get_items() == ITEMS[:2]
    assert [m.seq async for m in user.iter_messages("s-pop")] == [1, 2]
