"""The principals of recently checked API keys, per process, so a request does not read ``api_key`` again
(docs/operations.md, Authentication cache).

Revocation is honoured at once, not after a TTL: revoking a key notifies ``CHANNEL`` in the revoking
transaction (PostgreSQL delivers it at commit), and every API process listens on a connection of its own
and forgets the key. The cache serves only while that listener is connected (``live``); when its
connection drops, the cache is emptied and every request reads the key again until the listener is back.
Entries also expire after ``ttl`` seconds, which bounds anything that changes a key without notifying
(a hand-written UPDATE, a restored backup). Unknown keys are never cached, so a new key works at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable

import asyncpg

from scoring.backoff import retry_delay
from service.auth.principal import Principal
from service.auth.repository import REVOKED_CHANNEL as CHANNEL
from service.db.engine import plain_url

log = logging.getLogger("ctxmem")

MAX_ENTRIES = 10_000


class KeyCache:
    def __init__(self, ttl: float, *, clock: Callable[[], float] = time.monotonic, max_entries: int = MAX_ENTRIES):
        self.ttl = ttl
        self.live = False  # set by the revocation listener while it is connected
        self._clock = clock
        self._max = max_entries
        self._entries: OrderedDict[str, tuple[Principal, float]] = OrderedDict()

    def get(self, secret_hash: str) -> Principal | None:
        if not self.live:
            return None
        found = self._entries.get(secret_hash)
        if found is None:
            return None
        if found[1] <= self._clock():
            del self._entries[secret_hash]
            return None
        return found[0]

    def put(self, secret_hash: str, principal: Principal) -> None:
        if not self.live or self.ttl <= 0:
            return
        self._entries[secret_hash] = (principal, self._clock() + self.ttl)
        self._entries.move_to_end(secret_hash)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def forget(self, secret_hash: str) -> None:
        self._entries.pop(secret_hash, None)

    def stop_serving(self) -> None:
        self.live = False
        self._entries.clear()


async def listen_for_revocations(url: str, cache: KeyCache, stop: asyncio.Event, *, poll: float = 1.0) -> None:
    """Keep a connection listening on ``CHANNEL`` until ``stop``: the cache serves while it is up, forgets
    each revoked key as its notification arrives, and stops serving (emptied) whenever the connection is
    lost, reconnecting with backoff."""
    attempt = 0
    while not stop.is_set():
        conn = None
        try:
            conn = await asyncpg.connect(plain_url(url))
            await conn.add_listener(CHANNEL, lambda _c, _pid, _channel, payload: cache.forget(payload))
            cache.live = True
            attempt = 0
            while not stop.is_set() and not conn.is_closed():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=poll)
                if not stop.is_set():
                    await conn.execute("SELECT 1")  # a dead connection shows here, not only at the next notify
        except Exception as exc:  # the database went away: read every key until the listener is back
            log.warning("key cache off until the revocation listener reconnects: %s: %s", type(exc).__name__, exc)
        finally:
            cache.stop_serving()
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()
        if not stop.is_set():
            attempt += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=retry_delay(attempt, max_seconds=10.0))
