"""Optional OpenTelemetry traces (docs/operations.md, Traces). Off unless an OTLP/HTTP endpoint is set.

The endpoint is ``CTXMEM_OTEL_ENDPOINT`` (a collector's address, ``http://collector:4318``; spans go to its
``/v1/traces``), else the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (as is) or
``OTEL_EXPORTER_OTLP_ENDPOINT`` (plus ``/v1/traces``); ``OTEL_SDK_DISABLED=true`` or
``OTEL_TRACES_EXPORTER=none`` turns them all off. Tracing needs the ``otel`` extra
(``pip install 'ctxmem[otel]'``): without it, ``CTXMEM_OTEL_ENDPOINT`` is a startup error and a standard
variable alone a warning (the service then runs untraced).

On, each HTTP request is one server span (``TraceRequests``) named by its method and route template, with
the status, the request id of service/logs.py and the caller's tenant, the child of an incoming W3C
``traceparent``; the steps marked with ``traced`` (the window's) are its children, and each job run
(jobs/runner.py) is a span of its own. Spans hold no item content, query text, keys or raw paths: the server
span's attributes are the fixed list below. They leave in batches (``BatchSpanProcessor``) over OTLP/HTTP
protobuf; the app's shutdown flushes them. The provider is the app's own, not the process-global one.

Off, nothing of OpenTelemetry is imported and no middleware is installed: ``traced`` and ``span`` read one
context variable (``None``) and call straight through."""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast
from urllib.parse import urlsplit

from starlette.routing import Mount

from service.logs import REQUEST_ID
from service.settings import Settings
from service.version import VERSION

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("ctxmem.tracing")

EXTRA = "pip install 'ctxmem[otel]'"
OWN_VARIABLE = "CTXMEM_OTEL_ENDPOINT"

# The tracer of the request (or job) in progress; None when tracing is off.
_TRACER: contextvars.ContextVar[Tracer | None] = contextvars.ContextVar("ctxmem_tracer", default=None)
NOOP: AbstractContextManager[None] = contextlib.nullcontext()

P = ParamSpec("P")
R = TypeVar("R")

