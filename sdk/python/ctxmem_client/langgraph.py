"""A LangGraph ``BaseStore`` on ctxmem: ``pip install 'ctxmem-client[langgraph]'``.

The mapping (one store per ctxmem user: the user is configuration, never part of a namespace):

- a document ``(namespace, key)`` is the slot ``lg/<label>/<label>/…/<key>`` of the user's items, each
  label and the key escaped so the slot key stays in ctxmem's alphabet (``[A-Za-z0-9._-]`` kept, every
  other byte of its UTF-8 as ``:XX``); the first label, escaped, is also the item's ``domain``, so a search
  under a namespace prefix is narrowed on the server;
- ``put`` writes an item (``type`` ``fact`` unless configured, ``scope`` ``user``) with ``value`` = the
  document and ``content`` = its JSON, which is what windows show and search ranks. A second ``put`` of the
  same key supersedes the first through ctxmem's slot resolution (the older stays, ``superseded``, in the
  slot's history); the same value again only reinforces it. ``ttl`` (minutes) becomes ``expires_at``;
- ``put`` of ``None`` (``delete``) deletes the slot's active item (a tombstone, as ``DELETE …/items/{id}``);
- ``get`` is the slot's active item; ``search`` with a ``query`` is ``POST …/search`` (scores are ctxmem's
  hybrid score), without one the active items, newest first; ``filter`` is applied to the values as
  LangGraph's stores do (equality, nested dicts, ``$eq $ne $gt $gte $lt $lte``); ``list_namespaces`` reads
  the user's ``lg/`` items.

Not mapped: ``index`` (ctxmem indexes every item's content itself), ``refresh_ttl`` (an expiry is not
extended by reads). A slot key is at most 200 characters: a longer namespace and key raise ``ValueError``.
``created_at`` is the active version's (a slot's versions are separate items). The ops of one ``batch`` run
in order, each an HTTP call; ``abatch`` runs ``batch`` in a worker thread (the ``Client`` is thread-safe).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ctxmem_client.client import User
from ctxmem_client.models import Item as CtxmemItem
from ctxmem_client.models import ItemCreate, ItemType

PREFIX = "lg"
MAX_KEY_CHARS = 200  # the server's slot key limit (schemas/common.py SlotKey)
MAX_DOMAIN_CHARS = 64  # the server's domain limit
SEARCH_LIMIT = 100  # the most a search returns; the namespace and the filter are applied to these
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def escape(label: str) -> str:
    return "".join(c if c in _SAFE else "".join(f":{b:02X}" for b in c.encode()) for c in label)


def unescape(text: str) -> str:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == ":":
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out += text[i].encode()
            i += 1
    return out.decode()


def slot_key(namespace: tuple[str, ...], key: str) -> str:
    slot = "/".join([PREFIX, *(escape(label) for label in namespace), escape(key)])
    if len(slot) > MAX_KEY_CHARS:
        raise ValueError(f"namespace and key make a slot key of {len(slot)} characters; ctxmem allows {MAX_KEY_CHARS}")
    return slot


def parse_slot(slot: str | None) -> tuple[tuple[str, ...], str] | None:
    """``(namespace, key)`` of a slot key this store wrote, else ``None``."""
    if slot is None:
        return None
    parts = slot.split("/")
    if len(parts) < 3 or parts[0] != PREFIX:
        return None
    return tuple(unescape(p) for p in parts[1:-1]), unescape(parts[-1])


def domain_of(namespace: tuple[str, ...]) -> str | None:
    """The first label, escaped, when it fits a ctxmem domain."""
    if not namespace:
        return None
    domain = escape(namespace[0])
    return domain if len(domain) <= MAX_DOMAIN_CHARS else None


def _validate(namespace: tuple[str, ...]) -> None:
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidNamespaceError(f"invalid namespace label {label!r} in {namespace}")


def matches_filter(value: Any, condition: Any) -> bool:
    """LangGraph's filter semantics (as its in-memory and Postgres stores): dicts compare key by key,
    lists element by element, an operator dict applies each of its operators."""
    if isinstance(condition, dict):
        if any(k.startswith("$") for k in condition):
            return all(_operator(value, op, arg) for op, arg in condition.items())
        return isinstance(value, dict) and all(matches_filter(value.get(k), v) for k, v in condition.items())
    if isinstance(condition, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(condition)
            and all(matches_filter(v, c) for v, c in zip(value, condition, strict=True))
        )
    return bool(value == condition)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if value is None:
        return False
    if op == "$gt":
        return float(value) > float(arg)
    if op == "$gte":
        return float(value) >= float(arg)
    if op == "$lt":
        return float(value) < float(arg)
    if op == "$lte":
        return float(value) <= float(arg)
    raise ValueError(f"unsupported filter operator {op}")


def _matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path, strict=False)
    if condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    elif condition.match_type != "prefix":
        raise ValueError(f"unsupported match type {condition.match_type}")
    return all(p == "*" or n == p for n, p in pairs)


class CtxmemStore(BaseStore):
    """``CtxmemStore(client.user("alice"))``: the documents of one ctxmem user, as items (see the module)."""

    supports_ttl: bool = True

    def __init__(self, user: User, *, item_type: ItemType = "fact") -> None:
        self.user = user
        self.item_type: ItemType = item_type

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                _validate(op.namespace)
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                _validate(op.namespace)
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                _validate(op.namespace_prefix)
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    _validate(tuple(label for label in condition.path if label != "*"))
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store operation {op!r}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # The operations

    def _active(self, namespace: tuple[str, ...], key: str) -> list[CtxmemItem]:
        return self.user.list_items(key=slot_key(namespace, key), limit=10).items

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        found = self._active(namespace, key)
        return _to_item(found[0]) if found else None

    def _put(self, op: PutOp) -> None:
        if op.value is None:
            for item in self._active(op.namespace, op.key):
                self.user.delete_item(item.id)
            return
        value = dict(op.value)
        body: ItemCreate = {
            "type": self.item_type,
            "key": slot_key(op.namespace, op.key),
            "value": value,
            "content": json.dumps(value, ensure_ascii=False, sort_keys=True),
            "scope": "user",
        }
        domain = domain_of(op.namespace)
        if domain is not None:
            body["domain"] = domain
        if op.ttl is not None:
            body["expires_at"] = datetime.now(UTC) + timedelta(minutes=op.ttl)
        self.user.add_item(**body)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = op.namespace_prefix
        domain = domain_of(prefix)
        found: list[SearchItem] = []
        for item, score in self._candidates(op.query, domain):
            parsed = parse_slot(item.key)
            if parsed is None or parsed[0][: len(prefix)] != prefix or not isinstance(item.value, dict):
                continue
            if op.filter and not all(matches_filter(item.value.get(k), v) for k, v in op.filter.items()):
                continue
            found.append(_to_search_item(item, parsed, score))
        return found[op.offset : op.offset + op.limit]

    def _candidates(self, query: str | None, domain: str | None) -> Iterator[tuple[CtxmemItem, float | None]]:
        if query:
            if domain is None:
                results = self.user.search(query=query, limit=SEARCH_LIMIT)
            else:
                results = self.user.search(query=query, limit=SEARCH_LIMIT, domains=[domain])
            for hit in results.items:
                yield hit.item, hit.score
            return
        items = (
            self.user.iter_items(order="desc", limit=200)
            if domain is None
            else self.user.iter_items(order="desc", limit=200, domain=domain)
        )
        for item in items:
            yield item, None

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = set()
        for item in self.user.iter_items(limit=200):
            parsed = parse_slot(item.key)
            if parsed is None:
                continue
            namespace = parsed[0]
            if all(_matches_condition(c, namespace) for c in op.match_conditions or ()):
                namespaces.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(namespaces)[op.offset : op.offset + op.limit]


def _to_item(item: CtxmemItem) -> Item:
    parsed = parse_slot(item.key)
    assert parsed is not None  # found by its slot key
    return Item(
        value=item.value, key=parsed[1], namespace=parsed[0], created_at=item.created_at, updated_at=item.updated_at
    )


def _to_search_item(item: CtxmemItem, parsed: tuple[tuple[str, ...], str], score: float | None) -> SearchItem:
    return SearchItem(
        namespace=parsed[0],
        key=parsed[1],
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )


__all__ = ["CtxmemStore"]
