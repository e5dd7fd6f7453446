"""The LangGraph store against the real service: the BaseStore contract, case by case, with LangGraph's own
InMemoryStore as the reference (langgraph ships no reusable store conformance suite), then what only ctxmem
does (slot history, search ranking, items a window sees)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from ctxmem_client import Client
from ctxmem_client.langgraph import CtxmemStore, escape, parse_slot, slot_key, unescape
from langgraph.store.base import BaseStore, InvalidNamespaceError, Item
from langgraph.store.memory import InMemoryStore

from tests.sdk.conftest import Keys, Live


@pytest.fixture
def store(live: Live, keys: Keys) -> Iterator[CtxmemStore]:
    with Client(live.url, api_key=keys.agent) as client:
        yield CtxmemStore(client.user("alice"))


def seed(store: BaseStore) -> None:
    store.put(("users", "alice", "prefs"), "food", {"likes": "pizza", "level": 3})
    store.put(("users", "alice", "prefs"), "drink", {"likes": "tea", "level": 1})
    store.put(("users", "alice", "notes"), "n1", {"text": "met Bob in Porto", "tags": ["work"], "level": 0})
    store.put(("users", "bob", "prefs"), "food", {"likes": "sushi", "level": 2})
    store.put(("docs",), "readme é/ü", {"title": "Read me", "nested": {"a": {"b": 1}}})


def view(item: Item | None) -> tuple[tuple[str, ...], str, dict[str, Any]] | None:
    return None if item is None else (item.namespace, item.key, item.value)


# The contract, as LangGraph's reference store answers it: each case runs on both stores, results compared.
CASES: list[tuple[str, Any]] = [
    ("get", lambda s: view(s.get(("users", "alice", "prefs"), "food"))),
    ("get missing", lambda s: view(s.get(("users", "alice", "prefs"), "nope"))),
    ("get other namespace", lambda s: view(s.get(("users", "bob", "prefs"), "food"))),
    ("get escaped key", lambda s: view(s.get(("docs",), "readme é/ü"))),
    ("put replaces", lambda s: (s.put(("docs",), "readme é/ü", {"title": "v2"}), view(s.get(("docs",), "readme é/ü")))),
    ("delete", lambda s: (s.delete(("users", "bob", "prefs"), "food"), view(s.get(("users", "bob", "prefs"), "food")))),
    ("delete missing", lambda s: s.delete(("users", "bob", "prefs"), "never")),
    (
        "put after delete",
        lambda s: (
            s.delete(("docs",), "readme é/ü"),
            s.put(("docs",), "readme é/ü", {"v": 3}),
            view(s.get(("docs",), "readme é/ü")),
        ),
    ),
    ("search prefix", lambda s: sorted(view(i) for i in s.search(("users", "alice")))),
    ("search all", lambda s: sorted(view(i) for i in s.search(()))),
    ("search filter eq", lambda s: [view(i) for i in s.search(("users",), filter={"likes": "tea"})]),
    ("search filter op", lambda s: sorted(view(i) for i in s.search(("users",), filter={"level": {"$gte": 2}}))),
    ("search filter nested", lambda s: [view(i) for i in s.search((), filter={"nested": {"a": {"b": 1}}})]),
    ("search filter list", lambda s: [view(i) for i in s.search((), filter={"tags": ["work"]})]),
    ("search limit", lambda s: len(s.search(("users",), limit=2))),
    ("search offset", lambda s: len(s.search(("users",), offset=3))),
    ("list namespaces", lambda s: s.list_namespaces()),
    ("list prefix", lambda s: s.list_namespaces(prefix=("users", "alice"))),
    ("list wildcard", lambda s: s.list_namespaces(prefix=("users", "*", "prefs"))),
    ("list suffix", lambda s: s.list_namespaces(suffix=("prefs",))),
    ("list max depth", lambda s: s.list_namespaces(max_depth=2)),
    ("list limit offset", lambda s: s.list_namespaces(limit=2, offset=1)),
]


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_contract_matches_the_reference_store(store: CtxmemStore, name: str, case: Any) -> None:
    reference = InMemoryStore()
    seed(reference)
    seed(store)
    assert case(store) == case(reference)


async def test_async_methods(store: CtxmemStore) -> None:
    await store.aput(("a", "b"), "k", {"x": 1})
    got = await store.aget(("a", "b"), "k")
    assert got is not None and got.value == {"x": 1}
    assert [i.key for i in await store.asearch(("a",))] == ["k"]
    assert await store.alist_namespaces() == [("a", "b")]
    await store.adelete(("a", "b"), "k")
    assert await store.aget(("a", "b"), "k") is None


def test_invalid_namespaces_are_refused(store: CtxmemStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"x": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph",), "k", {"x": 1})
    with pytest.raises(ValueError, match="200"):
        store.put(("n" * 150,), "k" * 60, {"x": 1})


def test_a_second_put_supersedes_the_first_in_the_slot(store: CtxmemStore) -> None:
    store.put(("users", "alice"), "city", {"city": "Porto"})
    store.put(("users", "alice"), "city", {"city": "Lisbon"})
    history = store.user.list_items(key=slot_key(("users", "alice"), "city"), include_superseded=True, order="asc")
    assert [(i.value, i.status) for i in history.items] == [
        ({"city": "Porto"}, "superseded"),
        ({"city": "Lisbon"}, "available"),
    ]
    assert history.items[1].domain == "users" and history.items[1].content == '{"city": "Lisbon"}'
    store.delete(("users", "alice"), "city")
    assert store.user.get_item(history.items[1].id).status == "deleted"


def test_search_with_a_query_ranks_and_reaches_the_window(store: CtxmemStore) -> None:
    seed(store)
    store.user.add_item(type="fact", content="Alice likes pizza too, but this item is not the store's.")
    hits = store.search(("users",), query="pizza")
    assert hits and hits[0].key == "food" and hits[0].namespace == ("users", "alice", "prefs")
    assert hits[0].score is not None and hits[0].score > 0
    assert all(h.namespace[0] == "users" for h in hits)
    # The namespace prefix narrows the ranking: only bob's documents, none of which mentions pizza (a weak
    # vector match of another of his documents may still rank).
    bobs = store.search(("users", "bob"), query="pizza")
    assert all(h.namespace[:2] == ("users", "bob") and "pizza" not in str(h.value) for h in bobs)
    window = store.user.window(input="What food does Alice like?", max_tokens=2000)
    assert "pizza" in window.text


def test_ttl_sets_an_expiry(store: CtxmemStore) -> None:
    store.put(("tmp",), "k", {"x": 1}, ttl=60)
    (item,) = store.user.list_items(key=slot_key(("tmp",), "k")).items
    assert item.expires_at is not None


def test_the_slot_key_escaping_round_trips() -> None:
    for label in ["plain", "with space", "slash/colon:at@", "é ü 日本", "a-b_c.d", ""]:
        assert unescape(escape(label)) == label
        assert set(escape(label)) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-:")
    assert parse_slot(slot_key(("x", "y/z"), "k:1")) == (("x", "y/z"), "k:1")
    assert parse_slot("budget") is None
