"""When a failed change of the vector outbox is tried again (docs/design.md §3.8).

Exponential backoff: a change that has failed ``attempts`` times waits ``BASE_SECONDS * 2**attempts``
seconds — 1 s after its first failure (0.5 s * 2**1), then 2, 4, 8, 16 s … — and never more than the
cap, the setting ``CTXMEM_OUTBOX_MAX_BACKOFF_SECONDS`` (60 s by default). The doubling lets a short index
or embedder blip clear in a second or two, while a long outage costs one attempt a minute, not a storm.
"""

from __future__ import annotations

from typing import Final

# Half a second, so that the first retry (attempts = 1) comes one second after the failure.
BASE_SECONDS: Final = 0.5


def retry_delay(attempts: int, *, max_seconds: float) -> float:
    """Seconds to wait before the next try of a change that has now failed ``attempts`` (≥ 1) times:
    ``min(max_seconds, 0.5 * 2**attempts)``."""
    if attempts < 1:
        raise ValueError("a change is rescheduled only after it has failed at least once")
    # Past 2**64 the doubling is far beyond any cap; stopping there keeps the float finite.
    return min(max_seconds, BASE_SECONDS * 2.0 ** min(attempts, 64))
