"""The app factory: builds the engine, tokenizer and metrics once per process in ``lifespan``."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from jobs.background import extract_in_background
from jobs.metrics import JobGauges
from jobs.runner import run_job
from jobs.scheduler import STOP_GRACE_SECONDS
from schemas.common import NEW_ID_PATTERN
from service import contract, idempotency
from service.auth.cache import KeyCache, listen_for_revocations
from service.caches import CacheMetrics, ProcessCaches
from service.clock import Clock
from service.console import STATIC_URL as CONSOLE_STATIC_URL
from service.console import install_html_errors as install_console_errors
from service.console import router as console_router
from service.console import static as console_static
from service.conversations.endpoints import router as conversations_router
from service.db import migrate
from service.db.embedded import resolve_database_url
from service.db.engine import Database, create_database
from service.db.locks import OUTBOX_LEADER_LOCK, SessionLock
from service.db.positions import PositionHeaders, commit_positions
from service.db.replicas import ReplicaMetrics, build_replicas
from service.deps import EXAMPLE_ID, STORED_ONLY
from service.docs import install_docs
from service.errors import install_error_handlers
from service.extraction.endpoints import router as extraction_router
from service.extraction.extractors import build_extractor
from service.extraction.metrics import ExtractionMetrics
from service.health.endpoints import router as health_router
from service.http_metrics import HttpMetrics, HttpSeries
from service.items.endpoints import router as items_router
from service.jobs_api.endpoints import router as jobs_router
from service.json_body import RejectDuplicateKeys
from service.limits import BodySizeLimit
from service.logs import RequestId
from service.methods import OptionsResponder
from service.pagination import encode_cursor
from service.profiles.endpoints import router as profiles_router
from service.rate_limit import RateLimit
from service.search.endpoints import router as search_router
from service.settings import Settings, get_settings
from service.timeline.endpoints import router as timeline_router
from service.tokenizer import build_tokenizer
from service.tracing import TraceRequests, build_tracing
from service.users.endpoints import router as users_router
from service.vectors.recall import OutboxGauges, VectorRecall, build_recall, outbox_worker
from service.version import VERSION
from service.windows.endpoints import router as windows_router
from service.windows.metrics import WindowMetrics

log = logging.getLogger("ctxmem")

API_DESCRIPTION = """
ctxmem keeps typed facts, constraints and profiles about the users of LLM agents and assembles the
context for each model call. Authenticate with `Authorization: Bearer <key>` (create one with
`ctxmem keys create --tenant T --role agent`). Every error is `application/problem+json` (RFC 9457).
"""


# JSON Schema's names for the bounds pydantic calls ge, le, gt and lt.
_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def standard_bounds(node: Any) -> None:
    """pydantic writes a numeric field's bounds under its own names (``ge``, ``le``) when the type has a
    validator of its own (``Count``, which reads 255.0 as 255): schema tools ignore those names, so a
    generated client would send 0 for a budget that must be at least 1. Renamed in place."""
    if isinstance(node, dict):
        if node.get("type") in ("integer", "number"):
            for ours, theirs in _BOUNDS.items():
                if ours in node:
                    node[theirs] = node.pop(ours)
        if node.get("type") == "integer":
            for key in _BOUNDS.values():
                if isinstance(node.get(key), float) and node[key].is_integer():
                    node[key] = int(node[key])
        for value in node.values():
            standard_bounds(value)
    elif isinstance(node, list):
        for value in node:
            standard_bounds(value)


def settings_in_openapi(app: FastAPI, settings: Settings) -> None:
    """The OpenAPI document states what this app enforces (issue #31): the limits that come from settings
    (page size, batch size, content length) as the configured maxima, the dot-segment ids refused by the
    routes that add data (service/deps.py) as their path parameters' pattern, and in each operation's
    description the rules the schema cannot express (service/contract.py)."""
    build = app.openapi
    limits = settings.limits

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = build()
        for path, ops in doc.get("paths", {}).items():
            for method, op in ops.items():
                description = contract.described(method, path, op.get("description", ""))
                if description:
                    op["description"] = description
                for param in op.get("parameters", []):
                    schema = param.get("schema", {})
                    branches = schema.get("anyOf")
                    if param.get("in") != "path" and branches and {"type": "null"} in branches:
                        # A query or header parameter is a string on the wire; null is only its absence.
                        rest = [b for b in branches if b != {"type": "null"}]
                        del schema["anyOf"]
                        if len(rest) == 1:
                            schema.update(rest[0])
                        else:
                            schema["anyOf"] = rest
                    if param.get("in") == "header" and param["name"] == idempotency.HEADER:
                        schema.update(
                            minLength=1, maxLength=idempotency.MAX_KEY_LENGTH, pattern=idempotency.KEY_PATTERN
                        )
                        example = f"{op.get('operationId', method)[:40]}-7f9c2b1e"
                        schema["examples"] = [example]
                        param.pop("examples", None)
                        param.pop("example", None)
                    if param.get("in") == "query" and param["name"] == "cursor":
                        order = "asc" if path.endswith("/messages") else "desc"
                        schema["examples"] = [encode_cursor(uuid.UUID(EXAMPLE_ID), order)]
                    if param.get("in") == "query" and param["name"] == "limit" and schema.get("type") == "integer":
                        schema["maximum"] = min(schema.get("maximum", limits.max_page_size), limits.max_page_size)
                    if (
                        param.get("in") == "path"
                        and param["name"] in ("user_id", "session_id")
                        and method.upper() in ("POST", "PUT", "PATCH")
                        and path not in STORED_ONLY
                    ):
                        schema["pattern"] = NEW_ID_PATTERN
        schemas = doc.get("components", {}).get("schemas", {})
        standard_bounds(schemas)

        def bound(name: str, field: str, **values: int) -> None:
            prop = schemas.get(name, {}).get("properties", {}).get(field)
            for branch in prop.get("anyOf", [prop]) if prop is not None else []:
                if branch.get("type") in ("string", "array"):
                    branch.update(values)

        bound("ItemBatchCreate", "items", maxItems=limits.max_batch_items)
        bound("ObservationBatchCreate", "observations", maxItems=limits.max_batch_items)
        bound("ItemCreate", "content", maxLength=limits.max_content_chars)
        bound("ItemVariants", "condensed", maxLength=limits.max_content_chars)
        bound("ItemVariants", "summary", maxLength=limits.max_content_chars)
        dim = settings.vectors.embedding_dim
        bound("ItemCreate", "embedding", minItems=dim, maxItems=dim)
        embedding = schemas.get("ItemCreate", {}).get("properties", {}).get("embedding")
        if embedding is not None:  # the schema's example has 3 dimensions, not this service's
            embedding.pop("examples", None)
            embedding["description"] = f"{embedding.get('description', '')}: {dim} numbers"
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]


def create_app(
    settings: Settings | None = None,
    *,
    database: Database | None = None,
    clock: Clock | None = None,
    vectors: VectorRecall | None = None,
) -> FastAPI:
    """``database`` and ``vectors`` let tests and the CLI hand over what they already built (then not
    closed here, and no background worker is started: the caller drains the outbox); otherwise both are
    built from settings (embedded PostgreSQL and the embedded vector index by default)."""
    settings = settings or get_settings()
    # OpenTelemetry traces (service/tracing.py): None unless an OTLP endpoint is set; an error now if one is
    # set with CTXMEM_OTEL_ENDPOINT and the otel extra is missing.
    tracing = build_tracing(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = database
        if db is None:
            url, server = await resolve_database_url(settings)
            db = create_database(url, settings, embedded=server)
            if settings.database.auto_migrate:
                await migrate.upgrade(db.engine)
        app.state.db = db
        app.state.caches = ProcessCaches(max_bytes=settings.server.process_cache_bytes)  # service/caches.py
        replicas = build_replicas(settings, replica_metrics)
        app.state.replicas = replicas
        app.state.commit_positions = commit_positions() if replicas is not None else None
        stop = asyncio.Event()
        worker_task = None
        listener = None
        if settings.server.key_cache_seconds > 0:
            listener = asyncio.create_task(listen_for_revocations(db.url, app.state.key_cache, stop))
        if database is None:
            recall = await build_recall(db, settings)
            app.state.vectors = recall
            worker = recall.worker if recall is not None else outbox_worker(db, settings)
            worker_task = asyncio.create_task(
                worker.run(
                    stop,
                    poll=settings.outbox.poll_seconds,
                    on_lag=outbox_gauges.update,
                    # One API process of all on this database applies the outbox (the others stand by).
                    leader=SessionLock(db.url, OUTBOX_LEADER_LOCK),
                )
            )
        extracting = None
        if database is None:
            # Stored conversations are learned from without a scheduler beside the server (jobs/background.py).
            extracting = asyncio.create_task(
                extract_in_background(stop, db=db, settings=settings, clock=app.state.clock)
            )
        # What exists by now (modules, the app, the engine) lives as long as the process. Frozen, it is left
        # out of the cyclic collector's full passes, which otherwise walk all of it and pause every
        # request in flight for tens of milliseconds (bench/window.py: p99 of the uncached window).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            gc.unfreeze()
            app.state.caches.clear()
            stop.set()
            if worker_task is not None:
                await worker_task
            if extracting is not None:
                # A run in progress gets the scheduler's grace to finish; cancelled, it rolls back its session
                # and the messages wait for the next run.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(extracting, timeout=STOP_GRACE_SECONDS)
            if listener is not None:
                await listener
            if replicas is not None:
                await replicas.dispose()
            if database is None:
                if app.state.vectors is not None:
                    await app.state.vectors.index.close()
                    await app.state.vectors.embedder.close()
                await db.dispose()
            if app.state.extractor is not None:
                await app.state.extractor.close()
            if tracing is not None:
                await asyncio.to_thread(tracing.shutdown)  # the last batch of spans, then the exporter stops

    app = FastAPI(
        title="ctxmem",
        version=VERSION,
        description=API_DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served by install_docs, with local assets
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.tracing = tracing
    app.state.vectors = vectors
    if database is not None:
        app.state.db = database
    app.state.clock = clock or Clock()
    # Replicas (service/db/replicas.py) are built in lifespan, from database.replica_urls.
    app.state.replicas = None
    app.state.commit_positions = None
    app.state.key_cache = KeyCache(settings.server.key_cache_seconds)
    app.state.job_runner = run_job  # the jobs API and the console run jobs through it (service/jobs_api/)
    app.state.tokenizer = build_tokenizer(settings.tokens.tokenizer, cache_dir=settings.resolved_tokenizer_cache_dir)
    app.state.migration_head = migrate.head_revision()
    app.state.migration_revisions = migrate.known_revisions()
    install_error_handlers(app)
    install_console_errors(app)
    install_docs(app)
    settings_in_openapi(app, settings)
    app.include_router(health_router)
    app.include_router(items_router)
    app.include_router(profiles_router)
    app.include_router(timeline_router)
    app.include_router(users_router)
    app.include_router(windows_router)
    app.include_router(search_router)
    app.include_router(conversations_router)
    app.include_router(extraction_router)
    app.include_router(jobs_router)
    app.include_router(console_router)
    app.mount(CONSOLE_STATIC_URL, console_static, name="console-static")
    registry = CollectorRegistry(auto_describe=True)
    outbox_gauges = OutboxGauges(registry)
    app.state.outbox_gauges = outbox_gauges
    app.state.window_metrics = WindowMetrics(registry)
    registry.register(CacheMetrics(lambda: getattr(app.state, "caches", None)))
    # The extractor that learns from stored conversations (None: extraction off; docs/extraction.md).
    app.state.extraction_metrics = ExtractionMetrics(registry)
    app.state.extractor = build_extractor(settings, metrics=app.state.extraction_metrics)
    replica_metrics = ReplicaMetrics(registry)
    job_gauges = JobGauges(registry)
    http_series = HttpSeries(registry)

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        """The Prometheus text format; the job gauges are read from job_run first (jobs/metrics.py)."""
        db = getattr(request.app.state, "db", None)
        if db is not None:
            await job_gauges.refresh(db)
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    # Outermost last: the request id first (every answer names its request, a 429 too), the trace span, the
    # rate limit, then OPTIONS; oversize bodies are refused before they are read.
    app.add_middleware(HttpMetrics, series=http_series)  # innermost: it reads the route that served the request
    app.add_middleware(PositionHeaders)
    app.add_middleware(RejectDuplicateKeys)
    app.add_middleware(BodySizeLimit, max_bytes=settings.server.max_body_bytes)
    app.add_middleware(OptionsResponder, router=app.router)
    app.add_middleware(
        RateLimit, rate=settings.rate_limit.per_second, burst=settings.rate_limit.burst, clock=app.state.clock
    )
    if tracing is not None:  # the server span, inside the request id it carries
        app.add_middleware(TraceRequests, tracing=tracing)
    app.add_middleware(RequestId)
    return app
