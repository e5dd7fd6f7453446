"""service/caches.py: the bounded LRU of derived window state (``WindowCache``), as properties over any sequence of
puts and gets. (Single cases, and the cache against the database: test_window_cache.py.)"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from service.caches import WindowCache

NOW = datetime(2026, 9, 1, tzinfo=UTC)
V = (1, 1, 1, 1)


@dataclass
class Entry:
    version: tuple[int, int, int, int]
    rows: int
    valid_from: datetime | None = None
    valid_until: datetime | None = None

    def valid_at(self, now: datetime) -> bool:
        return (self.valid_from is None or self.valid_from <= now) and (
            self.valid_until is None or now < self.valid_until
        )


KEYS = st.sampled_from("abcdef")
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), KEYS, st.integers(0, 40)),
        st.tuples(st.just("get"), KEYS, st.integers(0, 1)),
    ),
    max_size=60,
)


@given(OPS, st.integers(0, 4), st.integers(1, 60))
def test_bounds_and_row_count_hold_after_any_sequence(
    ops: list[tuple[str, str, int]], max_entries: int, max_rows: int
) -> None:
    cache = WindowCache()
    latest: dict[str, Entry] = {}
    gets = 0
    for op, key, n in ops:
        if op == "put":
            entry = Entry(V, n)
            cache.put(key, entry, max_entries=max_entries, max_rows=max_rows)
            latest[key] = entry
        else:
            gets += 1
            got = cache.get(key, V if n else (0, 0, 0, 0), NOW)
            if got is not None:
                assert got is latest[key]  # never an entry a later put replaced
        assert len(cache) <= max_entries
        assert cache.rows <= max_rows
        assert cache.rows == sum(e.rows for e in cache._entries.values())
    assert cache.hits + cache.misses == gets


def test_an_entry_too_large_to_keep_still_removes_the_one_it_replaces() -> None:
    cache = WindowCache()
    cache.put("k", Entry(V, 5), max_entries=4, max_rows=10)
    cache.put("k", Entry(V, 11), max_entries=4, max_rows=10)
    assert cache.get("k", V, NOW) is None and cache.rows == 0 and len(cache) == 0


def test_an_entry_is_used_only_inside_its_span() -> None:
    cache = WindowCache()
    start, end = NOW - timedelta(hours=1), NOW + timedelta(hours=1)
    cache.put("k", Entry(V, 1, valid_from=start, valid_until=end), max_entries=4, max_rows=10)
    assert cache.get("k", V, start - timedelta(seconds=1)) is None
    assert cache.get("k", V, start) is not None
    assert cache.get("k", V, end) is None
    assert (cache.hits, cache.misses, cache.stores) == (1, 2, 1)


def test_clear_empties_and_keeps_the_counters() -> None:
    cache = WindowCache()
    cache.put("k", Entry(V, 3), max_entries=4, max_rows=10)
    cache.get("k", V, NOW)
    cache.clear()
    assert (len(cache), cache.rows) == (0, 0)
    assert (cache.hits, cache.stores) == (1, 1)
    assert cache.get("k", V, NOW) is None


def test_the_process_caches_stay_under_one_byte_budget_and_report_what_they_hold() -> None:
    from service.caches import ROW_BYTES, CacheMetrics, ProcessCaches

    caches = ProcessCaches(max_bytes=10 * ROW_BYTES)
    for i in range(25):
        caches.held["t", str(i)] = object()
    assert caches.bytes <= caches.max_bytes and len(caches.held) == 10  # the oldest went first
    assert "24" in {k[1] for k in caches.held} and "0" not in {k[1] for k in caches.held}
    report = caches.report()
    assert report["held"] == (10 * ROW_BYTES, 10) and report["windows"] == (0, 0)
    assert sum(size for size, _ in report.values()) == caches.bytes
    families = {f.name: f for f in CacheMetrics(lambda: caches).collect()}
    held = [s.value for s in families["ctxmem_process_cache_entries"].samples if s.labels["cache"] == "held"]
    assert held == [10]
    caches.clear()
    assert caches.bytes == 0 and all(n == 0 for _, n in caches.report().values())


def test_the_byte_budget_is_the_setting() -> None:
    """CTXMEM_PROCESS_CACHE_BYTES reaches the app's caches, also when its lifespan has not run."""
    from types import SimpleNamespace

    from service.caches import app_caches
    from service.settings import Settings

    state = SimpleNamespace(settings=Settings(process_cache_bytes=12_345))
    assert app_caches(state).max_bytes == 12_345
    assert app_caches(state) is app_caches(state)  # built once
