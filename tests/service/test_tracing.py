"""OpenTelemetry traces (service/tracing.py) against a real OTLP/HTTP peer: a collector stand-in on loopback
that takes the protobuf POSTs at /v1/traces and decodes them with opentelemetry-proto. The app runs under
uvicorn on loopback, so the spans leave through the real exporter and the app's shutdown flushes them."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import secrets
import sys
import threading
import zlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from jobs.runner import run_job
from service import tracing
from service.app import create_app
from service.clock import Clock
from service.db.engine import Database
from service.settings import Settings
from service.tracing import TraceRequests, TracingUnavailable, build_tracing, traces_endpoint
from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys

WINDOW_ROUTE = "/v1/users/{user_id}/window"
STEPS = {"window.state", "window.retrieve", "window.assemble", "window.response"}


@dataclass
class Received:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    status: int
    resource: dict[str, Any]


class Collector:
    """An OTLP/HTTP trace receiver: every POST to /v1/traces decoded, the raw bodies kept too."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.requests: list[ExportTraceServiceRequest] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                encoding = self.headers.get("Content-Encoding", "")
                body = gzip.decompress(raw) if encoding == "gzip" else zlib.decompress(raw) if encoding else raw
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with collector._lock:
                    collector.bodies.append(body)
                    collector.requests.append(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

    def spans(self) -> list[Received]:
        out = []
        with self._lock:
            requests = list(self.requests)
        for request in requests:
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for s in scope_spans.spans:
                        out.append(
                            Received(
                                name=s.name,
                                trace_id=s.trace_id.hex(),
                                span_id=s.span_id.hex(),
                                parent_span_id=s.parent_span_id.hex(),
                                kind=s.kind,
                                attributes={a.key: _value(a.value) for a in s.attributes},
                                status=s.status.code,
                                resource=resource,
                            )
                        )
        return out


def _value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, which) if which else None


@pytest.fixture
def collector() -> Iterator[Collector]:
    peer = Collector()
    yield peer
    peer.close()


@pytest.fixture(autouse=True)
def _no_otel_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)


