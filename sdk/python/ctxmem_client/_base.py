"""What the sync and the async client share: configuration from arguments or the environment, the headers
of each attempt, and the retry loop's decisions."""

from __future__ import annotations

import dataclasses
import os
import re
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from ctxmem_client._calls import Call, T
from ctxmem_client._retry import RetryPolicy, parse_retry_after, should_retry
from ctxmem_client.errors import ConnectionFailed

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 30.0
VERSION = "0.1.0"
CONNECTION_FAILED = "urn:ctxmem-client:connection-failed"


@dataclass(frozen=True)
class Config:
    base_url: str
    api_key: str | None
    timeout: httpx.Timeout
    retry: RetryPolicy

    @classmethod
    def resolve(
        cls,
        base_url: str | None,
        api_key: str | None,
        *,
        timeout: float | httpx.Timeout,
        max_retries: int | None,
        retry: RetryPolicy | None,
    ) -> Config:
        """Arguments first, then ``CTXMEM_URL`` and ``CTXMEM_API_KEY``, then a local server without a key."""
        url = base_url or os.environ.get("CTXMEM_URL") or DEFAULT_URL
        key = api_key if api_key is not None else os.environ.get("CTXMEM_API_KEY") or None
        policy = retry or RetryPolicy()
        if max_retries is not None:
            if max_retries < 0:
                raise ValueError("max_retries must be 0 or more")
            policy = dataclasses.replace(policy, max_retries=max_retries)
        t = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        return cls(url.rstrip("/"), key, t, policy)

    def headers(self) -> dict[str, str]:
        out = {"Accept": "application/json", "User-Agent": f"ctxmem-client/{VERSION}"}
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        return out


COMMIT_HEADER = "X-Ctxmem-Commit-Lsn"
_LSN = re.compile(r"[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}")


class CommitPosition:
    """Read-your-writes with a server that reads from replicas: the latest commit position
    (``X-Ctxmem-Commit-Lsn``) the server answered this client's writes with, sent back on every later
    request, so that a window or search shows this client's writes whichever server process serves it."""

    def __init__(self) -> None:
        self._latest: tuple[int, str] | None = None

    def note(self, response: httpx.Response) -> None:
        text = response.headers.get(COMMIT_HEADER, "")
        if not _LSN.fullmatch(text):
            return
        high, low = text.split("/")
        value = int(high, 16) << 32 | int(low, 16)
        if self._latest is None or value > self._latest[0]:
            self._latest = (value, text)

    def headers(self) -> dict[str, str]:
        return {COMMIT_HEADER: self._latest[1]} if self._latest is not None else {}


def attempt_headers(call: Call[Any]) -> dict[str, str]:
    """Headers of every attempt of one call: a new Idempotency-Key per call, sent again on each retry."""
    out: dict[str, str] = {}
    if call.body is not None:
        out["Content-Type"] = "application/json"
    if call.write:
        out["Idempotency-Key"] = str(uuid.uuid4())
    return out


def retry_delay(
    call: Call[Any],
    policy: RetryPolicy,
    attempt: int,
    response: httpx.Response | None,
    failure: Exception | None = None,
) -> float | None:
    """Seconds to wait before trying again after this response, or after this connection ``failure``; None
    when the outcome is final. A call the server does not deduplicate (``resend=False``) is sent again only
    when the failure shows it never left (the connection was not made)."""
    if response is None:
        if not call.resend and not isinstance(failure, httpx.ConnectError | httpx.ConnectTimeout):
            return None
        return policy.delay(attempt)
    if response.status_code in call.answers or not should_retry(response):
        return None
    return policy.delay(attempt, parse_retry_after(response.headers.get("Retry-After")))


def finish(call: Call[T], response: httpx.Response) -> T:
    return call.result(response, retry_after=parse_retry_after(response.headers.get("Retry-After")))


def connection_failed(call: Call[Any], exc: Exception, attempts: int) -> ConnectionFailed:
    detail = f"{call.method} {call.path}: no response after {attempts} attempt(s): {type(exc).__name__}: {exc}"
    return ConnectionFailed(0, CONNECTION_FAILED, "No response from the server", detail)
