"""Every method of the sync client once, against a real ``ctxmem serve`` over HTTP."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from ctxmem_client import Client, Window
from ctxmem_client.models import Export, Health, Readiness

from tests.sdk.conftest import Keys, Live


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:10]}"


def test_health_and_ready(live: Live) -> None:
    with Client(live.url) as client:
        assert client.health() == Health(status="ok")
        ready = client.ready()
        assert isinstance(ready, Readiness)
        assert ready.ready, ready.checks
        assert {"database"} <= set(ready.checks)


def test_items_write_read_list_delete(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client:
        alice = client.user(_user())
        hard = alice.add_item(
            type="constraint", content="Do not recommend Redis Cluster: the team is small.", hard=True, source="user"
        )
        assert hard.hard and hard.type == "constraint" and hard.status == "available"
        first = alice.add_item(type="fact", key="budget", content="The budget is 300 EUR.", source="user", value=300)
        assert first.resolution is not None and first.resolution.outcome == "new"
        second = alice.add_item(type="fact", key="budget", content="The budget is 500 EUR.", source="user", value=500)
        assert second.resolution is not None and second.resolution.outcome == "replaced"
        assert second.resolution.retired_ids == [first.id]

        batch = alice.add_items(
            [
                {"type": "tool_result", "content": '{"cache":"memcached","p99_ms":3}', "source": "tool"},
                {"type": "goal", "content": "Choose a cache.", "source": "user", "task_id": "t1", "scope": "task"},
            ]
        )
        assert [i.type for i in batch.items] == ["tool_result", "goal"]

        page = alice.list_items(type=["constraint", "fact"], order="asc")
        assert [i.id for i in page.items] == [hard.id, second.id]
        history = alice.list_items(key="budget", include_superseded=True, order="asc")
        assert [(i.id, i.status) for i in history.items] == [(first.id, "superseded"), (second.id, "available")]

        got = alice.get_item(hard.id)
        assert got.id == hard.id and got.at_level is None
        at = alice.get_item(str(hard.id), level=4)
        assert at.at_level is not None and at.at_level.level == 4 and at.at_level.tokens > 0
        # expand: the whole text by the handle a window shows before a shortened line (the id's end), or the id.
        assert alice.expand(str(hard.id)[-8:]) == alice.expand(hard.id) == hard.content

        deleted = alice.delete_item(batch.items[0].id)
        assert deleted.status == "deleted" and deleted.deleted_at is not None


def test_observations_profile_confirm_reject(live: Live, keys: Keys) -> None:
    user = _user()
    with Client(live.url, keys.agent) as agent, Client(live.url, keys.operator) as operator:
        me = agent.user(user)
        entry = me.observe(
            domain="phone", dimension="preference", key="brand", value="xiaomi", session_id="s1", context="buy"
        )
        assert entry.key == "brand" and entry.value == "xiaomi" and entry.evidence_ids
        batch = me.observe_batch(
            [
                {"domain": "phone", "dimension": "preference", "key": "brand", "value": "xiaomi", "session_id": "s2"},
                {"dimension": "decision_style", "key": "pace", "value": "decides quickly", "session_id": "s2"},
            ]
        )
        assert [e.key for e in batch.items] == ["brand", "pace"]
        profile = me.profile(domains=["phone"], session_id="s2")
        assert profile.tiers and profile.effective.session_id == "s2"
        assert me.profile(tiers=["long_term"]).tiers.get("current") is None

        evidence = operator.user(user).profile_entry(entry.id)
        assert evidence.entry.id == entry.id and len(evidence.observations) == 2 and evidence.events

        confirmed = me.confirm(entry.id, session_id="s3", note="user: yes")
        assert (confirmed.tier, confirmed.status) == ("long_term", "active")
        rejected = operator.user(user).reject(entry.id)
        assert rejected.status == "rejected"
        assert me.confirm(batch.items[1].id).tier == "long_term"


def test_window_and_search(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client:
        me = client.user(_user())
        me.add_item(type="constraint", content="Never use Redis Cluster.", hard=True, source="user")
        me.add_item(type="tool_result", content="Benchmark: memcached p99 3 ms, redis p99 2 ms.", source="tool")
        window = me.window(
            input="Which cache should we use?",
            max_tokens=2000,
            session_id="s1",
            messages=[
                {"role": "user", "content": "We need a cache for the catalogue."},
                {"role": "assistant", "content": "Let me check the benchmarks."},
            ],
        )
        assert isinstance(window, Window) and window.input == "Which cache should we use?"
        assert window.text.endswith("## Latest input\nWhich cache should we use?\n\n")
        assert window.tokens.used <= window.tokens.budget == 2000
        assert "Never use Redis Cluster." in window.text
        assert [m["role"] for m in window.messages] == ["user", "assistant"]
        by_limit = me.window(input="Which cache?", context_limit=128000, reserve_tokens=8000)
        assert by_limit.tokens.budget == 76800

        found = me.search(query="cache benchmark", limit=3)
        assert found.items and found.items[0].item.type == "tool_result"
        hit = found.items[0]
        assert hit.score == 1.0 and hit.lexical is not None and "benchmark" in hit.matched and hit.why
        narrow = me.search(query="redis cluster", types=["constraint"], budget=200, statuses=["available"])
        assert [h.item.type for h in narrow.items] == ["constraint"] and narrow.tokens.budget == 200
        later = me.search(query="cache", observed_after=datetime(2100, 1, 1, tzinfo=UTC))
        assert later.items == []


def test_window_archive_dropped_writes_once(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client:
        me = client.user(_user())
        history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " * 40} for i in range(20)]
        window = me.window(input="And now?", max_tokens=300, messages=history, archive_dropped=True)
        assert window.archived_item_id is not None
        assert me.get_item(window.archived_item_id).type == "episode"


def test_events_export_erase(live: Live, keys: Keys) -> None:
    user = _user()
    with Client(live.url, keys.agent) as agent, Client(live.url, keys.operator) as op:
        agent.user(user).add_item(type="fact", content="Bob prefers email.")
        agent.user(user).observe(dimension="preference", key="channel", value="email", session_id="s1")
        page = op.user(user).events(kinds=["item"], limit=5)
        assert [e.action for e in page.items] == ["item.created"]
        timeline = list(op.user(user).iter_events(order="asc"))
        assert timeline[0].action == "item.created" and len(timeline) > 1
        export = op.user(user).export()
        assert isinstance(export, Export) and export.user_id == user
        assert len(export.items) == 1 and len(export.profile_entries) == 1 and export.events
    with Client(live.url, keys.admin) as admin:
        erased = admin.user(user).erase()
        assert erased.erased and erased.rows["context_item"] == 1
        assert erased.user_fingerprint.startswith("sha256:")


def test_jobs(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.admin) as admin:
        run = admin.run_job("decay", now=datetime(2027, 6, 1, tzinfo=UTC))
        assert (run.name, run.status) == ("decay", "succeeded") and run.as_of.year == 2027
        assert admin.run_job("expire").name == "expire"
        runs = admin.job_runs(name="decay", limit=5)
        assert run.id in [r.id for r in runs.items]


def test_pagination_follows_cursors(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client, Client(live.url, keys.operator) as op:
        me = client.user(_user())
        written = me.add_items([{"type": "fact", "content": f"Fact number {i}."} for i in range(7)])
        first = me.list_items(limit=3)
        assert len(first.items) == 3 and first.next_cursor is not None
        got = list(me.iter_items(limit=3, order="asc"))
        assert [i.id for i in got] == [i.id for i in written.items]
        assert list(me.iter_items(limit=3, type=["goal"])) == []
        events = list(op.user(me.user_id).iter_events(limit=2))
        assert len(events) == 7 and len({e.id for e in events}) == 7


def test_conversations(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client:
        me = client.user(_user())
        turns = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"Turn {i} about caches."} for i in range(5)
        ]
        appended = me.append_messages("s1", turns)
        assert [m.seq for m in appended.items] == [1, 2, 3, 4, 5] and appended.session_id == "s1"
        page = me.list_messages("s1", limit=2)
        assert [m.seq for m in page.items] == [1, 2] and page.next_cursor is not None
        assert [m.message for m in me.iter_messages("s1", limit=2)] == turns
        window = me.window(input="Which cache then?", max_tokens=2000, session_id="s1")
        assert window.messages == turns
        out = window.to_openai()
        # the user has no items: the text is the latest input alone, so there is no system message
        assert out == [*turns, {"role": "user", "content": "Which cache then?"}]
        popped = me.pop_message("s1")
        assert popped.removed is not None and popped.removed.seq == 5 and popped.removed.message == turns[-1]
        me.append_messages("s1", turns[-1:])
        ended = me.end_session("s1")
        assert ended.messages == 5 and ended.archived_item_id is not None
        assert me.list_messages("s1").items == []
        assert me.get_item(ended.archived_item_id).type == "episode"