_KNOWN_METHODS = frozenset({"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "QUERY", "TRACE"})


class TracingUnavailable(RuntimeError):
    """Traces were asked for with ``CTXMEM_OTEL_ENDPOINT`` but the ``otel`` extra is not installed."""


def _with_signal_path(url: str) -> str:
    return url if urlsplit(url).path.rstrip("/").endswith("/v1/traces") else url.rstrip("/") + "/v1/traces"


def _checked(url: str, variable: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{variable}={url!r} is not an http:// or https:// URL with a host (OTLP over HTTP)")
    return url


def traces_endpoint(settings: Settings, environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """Where spans are posted and the variable that said so, or ``None``: tracing is off."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    if settings.tracing.endpoint:
        return _with_signal_path(_checked(settings.tracing.endpoint, OWN_VARIABLE)), OWN_VARIABLE
    if url := env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        return _checked(url, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    if url := env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        url = _checked(url, "OTEL_EXPORTER_OTLP_ENDPOINT")
        return url.rstrip("/") + "/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT"
    return None


def service_name(settings: Settings, environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return settings.tracing.service_name or env.get("OTEL_SERVICE_NAME", "").strip() or "ctxmem"


class Tracing:
    """One app's (or one job process's) tracer provider: an OTLP/HTTP exporter behind a batch processor."""

    def __init__(self, provider: TracerProvider, endpoint: str) -> None:
        self.provider = provider
        self.endpoint = endpoint
        self.tracer: Tracer = provider.get_tracer("ctxmem", VERSION)

    def shutdown(self) -> None:
        """Export what is queued and stop the exporter (blocking: the batch's last POST)."""
        self.provider.shutdown()


def build_tracing(
    settings: Settings, environ: Mapping[str, str] | None = None, *, shutdown_on_exit: bool = False
) -> Tracing | None:
    """The tracing ``settings`` and the environment ask for, or ``None`` when off (or the extra is missing
    and only a standard variable asked: a warning then)."""
    found = traces_endpoint(settings, environ)
    if found is None:
        return None
    endpoint, variable = found
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        message = f"{variable} is set, but OpenTelemetry tracing needs the otel extra: {EXTRA} ({exc})"
        if variable == OWN_VARIABLE:
            raise TracingUnavailable(message) from None
        log.warning("%s; running without traces", message)
        return None
    resource = Resource.create({"service.name": service_name(settings, environ), "service.version": VERSION})
    # The sampler is the SDK's default (parent-based, always on), or OTEL_TRACES_SAMPLER's.
    provider = TracerProvider(resource=resource, shutdown_on_exit=shutdown_on_exit)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    log.info("OpenTelemetry traces go to %s", endpoint)
    return Tracing(provider, endpoint)


def span(name: str, attributes: Mapping[str, str | int | float | bool] | None = None) -> AbstractContextManager[Any]:
    """A child span of the current one while tracing is on; else ``NOOP`` (a shared null context)."""
    tracer = _TRACER.get()
    if tracer is None:
        return NOOP
    return tracer.start_as_current_span(name, attributes=attributes, record_exception=False)


def traced(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a step (a plain or an ``async`` function) to run in a child span ``name`` while tracing is on.
    Off, the wrapper reads one context variable and calls through. Decorating is cheap too (no
    ``functools.wraps``, no typing subscripts at run time): a function defined per call may use it."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        code = getattr(fn, "__code__", None)
        if code is not None and code.co_flags & inspect.CO_COROUTINE:
            step = cast("Callable[P, Awaitable[Any]]", fn)

            async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                tracer = _TRACER.get()
                if tracer is None:
                    return await step(*args, **kwargs)
                with tracer.start_as_current_span(name, record_exception=False):
                    return await step(*args, **kwargs)

            return _named(cast("Callable[P, R]", run_async), fn)

        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            tracer = _TRACER.get()
            if tracer is None:
                return fn(*args, **kwargs)
            with tracer.start_as_current_span(name, record_exception=False):
                return fn(*args, **kwargs)

        return _named(run, fn)

    return decorate


def _named(wrapper: Callable[P, R], fn: Callable[P, R]) -> Callable[P, R]:
    wrapper.__name__ = getattr(fn, "__name__", "step")
    wrapper.__qualname__ = getattr(fn, "__qualname__", wrapper.__name__)
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def current_tracer() -> Tracer | None:
    return _TRACER.get()


class TraceRequests:
    """ASGI middleware, just inside ``RequestId``: one server span per HTTP request.

    Its attributes are exactly ``http.request.method``, ``url.scheme``, ``http.route`` (the template, as
    ``/v1/users/{user_id}/window``), ``http.response.status_code``, ``ctxmem.request_id``,
    ``ctxmem.tenant_id`` (once a key authenticated the request) and ``error.type`` (a 5xx or an exception's
    class). No exception is recorded: its message may quote what a request sent."""

    def __init__(self, app: ASGIApp, *, tracing: Tracing) -> None:
        from opentelemetry import propagate, trace
        from opentelemetry.trace import SpanKind, StatusCode

        self.app = app
        self.tracer = tracing.tracer
        self._extract = propagate.extract
        self._use_span = trace.use_span
        self._server = SpanKind.SERVER
        self._error = StatusCode.ERROR

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"] if scope["method"] in _KNOWN_METHODS else "_OTHER"
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", ())}
        attributes: dict[str, str] = {"http.request.method": method, "url.scheme": scope.get("scheme", "http")}
        rid = REQUEST_ID.get()
        if rid is not None:
            attributes["ctxmem.request_id"] = rid
        span = self.tracer.start_span(
            method if method != "_OTHER" else "HTTP",
            context=self._extract(carrier),
            kind=self._server,
            attributes=attributes,
        )
        # The dependencies put the authenticated principal in request.state, i.e. this dict.
        state = scope.setdefault("state", {})

        answered = False

        async def sending(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = True
                self._answered(span, method, scope, state, message["status"])
            await send(message)

        token = _TRACER.set(self.tracer)
        try:
            with self._use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                await self.app(scope, receive, sending)
        except BaseException as exc:
            if not answered:  # Starlette's outermost handler answers it with a 500
                self._answered(span, method, scope, state, 500)
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(self._error)
            raise
        finally:
            _TRACER.reset(token)
            span.end()

    def _answered(self, span: Span, method: str, scope: Scope, state: Any, status: int) -> None:
        route = scope.get("route")  # the route the router matched (none for a 404)
        template = getattr(route, "path", None)
        if isinstance(template, str):
            if isinstance(route, Mount):  # the console's static files: the mount's prefix
                template = template.rstrip("/") + "/{path}"
            span.set_attribute("http.route", template)
            span.update_name(f"{method if method != '_OTHER' else 'HTTP'} {template}")
        span.set_attribute("http.response.status_code", status)
        principal = state.get("principal") if isinstance(state, dict) else None
        tenant = getattr(principal, "tenant_id", None)
        if isinstance(tenant, str):
            span.set_attribute("ctxmem.tenant_id", tenant)
        if status >= 500:
            span.set_attribute("error.type", str(status))
            span.set_status(self._error)


# Jobs outside a request (the scheduler's process, the CLI): a tracing of the process, built on first use and
# shut down (flushed) at exit.
_JOB_TRACING: dict[tuple[str, str], Tracing] = {}
_JOB_TRACING_FAILED: set[str] = set()


def job_span(name: str, settings: Settings, *, trigger: str, tenant_id: str | None) -> AbstractContextManager[Any]:
    """The span of one job run: the child of the request that started it, or a root span of the process's
    own tracing (the scheduler, the CLI); ``NOOP`` when tracing is off."""
    tracer = _TRACER.get()
    if tracer is None:
        tracer = _job_tracer(settings)
    if tracer is None:
        return NOOP
    attributes: dict[str, str] = {"ctxmem.job.name": name, "ctxmem.job.trigger": trigger}
    if tenant_id is not None:
        attributes["ctxmem.tenant_id"] = tenant_id
    return tracer.start_as_current_span(f"job {name}", attributes=attributes, record_exception=False)


def _job_tracer(settings: Settings) -> Tracer | None:
    try:
        found = traces_endpoint(settings)
    except ValueError as exc:
        _warn_once(str(exc))
        return None
    if found is None:
        return None
    key = (found[0], service_name(settings))
    tracing = _JOB_TRACING.get(key)
    if tracing is None:
        try:
            built = build_tracing(settings)
        except TracingUnavailable as exc:
            _warn_once(str(exc))
            return None
        if built is None:
            return None
        tracing = _JOB_TRACING[key] = built
    return tracing.tracer


def _warn_once(message: str) -> None:
    if message not in _JOB_TRACING_FAILED:
        _JOB_TRACING_FAILED.add(message)
        log.error("job runs are not traced: %s", message)


def shutdown_job_tracing() -> None:
    """Flush and stop the process's job tracing (at exit; tests call it to see the spans sent)."""
    while _JOB_TRACING:
        _, tracing = _JOB_TRACING.popitem()
        tracing.shutdown()


atexit.register(shutdown_job_tracing)


def record_job(current: Any, *, status: str, rows: Mapping[str, int], error: str | None) -> None:
    """The outcome of a run on its span: the status, the rows changed per kind, the error's class."""
    if current is None or not hasattr(current, "set_attribute"):
        return
    current.set_attribute("ctxmem.job.status", status)
    for kind, count in rows.items():
        current.set_attribute(f"ctxmem.job.rows.{kind}", count)
    if status == "failed":
        from opentelemetry.trace import StatusCode

        current.set_attribute("error.type", (error or "error").split(":", 1)[0])
        current.set_status(StatusCode.ERROR)
