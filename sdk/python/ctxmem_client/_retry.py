"""When to try a request again, and how long to wait first.

Retried: 429 and 503 (after ``Retry-After`` when the server sends it), 409 ``idempotency-in-progress`` (the
first attempt of the same call is still running) and connection failures. Writes are retried too: every
attempt of one call carries the same ``Idempotency-Key``, so the server applies it once and replays its
answer (a job run, which the server does not deduplicate, is resent only when it cannot have arrived).
Nothing else is retried: another 4xx would fail the same way again.

Extraction's own 429 and 503 follow the same rule, by status: ``extractor-unavailable`` (503, the ``llm``
extractor's endpoint is down; ``Retry-After`` 60 s) is waited and retried, safely, since the server stores
only successful answers under the key and a failed extraction changed nothing; ``extraction-cap-reached``
(429) says to come back at 00:00 UTC, longer than ``max_retry_after``, so it is raised at once.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass, field
from datetime import UTC

import httpx

RETRY_STATUSES = frozenset({429, 503})
IN_PROGRESS_TYPE = "urn:ctxmem:problem:idempotency-in-progress"
# Failures after which the request may or may not have reached the server: safe to resend with the same key.
RETRY_EXCEPTIONS: tuple[type[Exception], ...] = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` attempts after the first. The n-th retry waits ``backoff_base * 2**n`` seconds, at most
    ``backoff_max``, with "equal jitter" (half fixed, half random) so that clients that failed together do
    not come back together; a ``Retry-After`` from the server is waited instead, plus up to ``backoff_base``
    of jitter. A ``Retry-After`` longer than ``max_retry_after`` is not waited: the error is raised at once."""

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 60.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry number ``attempt`` (0-based), or None when no retry is left."""
        if attempt >= self.max_retries:
            return None
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            return float(retry_after + self.rng.uniform(0, self.backoff_base))
        step = min(self.backoff_max, self.backoff_base * 2**attempt)
        return float(step / 2 + self.rng.uniform(0, step / 2))


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3); None if absent or bad."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def should_retry(response: httpx.Response) -> bool:
    if response.status_code in RETRY_STATUSES:
        return True
    if response.status_code == 409:
        try:
            body = response.json()
        except ValueError:
            return False
        return isinstance(body, dict) and body.get("type") == IN_PROGRESS_TYPE
    return False
