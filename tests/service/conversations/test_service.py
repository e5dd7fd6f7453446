"""Stored conversations (issue #15 step 2): append / list / end a session's messages; a window with a
session_id and no messages fits the stored history, and the turns that fall out of it become one episode
item — each turn archived once, by the first window that drops it."""

from __future__ import annotations

from typing import Any

import httpx

from schemas.conversations import MessagePage, MessagesAppended, SessionEnded
from schemas.windows import WindowResponse
from service.app import create_app
from service.db.engine import Database
from service.settings import Settings
from tests.conftest import TenantKeys


def turns(n: int, start: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(start, start + n):
        out.append({"role": "user", "content": f"Question {i}: what about the {i}th option for the offsite venue?"})
        out.append({"role": "assistant", "content": f"Answer {i}: option {i} seats forty people and has a garden."})
    return out


async def append(
    client: httpx.AsyncClient, tenant: TenantKeys, user: str, session: str, messages: list[dict[str, Any]], **kw: Any
) -> httpx.Response:
    return await client.post(f"/v1/users/{user}/sessions/{session}/messages", json={"messages": messages}, **kw)


async def stored(client: httpx.AsyncClient, tenant: TenantKeys, user: str, session: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 7, **({"cursor": cursor} if cursor else {})}
        r = await client.get(f"/v1/users/{user}/sessions/{session}/messages", params=params, headers=tenant.agent)
        assert r.status_code == 200, r.text
        page = MessagePage.model_validate_json(r.content)
        out += [m.model_dump(mode="json") for m in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return out


async def window(client: httpx.AsyncClient, headers: dict[str, str], user: str, **body: Any) -> dict[str, Any]:
    r = await client.post(f"/v1/users/{user}/window", json=body, headers=headers)
    assert r.status_code == 200, r.text
    WindowResponse.model_validate_json(r.content)
    out: dict[str, Any] = r.json()
    return out


async def episodes(client: httpx.AsyncClient, tenant: TenantKeys, user: str) -> list[dict[str, Any]]:
    r = await client.get(f"/v1/users/{user}/items", params={"type": "episode"}, headers=tenant.agent)
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


async def test_messages_are_stored_in_order_and_listed_in_pages(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await append(client, tenant, "c1", "s1", turns(5), headers=tenant.agent)
    assert r.status_code == 201, r.text
    first = MessagesAppended.model_validate_json(r.content)
    assert [m.seq for m in first.items] == list(range(1, 11))
    r = await append(client, tenant, "c1", "s1", turns(3, start=5), headers=tenant.agent)
    assert [m["seq"] for m in r.json()["items"]] == list(range(11, 17))
    listed = await stored(client, tenant, "c1", "s1")
    assert [m["seq"] for m in listed] == list(range(1, 17))
    assert [m["message"] for m in listed] == turns(8)
    assert all(m["session_id"] == "s1" and m["archived_item_id"] is None for m in listed)
    assert await stored(client, tenant, "c1", "another-session") == []


async def test_an_append_replayed_with_its_idempotency_key_is_stored_once(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    headers = {**tenant.agent, "Idempotency-Key": "append-once"}
    a = await append(client, tenant, "c2", "s1", turns(1), headers=headers)
    b = await append(client, tenant, "c2", "s1", turns(1), headers=headers)
    assert a.status_code == b.status_code == 201 and a.content == b.content
    assert len(await stored(client, tenant, "c2", "s1")) == 2


async def test_a_tool_result_may_come_in_a_later_append_but_an_orphan_is_a_422_naming_its_index(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup_venue", "arguments": "{}"}}
    r = await append(
        client,
        tenant,
        "c3",
        "s1",
        [{"role": "user", "content": "Is the venue free?"}, {"role": "assistant", "tool_calls": [call]}],
        headers=tenant.agent,
    )
    assert r.status_code == 201, r.text
    r = await append(client, tenant, "c3", "s1", [{"role": "tool", "tool_call_id": "call_1", "content": "free"}],
                     headers=tenant.agent)  # fmt: skip
    assert r.status_code == 201, r.text
    orphan = [{"role": "assistant", "content": "ok"}, {"role": "tool", "tool_call_id": "call_9", "content": "?"}]
    r = await append(client, tenant, "c3", "s1", orphan, headers=tenant.agent)
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["index"] == 1 and "messages[1]" in r.json()["detail"] and "call_9" in r.json()["detail"]
    assert len(await stored(client, tenant, "c3", "s1")) == 3  # nothing of the refused batch was stored
    for bad in ({"messages": []}, {"messages": [{"role": "robot", "content": "x"}]}, {}):
        r = await client.post("/v1/users/c3/sessions/s1/messages", json=bad, headers=tenant.agent)
        assert r.status_code == 422, r.text
    r = await append(client, tenant, "c3", "bad session!", turns(1), headers=tenant.agent)
    assert r.status_code == 422, r.text
    r = await append(client, tenant, "c3", "s1", turns(1), headers=tenant.operator)
    assert r.status_code == 403, r.text


async def test_a_window_fits_the_stored_history_with_the_latest_input_once(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    latest = "And which option has parking?"
    await append(client, tenant, "c4", "s1", [*turns(2), {"role": "user", "content": latest}], headers=tenant.agent)
    w = await window(client, tenant.agent, "c4", input=latest, session_id="s1", max_tokens=4000)
    assert w["messages"] == turns(2)  # the stored last user message is the input: in the window once
    assert w["text"].count(latest) == 1
    assert w["archived_item_id"] is None  # everything fitted: nothing archived
    # Messages sent with the request are used as they are, not the stored ones.
    mine = [{"role": "user", "content": "only this"}]
    assert (await window(client, tenant.agent, "c4", input="x", session_id="s1", max_tokens=4000, messages=mine))[
        "messages"
    ] == mine


async def test_turns_that_fall_out_are_archived_once_and_not_fitted_again(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await append(client, tenant, "c5", "s1", turns(30), headers=tenant.agent)
    w = await window(client, tenant.agent, "c5", input="Summarise the options.", session_id="s1", max_tokens=700)
    kept = w["messages"]
    assert 0 < len(kept) < 60 and kept == turns(30)[-len(kept) :]  # the newest turns that fit
    archive = w["archived_item_id"]
    assert archive is not None
    (episode,) = await episodes(client, tenant, "c5")
    assert episode["id"] == archive and episode["session_id"] == "s1" and episode["scope"] == "session"
    assert episode["content"].startswith("user: Question 0:") and "assistant: Answer 0:" in episode["content"]
    listed = await stored(client, tenant, "c5", "s1")
    dropped = 60 - len(kept)
    assert [m["archived_item_id"] for m in listed] == [archive] * dropped + [None] * len(kept)

    # Windows again (the archive is now an item of the session, competing for the budget): a turn is
    # archived at most once, never fitted again once archived, and archive + live history stay in order.
    first_archive = {m["seq"]: m["archived_item_id"] for m in listed if m["archived_item_id"]}
    for _ in range(3):
        again = await window(
            client, tenant.agent, "c5", input="Summarise the options.", session_id="s1", max_tokens=700
        )
        listed = await stored(client, tenant, "c5", "s1")
        live = [m["message"] for m in listed if m["archived_item_id"] is None]
        assert again["messages"] == live[len(live) - len(again["messages"]) :]
        assert all(first_archive[m["seq"]] == m["archived_item_id"] for m in listed if m["seq"] in first_archive)
        archived = [m["seq"] for m in listed if m["archived_item_id"]]
        assert archived == list(range(1, len(archived) + 1))  # always the oldest
    made = {m["archived_item_id"] for m in listed if m["archived_item_id"]}
    assert {e["id"] for e in await episodes(client, tenant, "c5")} == made

    # An operator's window may not write: it fits the history but archives nothing.
    await append(client, tenant, "c5", "s1", turns(30, start=30), headers=tenant.agent)
    seen = await window(client, tenant.operator, "c5", input="Summarise.", session_id="s1", max_tokens=700)
    assert seen["archived_item_id"] is None and len(await episodes(client, tenant, "c5")) == len(made)


async def test_ending_a_session_keeps_its_unarchived_turns_as_an_episode_and_removes_the_messages(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await append(client, tenant, "c6", "s1", turns(3), headers=tenant.agent)
    r = await client.delete("/v1/users/c6/sessions/s1", headers=tenant.agent)
    assert r.status_code == 200, r.text
    ended = SessionEnded.model_validate_json(r.content)
    assert ended.messages == 6 and ended.archived_item_id is not None
    (episode,) = await episodes(client, tenant, "c6")
    assert episode["id"] == str(ended.archived_item_id) and episode["content"].count("\n") == 5
    assert await stored(client, tenant, "c6", "s1") == []
    r = await client.delete("/v1/users/c6/sessions/s1", headers=tenant.agent)
    assert r.json() == {"session_id": "s1", "messages": 0, "archived_item_id": None}
    events = (await client.get("/v1/users/c6/events", headers=tenant.operator)).json()["items"]
    assert {"session.appended", "session.ended"} <= {e["action"] for e in events}


async def test_another_tenant_sees_no_conversation(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    await append(client, tenant, "c7", "s1", turns(1), headers=tenant.agent)
    assert await stored(client, other_tenant, "c7", "s1") == []
    w = await window(client, other_tenant.agent, "c7", input="hi", session_id="s1", max_tokens=2000)
    assert w["messages"] == []


async def test_the_newest_message_can_be_taken_back_unless_a_window_archived_it(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await append(client, tenant, "c8", "s1", turns(2), headers=tenant.agent)
    r = await client.delete("/v1/users/c8/sessions/s1/messages/last", headers=tenant.agent)
    assert r.status_code == 200, r.text
    popped = r.json()["removed"]
    assert popped["seq"] == 4 and popped["message"] == turns(2)[-1]
    assert [m["seq"] for m in await stored(client, tenant, "c8", "s1")] == [1, 2, 3]
    r = await append(client, tenant, "c8", "s1", [{"role": "assistant", "content": "Corrected."}], headers=tenant.agent)
    assert [m["seq"] for m in r.json()["items"]] == [4]  # numbering goes on after the last stored message
    r = await client.delete("/v1/users/c8/sessions/s1/messages/last", headers=tenant.operator)
    assert r.status_code == 403, r.text
    empty = await client.delete("/v1/users/c8/sessions/none/messages/last", headers=tenant.agent)
    assert empty.json() == {"session_id": "none", "removed": None}
    # Archived messages are long-term memory: once every message is archived there is nothing to take back.
    await append(client, tenant, "c9", "s1", turns(30), headers=tenant.agent)
    w = await window(client, tenant.agent, "c9", input="Summarise.", session_id="s1", max_tokens=300)
    assert w["archived_item_id"] is not None
    live = [m for m in await stored(client, tenant, "c9", "s1") if m["archived_item_id"] is None]
    for _ in live:
        r = await client.delete("/v1/users/c9/sessions/s1/messages/last", headers=tenant.agent)
        assert r.json()["removed"] is not None
    r = await client.delete("/v1/users/c9/sessions/s1/messages/last", headers=tenant.agent)
    assert r.json()["removed"] is None
    assert all(m["archived_item_id"] for m in await stored(client, tenant, "c9", "s1"))


async def test_archiving_can_be_turned_off(db: Database, settings: Settings, tenant: TenantKeys) -> None:
    app = create_app(settings.replace(window_archive_session_turns=False), database=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test") as client:
        await _archiving_off(client, tenant)


async def _archiving_off(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await append(client, tenant, "c10", "s1", turns(30), headers=tenant.agent)
    w = await window(client, tenant.agent, "c10", input="Summarise.", session_id="s1", max_tokens=700)
    assert 0 < len(w["messages"]) < 60 and w["archived_item_id"] is None
    assert await episodes(client, tenant, "c10") == []
    assert all(m["archived_item_id"] is None for m in await stored(client, tenant, "c10", "s1"))


async def test_an_extra_field_that_cannot_be_stored_is_a_422_not_a_500(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    """Found by the OpenAPI fuzzer: fields the chat format passes through reached jsonb unchecked."""
    body = '{"messages": [{"role": "user", "content": "hi", "x": "\\ud8a0"}, {"role": "user", "\\u0000k": 1}]}'
    r = await client.post(
        "/v1/users/c11/sessions/s1/messages",
        content=body,
        headers={**tenant.agent, "Content-Type": "application/json"},
    )
    assert r.status_code == 422 and "must not contain" in r.json()["detail"], r.text
    assert await stored(client, tenant, "c11", "s1") == []
