"""The context-management figures of served windows as Prometheus series (docs/operations.md, Metrics):
how full each window is, how much of it is pinned, its mode, what was kept whole, compressed or left out,
whether a session's stable prefix was the same as in its previous window (the proxy for a prompt-cache
hit), and how many of the items relevant to the query reached the window.

Per process, like every Prometheus series: N API processes give N series to sum. The prefix comparison
remembers the last prefix of up to ``SESSIONS`` sessions per process, so with several processes behind a
balancer a session's consecutive windows may land on different processes and count as ``first``."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

RATIO_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
SESSIONS = 10_000


@dataclass(frozen=True)
class WindowStats:
    """What one served window says about its context management."""

    mode: str
    budget: int
    used: int
    pinned: int
    whole: int  # loose items placed at their original text
    compressed: int  # loose items placed at a shorter level
    omitted: int
    relevant: int  # items the query's relevance ranked
    relevant_placed: int  # of those, placed in the window at any level
    session: tuple[str, str, str] | None  # (tenant, user, session) when the request named a session
    prefix_hash: str


class WindowMetrics:
    """The series, in the app's registry, and the last prefix hash of recent sessions."""

    def __init__(self, registry: CollectorRegistry, *, sessions: int = SESSIONS) -> None:
        self.windows = Counter("ctxmem_windows", "Windows served, by mode", ["mode"], registry=registry)
        self.utilisation = Histogram(
            "ctxmem_window_utilisation_ratio", "Tokens used / budget", buckets=RATIO_BUCKETS, registry=registry
        )
        self.pinned_share = Histogram(
            "ctxmem_window_pinned_share_ratio",
            "Pinned tokens / tokens used",
            buckets=RATIO_BUCKETS,
            registry=registry,
        )
        self.items = Counter(
            "ctxmem_window_items",
            "Candidate items by what the window did with them: whole, compressed (a shorter level), omitted",
            ["outcome"],
            registry=registry,
        )
        self.prefix = Counter(
            "ctxmem_window_prefix",
            "Windows of a session whose stable prefix (rules, long-term profile) is the same as the session's "
            "previous window in this process (reused), differs (changed), or has none to compare (first)",
            ["outcome"],
            registry=registry,
        )
        self.coverage = Histogram(
            "ctxmem_window_recall_coverage_ratio",
            "Share of the items relevant to the query that reached the window (windows with any relevant item)",
            buckets=RATIO_BUCKETS,
            registry=registry,
        )
        self._last_prefix: OrderedDict[tuple[str, str, str], str] = OrderedDict()
        self._sessions = sessions

    def observe(self, stats: WindowStats) -> None:
        self.windows.labels(stats.mode).inc()
        if stats.budget > 0:
            self.utilisation.observe(stats.used / stats.budget)
        if stats.used > 0:
            self.pinned_share.observe(stats.pinned / stats.used)
        for outcome, n in (("whole", stats.whole), ("compressed", stats.compressed), ("omitted", stats.omitted)):
            if n:
                self.items.labels(outcome).inc(n)
        if stats.relevant:
            self.coverage.observe(stats.relevant_placed / stats.relevant)
        if stats.session is not None:
            self.prefix.labels(self._prefix_outcome(stats.session, stats.prefix_hash)).inc()

    def _prefix_outcome(self, session: tuple[str, str, str], prefix_hash: str) -> str:
        last = self._last_prefix.pop(session, None)
        self._last_prefix[session] = prefix_hash
        while len(self._last_prefix) > self._sessions:
            self._last_prefix.popitem(last=False)
        if last is None:
            return "first"
        return "reused" if last == prefix_hash else "changed"
