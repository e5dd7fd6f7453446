"""A per-process cache of what a window derives from a user's rows, checked against the database on
every request.

An entry is keyed by what selects the rows (tenant, user, session/task/stage/step, domains, tokenizer) and
holds the rows' version — ``repository.version_of`` over the items and over the profile entries it was
built from — and the span of time in which its split into live and expired items holds. A request uses
an entry only when ``repository.window_version`` reports the same version now and the request's time lies
in that span; otherwise it fetches the rows and replaces the entry. The database is the source of truth,
so replicas each keep their own cache and never serve what another one changed.

Bounded by entries and by rows (LRU). Entries are never changed once stored (except for derived data
they compute on first use, synchronously), so requests in one event loop can share them safely.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from datetime import datetime
from typing import Protocol


class Cached(Protocol):
    version: tuple[int, int, int, int]
    rows: int  # what the entry weighs against ``max_rows``
    valid_from: datetime | None  # the latest expires_at already past when it was built
    valid_until: datetime | None  # the earliest expires_at still ahead

    def valid_at(self, now: datetime) -> bool: ...


class WindowCache:
    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, Cached] = OrderedDict()
        self.rows = 0
        self.hits = self.misses = self.stores = self.evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, version: tuple[int, int, int, int], now: datetime) -> Cached | None:
        entry = self._entries.get(key)
        if entry is None or entry.version != version or not entry.valid_at(now):
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry

    def peek(self, key: Hashable) -> Cached | None:
        """The entry held for ``key`` whatever its version (to bring it up to date), without counting a
        hit or a miss."""
        return self._entries.get(key)

    def put(self, key: Hashable, entry: Cached, *, max_entries: int, max_rows: int) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self.rows -= old.rows
        if max_entries <= 0 or entry.rows > max_rows:
            return
        self._entries[key] = entry
        self.rows += entry.rows
        self.stores += 1
        while len(self._entries) > max_entries or self.rows > max_rows:
            _, evicted = self._entries.popitem(last=False)
            self.rows -= evicted.rows
            self.evictions += 1

    def clear(self) -> None:
        self._entries.clear()
        self.rows = 0


# One per process: entries are only ever used after ``window_version`` confirmed them.
CACHE = WindowCache()
