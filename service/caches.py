"""Every cache a serving process keeps, in one owner (``ProcessCaches``): built once in the app's
``lifespan``, handed to service calls through the request context (``ctx.caches``), reported on
``/metrics`` (``CacheMetrics``: bytes and entries per cache) and emptied by one ``clear()``.

What a cache holds is derived from rows the database owns, and is used only after the request has
checked it against the database (a version, a count and sum of ``seq``) or is a pure function of its key.
So any entry may be dropped at any time, at the cost of working it out again, and each process keeps its
own. One rule for all of them: each is least-recently-used with its own bound, and together they stay
under one byte budget (``max_bytes``); past it, the cache holding the most bytes gives up its least
recently used entries first. Bytes are estimates (``weigh``), not measurements of the heap.

A key made of ``id(obj)`` would be reused by Python once ``obj`` is collected. Such a key is used only
by an entry that holds ``obj`` itself (so it cannot be collected while the entry is listed), and a hit is
confirmed with ``is`` against that object: a reused id can then only miss, never answer for another object.

The window cache (``WindowCache``) is keyed by what selects the rows (tenant, user, session/task/stage/step,
domains, tokenizer, value model) and holds the rows' version — ``repository.version_of`` over the items
and over the profile entries it was built from — and the span of time in which its split into live and
expired items holds. A request uses an entry only when ``repository.window_version`` reports the same
version now and the request's time lies in that span; otherwise it fetches the rows and replaces the
entry. Entries are never changed once stored (except for derived data they compute on first use,
synchronously), so requests in one event loop can share them safely.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, MutableMapping
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

V = TypeVar("V")

# All caches together, by default (the window state and the copies of users' texts are the large ones;
# their own bounds, CTXMEM_WINDOW_CACHE_* and CTXMEM_LEXICON_POSTINGS, hold inside it).
DEFAULT_MAX_BYTES = 1024 * 1024 * 1024

# Estimates of what an entry weighs. A record read in full, or an element made of one, holds its content
# and its five levels: ~3.7 KB with 350 characters of content (tracemalloc). A posting or a text of a copy
# of a user's texts (service/recall/lexicon.py): 10-25 bytes.
ROW_BYTES = 3_700
POSTING_BYTES = 25
SMALL_ENTRY_BYTES = 200  # a key, a tuple and a number or two


class Changes(Protocol):
    def __call__(self, delta: int) -> None: ...


def _ignore(delta: int) -> None:
    return None


class Memo(MutableMapping[Hashable, V], Generic[V]):
    """A least-recently-used map of at most ``max_entries`` entries, each weighing ``weigh(key, value)``
    bytes; it tells its owner how its bytes change (``on_change``)."""

    def __init__(self, *, max_entries: int, weigh: Callable[[Any, V], int]) -> None:
        self.max_entries = max_entries
        self.weigh = weigh
        self.bytes = 0
        self.on_change: Changes = _ignore
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __getitem__(self, key: Hashable) -> V:
        value, _ = self._entries[key]
        self._entries.move_to_end(key)
        return value

    def get(self, key: Hashable, default: Any = None) -> Any:
        found = self._entries.get(key)
        if found is None:
            return default
        self._entries.move_to_end(key)
        return found[0]

    def __setitem__(self, key: Hashable, value: V) -> None:
        old = self._entries.pop(key, None)
        size = self.weigh(key, value)
        delta = size - (old[1] if old is not None else 0)
        self._entries[key] = (value, size)
        while len(self._entries) > self.max_entries:
            _, (_, gone) = self._entries.popitem(last=False)
            delta -= gone
        self.bytes += delta
        self.on_change(delta)

    def __delitem__(self, key: Hashable) -> None:
        _, size = self._entries.pop(key)
        self.bytes -= size
        self.on_change(-size)

    def evict_oldest(self) -> None:
        _, (_, size) = self._entries.popitem(last=False)
        self.bytes -= size
        self.on_change(-size)

    def clear(self) -> None:
        freed, self.bytes = self.bytes, 0
        self._entries.clear()
        self.on_change(-freed)


class Cached(Protocol):
    version: tuple[int, int, int, int]
    rows: int  # what the entry weighs against ``max_rows``
    valid_from: datetime | None  # the latest expires_at already past when it was built
    valid_until: datetime | None  # the earliest expires_at still ahead

    def valid_at(self, now: datetime) -> bool: ...


class WindowCache:
    """Versioned entries (``Cached``), bounded by entries and by rows (LRU), each row weighing
    ``row_bytes``; counts its hits, misses, stores and evictions."""

    def __init__(self, *, row_bytes: int = ROW_BYTES) -> None:
        self._entries: OrderedDict[Hashable, Cached] = OrderedDict()
        self.rows = 0
        self.row_bytes = row_bytes
        self.hits = self.misses = self.stores = self.evictions = 0
        self.on_change: Changes = _ignore

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return self.rows * self.row_bytes

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
        before = self.rows
        old = self._entries.pop(key, None)
        if old is not None:
            self.rows -= old.rows
        if max_entries > 0 and entry.rows <= max_rows:
            self._entries[key] = entry
            self.rows += entry.rows
            self.stores += 1
            while len(self._entries) > max_entries or self.rows > max_rows:
                _, evicted = self._entries.popitem(last=False)
                self.rows -= evicted.rows
                self.evictions += 1
        self.on_change((self.rows - before) * self.row_bytes)

    def evict_oldest(self) -> None:
        _, evicted = self._entries.popitem(last=False)
        self.rows -= evicted.rows
        self.evictions += 1
        self.on_change(-evicted.rows * self.row_bytes)

    def clear(self) -> None:
        freed = self.bytes
        self._entries.clear()
        self.rows = 0
        self.on_change(-freed)


class Expiring(Generic[V]):
    """One value, read again once it is older than ``ttl`` seconds (by the caller's monotonic clock)."""

    def __init__(self, *, ttl: float, weigh: Callable[[V], int]) -> None:
        self.ttl = ttl
        self.weigh = weigh
        self.bytes = 0
        self.on_change: Changes = _ignore
        self._held: tuple[float, V] | None = None

    def __len__(self) -> int:
        return 0 if self._held is None else 1

    def get(self, now: float) -> V | None:
        if self._held is None or now - self._held[0] > self.ttl:
            return None
        return self._held[1]

    def put(self, now: float, value: V) -> None:
        size = self.weigh(value)
        delta, self.bytes = size - self.bytes, size
        self._held = (now, value)
        self.on_change(delta)

    def evict_oldest(self) -> None:
        self.clear()

    def clear(self) -> None:
        freed, self.bytes = self.bytes, 0
        self._held = None
        self.on_change(-freed)


def _fixed(size: int) -> Callable[[Any, Any], int]:
    return lambda key, value: size


def _text_bytes(key: Any, value: str) -> int:
    return SMALL_ENTRY_BYTES + len(value)


def _element_bytes(key: Any, value: Any) -> int:
    return SMALL_ENTRY_BYTES + sum(len(t) for t in value[2].texts)


def _chains_bytes(key: Any, value: Any) -> int:
    return SMALL_ENTRY_BYTES * (1 + len(key[0]))


class ProcessCaches:
    """The caches of one process, each named as ``/metrics`` reports it:

    - ``windows``: what a window derives from a user's rows (service/windows/state.py ``UserState``);
    - ``lexicons``: per-user copies of the lexical index (service/recall/lexicon.py);
    - ``asked``: the users without a copy who asked for a ranking lately (a copy is built at the second);
    - ``counts``: how many items apply to a selection (service/recall/repository.py ``applicable_count``);
    - ``shares``: the lexical index's most common lexemes and their shares (``term_shares``);
    - ``statements``: a large user's postings statement (``user_postings_sql``);
    - ``held``: item records read in full, by (tenant, id), in the version last read
      (service/windows/repository.py);
    - ``elements``: the window's element of an item row, by row version (service/windows/state.py);
    - ``counters``: memoised token counts, one counter per tokenizer (service/windows/service.py);
    - ``models``: the window's value model per configuration;
    - ``parts``, ``parts_by_element``, ``chains``: what ``scoring.window`` works out per element and per
      history (``scoring.window.Memos``, passed to it).
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        from scoring.window import Memos  # scoring holds no state: its memos are these

        self.max_bytes = max_bytes
        self.windows = WindowCache(row_bytes=ROW_BYTES)
        self.lexicons = WindowCache(row_bytes=POSTING_BYTES)
        self.asked: Memo[None] = Memo(max_entries=10_000, weigh=_fixed(SMALL_ENTRY_BYTES))
        self.counts: Memo[tuple[float, int]] = Memo(max_entries=100_000, weigh=_fixed(SMALL_ENTRY_BYTES))
        self.shares: Expiring[dict[str, float]] = Expiring(ttl=60.0, weigh=lambda v: SMALL_ENTRY_BYTES * len(v))
        self.statements: Memo[str] = Memo(max_entries=1_024, weigh=_text_bytes)
        self.held: Memo[Any] = Memo(max_entries=20_000, weigh=_fixed(ROW_BYTES))
        self.elements: Memo[Any] = Memo(max_entries=50_000, weigh=_element_bytes)
        self.counters: Memo[Any] = Memo(max_entries=64, weigh=lambda key, counter: counter.bytes)
        self.models: Memo[Any] = Memo(max_entries=64, weigh=_fixed(4 * SMALL_ENTRY_BYTES))
        self.memos = Memos(
            parts=Memo(max_entries=65_536, weigh=_fixed(2 * SMALL_ENTRY_BYTES)),
            by_element=Memo(max_entries=4_096, weigh=_fixed(SMALL_ENTRY_BYTES)),
            chains=Memo(max_entries=4_096, weigh=_chains_bytes),
        )
        self._bytes = 0
        self._shedding = False
        for cache in self._caches().values():
            cache.on_change = self._changed

    def _caches(self) -> dict[str, Any]:
        return {
            "windows": self.windows,
            "lexicons": self.lexicons,
            "asked": self.asked,
            "counts": self.counts,
            "shares": self.shares,
            "statements": self.statements,
            "held": self.held,
            "elements": self.elements,
            "counters": self.counters,
            "models": self.models,
            "parts": self.memos.parts,
            "parts_by_element": self.memos.by_element,
            "chains": self.memos.chains,
        }

    @property
    def bytes(self) -> int:
        return self._bytes

    def report(self) -> dict[str, tuple[int, int]]:
        """Each cache's (estimated bytes, entries)."""
        return {name: (cache.bytes, len(cache)) for name, cache in self._caches().items()}

    def clear(self) -> None:
        """Empty every cache (each process then reads and derives everything again)."""
        for cache in self._caches().values():
            cache.clear()

    def _changed(self, delta: int) -> None:
        self._bytes += delta
        if self._bytes > self.max_bytes and not self._shedding:
            self._shed()

    def _shed(self) -> None:
        """Past the budget: the cache holding the most bytes gives up its oldest entries first."""
        self._shedding = True
        try:
            while self._bytes > self.max_bytes:
                largest = max((c for c in self._caches().values() if len(c)), key=_bytes_of, default=None)
                if largest is None:
                    break
                largest.evict_oldest()
        finally:
            self._shedding = False


def _bytes_of(cache: Any) -> int:
    return int(cache.bytes)


class CacheMetrics(Collector):
    """``ctxmem_process_cache_bytes`` and ``ctxmem_process_cache_entries`` per cache, read from the
    process's caches when ``/metrics`` is scraped (none before the app has built them)."""

    def __init__(self, caches: Callable[[], ProcessCaches | None]) -> None:
        self._caches = caches

    def collect(self) -> Iterable[GaugeMetricFamily]:
        sizes = GaugeMetricFamily(
            "ctxmem_process_cache_bytes", "Estimated bytes a process's cache holds", labels=["cache"]
        )
        entries = GaugeMetricFamily("ctxmem_process_cache_entries", "Entries a process's cache holds", labels=["cache"])
        caches = self._caches()
        if caches is not None:
            for name, (size, n) in caches.report().items():
                sizes.add_metric([name], size)
                entries.add_metric([name], n)
        yield sizes
        yield entries


def app_caches(state: Any) -> ProcessCaches:
    """The caches of the app whose ``app.state`` is ``state``: built in its lifespan; an app driven without
    its lifespan (the tests, over ``ASGITransport``) gets them at their first use."""
    caches = getattr(state, "caches", None)
    if caches is None:
        settings = getattr(state, "settings", None)
        limit = settings.server.process_cache_bytes if settings is not None else DEFAULT_MAX_BYTES
        caches = state.caches = ProcessCaches(max_bytes=limit)
    return caches  # type: ignore[no-any-return]
