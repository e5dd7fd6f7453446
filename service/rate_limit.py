"""Per-key rate limits: a token bucket per API key (per client address for requests without one), checked
before anything else — before the body is read and before any database work — so a flood costs a dict
lookup per request. Over the limit: ``429`` problem+json with ``Retry-After``.

Buckets live in this process (several workers each allow the limit) and the least recently used are
forgotten beyond ``MAX_BUCKETS`` (a forgotten key starts again with a full bucket).
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict

from starlette.types import ASGIApp, Receive, Scope, Send

from service.clock import Clock
from service.errors import PROBLEM_JSON, problem_type

MAX_BUCKETS = 50_000


class TokenBuckets:
    """``rate`` tokens a second up to ``burst``; each request takes one."""

    def __init__(self, *, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: OrderedDict[bytes, tuple[float, float]] = OrderedDict()

    def take(self, key: bytes, now: float) -> float:
        """0 when the request may go ahead, else the seconds until it could."""
        tokens, at = self._buckets.pop(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + max(0.0, now - at) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        self._buckets[key] = (tokens, now)
        if len(self._buckets) > MAX_BUCKETS:
            self._buckets.popitem(last=False)
        return wait


class RateLimit:
    def __init__(self, app: ASGIApp, *, rate: float, burst: int, clock: Clock) -> None:
        self.app = app
        self.clock = clock
        self.buckets = TokenBuckets(rate=rate, burst=burst) if rate > 0 else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.buckets is None:
            await self.app(scope, receive, send)
            return
        key = _caller(scope)
        wait = self.buckets.take(key, self.clock.now().timestamp())
        if wait <= 0:
            await self.app(scope, receive, send)
            return
        await _reject(scope, send, self.buckets, math.ceil(wait), keyed=key.startswith(b"key "))


def _caller(scope: Scope) -> bytes:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            return b"key " + value[:256]
    client = scope.get("client")
    return b"addr " + (client[0].encode() if client else b"?")


async def _reject(scope: Scope, send: Send, buckets: TokenBuckets, retry_after: int, *, keyed: bool) -> None:
    who = "API key" if keyed else "client address (requests without a key)"
    body = json.dumps(
        {
            "type": problem_type("rate-limited"),
            "title": "Too many requests",
            "status": 429,
            "detail": f"at most {buckets.rate:g} requests a second (bursts of {buckets.burst}) per {who}:"
            f" retry in {retry_after} s, or spread the requests out",
            "instance": scope.get("path"),
            "retry_after": retry_after,
        }
    ).encode()
    headers = [
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(retry_after).encode()),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
