"""The HTTP series on ``/metrics``: requests, latency and body sizes per route template.

A pure ASGI middleware, innermost of the app's own: it names a request by the route that served it —
``scope["route"]``, which the router sets once it has matched (a 405 by the route that matched the path) —
read after the request, so naming costs one attribute lookup. (prometheus-fastapi-instrumentator, used
before, matched every request against every route again *before* handling it; on this FastAPI that
rebuilds each included router's route state per request, a visible share of a busy server's CPU: the
profile of ``bench.window --http`` in bench/README.md#windows-over-http-1-and-2-workers.) A request no route
matched is named ``none``; ``/metrics`` itself is not counted."""

from __future__ import annotations

import time
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram, Summary
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Per route and method: few buckets (every route multiplies them).
ROUTE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
# Over all routes: many buckets, from 1 ms, for percentiles.
FINE_BUCKETS = (
    0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1,
    0.15, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
UNMATCHED = "none"
NOT_COUNTED = frozenset({"/metrics"})


class HttpSeries:
    """The series, registered once per app's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "http_requests_total",
            "Requests by method, exact status and route template.",
            ("method", "status", "handler"),
            registry=registry,
        )
        self.request_size = Summary(
            "http_request_size_bytes",
            "Request bodies by route template, as their Content-Length says (0 without one).",
            ("handler",),
            registry=registry,
        )
        self.response_size = Summary(
            "http_response_size_bytes",
            "Response bodies by route template, as their Content-Length says (0 without one).",
            ("handler",),
            registry=registry,
        )
        self.latency = Histogram(
            "http_request_duration_seconds",
            "Time to the response's last byte, by method and route template.",
            ("method", "handler"),
            buckets=ROUTE_BUCKETS,
            registry=registry,
        )
        self.latency_fine = Histogram(
            "http_request_duration_highr_seconds",
            "Time to the response's last byte over all routes, with fine buckets for percentiles.",
            buckets=FINE_BUCKETS,
            registry=registry,
        )


def route_template(scope: Scope) -> str:
    """The template of the route that served this request (``/v1/users/{user_id}/items``), its mount's
    path for a mounted app, or ``none``."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return UNMATCHED
    return path if not isinstance(route, Mount) else path or "/"


def _content_length(headers: Sequence[tuple[bytes, bytes]]) -> int:
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


class HttpMetrics:
    """ASGI middleware: observes each HTTP request into ``series`` once it has been answered (or failed:
    an exception counts as a 500, as the server answers it)."""

    def __init__(self, app: ASGIApp, *, series: HttpSeries) -> None:
        self.app = app
        self.series = series

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status, sent = 500, 0

        async def observe(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = int(message["status"])
                sent = _content_length(message.get("headers", ()))
            await send(message)

        try:
            await self.app(scope, receive, observe)
        finally:
            handler = route_template(scope)
            if handler not in NOT_COUNTED:
                seconds = max(0.0, time.perf_counter() - start)
                s, method = self.series, scope["method"]
                s.requests.labels(method, str(status), handler).inc()
                s.request_size.labels(handler).observe(_content_length(scope.get("headers", ())))
                s.response_size.labels(handler).observe(sent)
                s.latency.labels(method, handler).observe(seconds)
                s.latency_fine.observe(seconds)
