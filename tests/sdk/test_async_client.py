"""The async client against the real server: the same calls as the sync one, awaited, and the same
public surface (a method added to one client and not the other fails here)."""

from __future__ import annotations

import inspect
import uuid
from datetime import UTC, datetime

import pytest
from ctxmem_client import AsyncClient, AsyncUser, Client, ItemNotFound, User, ValidationError

from tests.sdk.conftest import Keys, Live


def _public(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in vars(cls).items()
        if callable(fn) and not name.startswith("_") and name not in ("close", "aclose")
    }


@pytest.mark.parametrize(("sync", "async_"), [(Client, AsyncClient), (User, AsyncUser)])
def test_the_async_surface_is_the_sync_one(sync: type, async_: type) -> None:
    ours, theirs = _public(sync), _public(async_)
    assert set(ours) == set(theirs)
    for name, signature in ours.items():
        assert list(signature.parameters) == list(theirs[name].parameters), name
        fn = getattr(async_, name)
        if name in ("user",):
            continue
        assert inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn), name


async def test_every_async_method_against_the_live_service(live: Live, keys: Keys) -> None:
    user = f"u-{uuid.uuid4().hex[:10]}"
    async with (
        AsyncClient(live.url, keys.agent) as agent,
        AsyncClient(live.url, keys.operator) as operator,
        AsyncClient(live.url, keys.admin) as admin,
    ):
        assert (await agent.health()).status == "ok"
        assert (await agent.ready()).ready
        me = agent.user(user)
        hard = await me.add_item(type="constraint", content="Never use Redis Cluster.", hard=True, source="user")
        batch = await me.add_items([{"type": "fact", "content": f"Cache fact {i}."} for i in range(5)])
        page = await me.list_items(limit=2)
        assert len(page.items) == 2 and page.next_cursor
        assert [i.id async for i in me.iter_items(limit=2, order="asc")] == [hard.id] + [i.id for i in batch.items]
        assert (await me.get_item(hard.id, level=0)).at_level is not None
        assert await me.expand(str(hard.id)[-8:]) == hard.content
        assert (await me.delete_item(batch.items[0].id)).status == "deleted"
        with pytest.raises(ItemNotFound):
            await me.get_item(uuid.uuid4())

        entry = await me.observe(dimension="preference", key="seat", value="aisle", session_id="s1")
        both = await me.observe_batch(
            [
                {"dimension": "preference", "key": "seat", "value": "aisle", "session_id": "s2"},
                {"dimension": "goal", "key": "trip", "value": "Lisbon", "session_id": "s2", "explicit": True},
            ]
        )
        assert both.items[0].id == entry.id
        assert (await me.profile(session_id="s2")).effective.session_id == "s2"
        evidence = await operator.user(user).profile_entry(entry.id)
        assert len(evidence.observations) == 2
        assert (await me.confirm(entry.id, note="yes")).tier == "long_term"
        assert (await me.reject(both.items[1].id)).status == "rejected"

        window = await me.window(input="Which cache?", max_tokens=1500)
        assert window.to_openai()[-1] == {"role": "user", "content": "Which cache?"}
        found = await me.search(query="cache fact", limit=2)
        assert len(found.items) == 2
        with pytest.raises(ValidationError):
            await me.search(query="cache", limit=0)

        appended = await me.append_messages(
            "s9", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
        )
        assert [m.seq for m in appended.items] == [1, 2]
        assert (await me.list_messages("s9", limit=1)).next_cursor is not None
        assert [m.seq async for m in me.iter_messages("s9", limit=1)] == [1, 2]
        removed = (await me.pop_message("s9")).removed
        assert removed is not None and removed.seq == 2 and removed.message["content"] == "Hello"
        assert (await me.end_session("s9")).messages == 1

        events = await operator.user(user).events(limit=3)
        assert len(events.items) == 3 and events.next_cursor
        assert len([e async for e in operator.user(user).iter_events(limit=3)]) > 3
        export = await operator.user(user).export()
        assert len(export.items) == 7  # six written, one episode kept by end_session

        run = await admin.run_job("promote", now=datetime(2027, 1, 1, tzinfo=UTC))
        assert run.name == "promote"
        assert run.id in [r.id for r in (await admin.job_runs(limit=10)).items]
        erased = await admin.user(user).erase()
        assert erased.erased and erased.rows["context_item"] == 7