@contextlib.asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """The app under uvicorn on loopback, lifespan and all; leaving stops it (and so flushes its spans)."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning"))
    task = asyncio.create_task(server.serve())
    for _ in range(1000):
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    assert server.started
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield client
    finally:
        server.should_exit = True
        await task


def traceparent() -> tuple[str, str, str]:
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{parent_id}-01", trace_id, parent_id


async def test_a_window_request_is_a_server_span_with_the_windows_steps_as_children(
    settings: Settings, db: Database, vectors: VectorRecall, tenant: TenantKeys, collector: Collector
) -> None:
    secret = f"zebracorn-{secrets.token_hex(4)}"  # in an item's content and in the window's query
    user = f"u-trace-{secrets.token_hex(4)}"
    app = create_app(
        settings.replace(otel_endpoint=collector.url, otel_service_name="ctxmem-test"), database=db, vectors=vectors
    )
    assert app.state.tracing is not None and app.state.tracing.endpoint == collector.url + "/v1/traces"
    header, trace_id, parent_id = traceparent()
    async with serving(app) as client:
        item = {"type": "fact", "content": f"The user's pet is a {secret} named Pip"}
        r = await client.post(f"/v1/users/{user}/items", json=item, headers=tenant.agent)
        assert r.status_code == 201, r.text
        body = {"input": f"what is my {secret} called?", "max_tokens": 400}
        r = await client.post(
            f"/v1/users/{user}/window",
            json=body,
            headers={**tenant.agent, "traceparent": header, "X-Request-Id": "trace-window-1"},
        )
        assert r.status_code == 200, r.text
        assert secret in r.text  # the window holds the item: its content was there to leak
    spans = collector.spans()  # the app's shutdown has flushed them

    servers = [s for s in spans if s.kind == ProtoSpan.SPAN_KIND_SERVER and s.trace_id == trace_id]
    assert len(servers) == 1, [(s.name, s.trace_id) for s in spans]
    server = servers[0]
    assert server.name == f"POST {WINDOW_ROUTE}"
    assert server.parent_span_id == parent_id  # the caller's span, from traceparent
    assert server.attributes == {
        "http.request.method": "POST",
        "url.scheme": "http",
        "http.route": WINDOW_ROUTE,
        "http.response.status_code": 200,
        "ctxmem.request_id": "trace-window-1",
        "ctxmem.tenant_id": tenant.tenant_id,
    }
    assert server.resource["service.name"] == "ctxmem-test" and server.resource["service.version"]

    children = {s.name: s for s in spans if s.trace_id == trace_id and s.parent_span_id == server.span_id}
    assert set(children) >= STEPS, sorted(children)
    assert all(children[name].kind == ProtoSpan.SPAN_KIND_INTERNAL for name in STEPS)

    item_spans = [s for s in spans if s.name == "POST /v1/users/{user_id}/items"]
    assert len(item_spans) == 1 and item_spans[0].attributes["http.response.status_code"] == 201
    assert item_spans[0].trace_id != trace_id  # no traceparent: a trace of its own

    # Neither the item's content, nor the query, nor the key, nor the raw path is in anything sent.
    key = tenant.agent["Authorization"].removeprefix("Bearer ")
    for raw in collector.bodies:
        for leak in (secret, key, user):
            assert leak.encode() not in raw


async def test_a_job_run_is_a_span_under_the_request_that_ran_it(
    settings: Settings, db: Database, vectors: VectorRecall, tenant: TenantKeys, collector: Collector
) -> None:
    app = create_app(settings.replace(otel_endpoint=collector.url), database=db, vectors=vectors)
    header, trace_id, _ = traceparent()
    async with serving(app) as client:
        r = await client.post("/v1/jobs/expire/run", headers={**tenant.admin, "traceparent": header})
        assert r.status_code == 200, r.text
    spans = [s for s in collector.spans() if s.trace_id == trace_id]
    (server,) = [s for s in spans if s.kind == ProtoSpan.SPAN_KIND_SERVER]
    assert server.name == "POST /v1/jobs/{name}/run"
    (job,) = [s for s in spans if s.name == "job expire"]
    assert job.parent_span_id == server.span_id
    assert job.attributes["ctxmem.job.name"] == "expire" and job.attributes["ctxmem.job.trigger"] == "api"
    assert job.attributes["ctxmem.job.status"] == "succeeded" and job.attributes["ctxmem.tenant_id"] == tenant.tenant_id
    assert {k for k in job.attributes if k.startswith("ctxmem.job.rows.")} == {
        "ctxmem.job.rows.items_expired",
        "ctxmem.job.rows.entries_expired",
    }


async def test_a_job_run_outside_a_request_is_a_root_span_of_the_process(
    settings: Settings, db: Database, collector: Collector
) -> None:
    traced = settings.replace(otel_endpoint=collector.url + "/v1/traces", otel_service_name="ctxmem-scheduler")
    tenant_id = f"t-{secrets.token_hex(4)}"
    try:
        result = await run_job("expire", db=db, settings=traced, clock=Clock(), tenant_id=tenant_id, trigger="cli")
    finally:
        tracing.shutdown_job_tracing()  # what the process's exit does: the batch goes out
    assert result.status == "succeeded"
    (job,) = [s for s in collector.spans() if s.attributes.get("ctxmem.tenant_id") == tenant_id]
    assert job.name == "job expire" and job.parent_span_id == ""
    assert job.attributes["ctxmem.job.trigger"] == "cli" and job.resource["service.name"] == "ctxmem-scheduler"


async def test_off_nothing_is_exported_and_the_steps_call_straight_through(
    settings: Settings,
    db: Database,
    vectors: VectorRecall,
    tenant: TenantKeys,
    collector: Collector,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert build_tracing(settings) is None  # the default: no endpoint anywhere
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")  # wins even over an endpoint of ours
    app = create_app(settings.replace(otel_endpoint=collector.url), database=db, vectors=vectors)
    assert app.state.tracing is None
    assert not any(m.cls is TraceRequests for m in app.user_middleware)

    seen: list[object] = []

    @tracing.traced("probe.step")
    def step() -> int:
        seen.append(tracing.current_tracer())
        return 7

    @app.get("/_test/tracing-off")
    async def probe() -> dict[str, int]:
        seen.append(tracing.span("probe.block"))
        return {"value": step()}

    header, _, _ = traceparent()
    try:
        async with serving(app) as client:
            r = await client.get("/_test/tracing-off", headers={"traceparent": header})
            assert r.status_code == 200 and r.json() == {"value": 7}
            r = await client.post(
                f"/v1/users/u-{secrets.token_hex(4)}/window",
                json={"input": "hello", "max_tokens": 200},
                headers={**tenant.agent, "traceparent": header},
            )
            assert r.status_code == 200, r.text
    finally:
        app.router.routes.pop()
    assert seen == [tracing.NOOP, None]  # the shared null context; no tracer inside the step
    await asyncio.sleep(0.2)
    assert collector.requests == []


async def test_a_failure_is_an_error_span_without_its_message_and_a_404_has_no_route(
    settings: Settings, db: Database, vectors: VectorRecall, collector: Collector
) -> None:
    app = create_app(settings.replace(otel_endpoint=collector.url), database=db, vectors=vectors)
    secret = f"do-not-export-{secrets.token_hex(4)}"

    @app.get("/_test/tracing-boom/{part}")
    async def boom(part: str) -> None:
        raise RuntimeError(secret)

    try:
        async with serving(app) as client:
            assert (await client.get(f"/_test/tracing-boom/{secret}")).status_code == 500
            assert (await client.get(f"/_test/nowhere/{secret}")).status_code == 404
    finally:
        app.router.routes.pop()
    servers = {s.attributes.get("http.route"): s for s in collector.spans() if s.kind == ProtoSpan.SPAN_KIND_SERVER}
    failed = servers["/_test/tracing-boom/{part}"]
    assert failed.name == "GET /_test/tracing-boom/{part}" and failed.status == 2  # STATUS_CODE_ERROR
    assert failed.attributes["error.type"] == "RuntimeError"
    assert failed.attributes["http.response.status_code"] == 500
    missing = servers[None]
    assert missing.name == "GET" and missing.attributes["http.response.status_code"] == 404
    assert missing.status == 0 and "error.type" not in missing.attributes  # a 4xx is the client's, not an error
    assert all(secret.encode() not in raw for raw in collector.bodies)  # not the message, not the raw path


def test_the_endpoint_comes_from_ours_then_the_standard_variables(settings: Settings) -> None:
    ours = settings.replace(otel_endpoint="http://collector:4318")
    assert traces_endpoint(ours, {}) == ("http://collector:4318/v1/traces", "CTXMEM_OTEL_ENDPOINT")
    exact = settings.replace(otel_endpoint="http://collector:4318/v1/traces")
    assert traces_endpoint(exact, {})[0] == "http://collector:4318/v1/traces"  # type: ignore[index]
    standard = {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example:4318/"}
    assert traces_endpoint(settings, standard) == ("https://otel.example:4318/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT")
    signal = {**standard, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/custom"}
    assert traces_endpoint(settings, signal) == ("http://t:1/custom", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    assert traces_endpoint(ours, signal)[1] == "CTXMEM_OTEL_ENDPOINT"  # type: ignore[index]
    assert traces_endpoint(ours, {"OTEL_SDK_DISABLED": "true"}) is None
    assert traces_endpoint(ours, {"OTEL_TRACES_EXPORTER": "none"}) is None
    assert traces_endpoint(settings, {}) is None
    with pytest.raises(ValueError, match="CTXMEM_OTEL_ENDPOINT='collector:4318' is not an http"):
        traces_endpoint(settings.replace(otel_endpoint="collector:4318"), {})
    assert tracing.service_name(settings, {"OTEL_SERVICE_NAME": "edge-1"}) == "edge-1"
    assert tracing.service_name(settings.replace(otel_service_name="mine"), {"OTEL_SERVICE_NAME": "x"}) == "mine"
    assert tracing.service_name(settings, {}) == "ctxmem"


_SDK_MODULES = (
    "opentelemetry.sdk",
    "opentelemetry.sdk.resources",
    "opentelemetry.sdk.trace",
    "opentelemetry.sdk.trace.export",
    "opentelemetry.exporter.otlp.proto.http",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
)


def test_without_the_extra_our_endpoint_is_a_startup_error_naming_it(
    settings: Settings, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in _SDK_MODULES:  # as if the otel extra were not installed: importing these fails
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(TracingUnavailable, match=r"CTXMEM_OTEL_ENDPOINT is set.*pip install 'ctxmem\[otel\]'"):
        create_app(settings.replace(otel_endpoint="http://127.0.0.1:4318"), database=db)
    assert create_app(settings, database=db).state.tracing is None  # off, the service needs none of it


def test_without_the_extra_a_standard_variable_alone_is_a_warning(
    settings: Settings, db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in _SDK_MODULES:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    with caplog.at_level(logging.WARNING, logger="ctxmem.tracing"):
        app = create_app(settings, database=db)
    assert app.state.tracing is None
    (record,) = [r for r in caplog.records if r.name == "ctxmem.tracing"]
    assert "OTEL_EXPORTER_OTLP_ENDPOINT is set" in record.getMessage()
    assert "pip install 'ctxmem[otel]'" in record.getMessage() and "running without traces" in record.getMessage()
