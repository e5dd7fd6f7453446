"""Retries against real servers: a write whose answer is lost is sent again with the same Idempotency-Key
and applied once; 429 is retried after Retry-After; a connection that never succeeds ends in
ConnectionFailed after the configured attempts. The waits go through an injected sleep, recorded."""

from __future__ import annotations

import socket
import time
import uuid

import pytest
from ctxmem_client import AsyncClient, Client, ConnectionFailed, RateLimited, RetryPolicy

from tests.sdk.conftest import Keys, Live
from tests.sdk.proxy import DroppingProxy


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:10]}"


def test_a_write_whose_answer_was_lost_is_applied_once(live: Live, keys: Keys) -> None:
    waits: list[float] = []
    me = _user()
    with DroppingProxy(live.url, drop=1) as proxy, Client(proxy.url, keys.agent, sleep=waits.append) as client:
        item = client.user(me).add_item(type="fact", content="The budget is 300 EUR.", source="user")
        assert proxy.dropped == 1 and proxy.connections == 2
    assert len(waits) == 1
    with Client(live.url, keys.agent) as client:
        stored = client.user(me).list_items()
        assert [i.id for i in stored.items] == [item.id]


def test_a_batch_and_a_delete_are_applied_once_after_two_lost_answers(live: Live, keys: Keys) -> None:
    me = _user()
    with DroppingProxy(live.url, drop=2) as proxy, Client(proxy.url, keys.agent, sleep=lambda s: None) as client:
        batch = client.user(me).add_items([{"type": "fact", "content": f"Fact {i}."} for i in range(3)])
        assert proxy.dropped == 2
        proxy.to_drop = 3
        deleted = client.user(me).delete_item(batch.items[0].id)
        assert deleted.status == "deleted" and proxy.dropped == 3
    with Client(live.url, keys.agent) as client:
        assert len(client.user(me).list_items(include_deleted=True).items) == 3


def test_each_call_has_its_own_key(live: Live, keys: Keys) -> None:
    """Two calls with the same body are two writes: the key is per call, not per body."""
    me = _user()
    with Client(live.url, keys.agent) as client:
        a = client.user(me).add_item(type="fact", content="Said twice.")
        b = client.user(me).add_item(type="fact", content="Said twice.")
        assert a.id != b.id


async def test_the_async_client_retries_a_lost_answer_too(live: Live, keys: Keys) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    me = _user()
    with DroppingProxy(live.url, drop=1) as proxy:
        async with AsyncClient(proxy.url, keys.agent, sleep=sleep) as client:
            entry = await client.user(me).observe(dimension="preference", key="seat", value="aisle", session_id="s1")
    assert waits and entry.evidence_count == 1
    async with AsyncClient(live.url, keys.agent) as client:
        profile = await client.user(me).profile()
        assert [e.evidence_count for t in profile.tiers.values() for es in t.values() for e in es] == [1]


def test_429_is_retried_after_retry_after(limited: Live, limited_keys: Keys) -> None:
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)  # the limited server's bucket refills in real time

    with Client(limited.url, limited_keys.agent, sleep=sleep) as client:
        me = client.user(_user())
        assert me.add_item(type="fact", content="First.").content == "First."
        # Over the limit (one a second): 429 with Retry-After: 1, a wait, then the same write again, once.
        assert me.add_item(type="fact", content="Second.").content == "Second."
        assert len(waits) == 1 and 1.0 <= waits[0] <= 1.5
        time.sleep(1)
        assert [i.content for i in me.list_items(order="asc").items] == ["First.", "Second."]


def test_429_raises_rate_limited_when_no_retry_is_left(limited: Live, limited_keys: Keys) -> None:
    with Client(limited.url, limited_keys.agent, max_retries=0) as client:
        client.health()
        with pytest.raises(RateLimited) as caught:
            client.health()
    err = caught.value
    assert err.status == 429 and err.slug == "rate-limited" and err.retry_after == 1.0
    assert err.body["retry_after"] == 1


def test_a_long_retry_after_is_not_waited(limited: Live, limited_keys: Keys) -> None:
    waits: list[float] = []
    policy = RetryPolicy(max_retries=3, max_retry_after=0.5)
    with Client(limited.url, limited_keys.agent, retry=policy, sleep=waits.append) as client:
        client.health()
        with pytest.raises(RateLimited):
            client.health()
    assert waits == []


def test_connection_refused_ends_in_connection_failed() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there afterwards
    waits: list[float] = []
    policy = RetryPolicy(max_retries=2, backoff_base=0.5, backoff_max=8.0)
    client = Client(f"http://127.0.0.1:{port}", retry=policy, sleep=waits.append)
    with client, pytest.raises(ConnectionFailed) as caught:
        client.user("alice").add_item(type="fact", content="x")
    assert caught.value.status == 0 and "3 attempt(s)" in caught.value.detail
    assert len(waits) == 2 and 0.25 <= waits[0] <= 0.5 and 0.5 <= waits[1] <= 1.0
