"""service/app.py: the app factory wires every domain's router, the middleware in the order that matters,
the error handlers and the process-wide state; what it is handed it does not close."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from fastapi import FastAPI
from sqlalchemy import text

from service.app import create_app
from service.clock import Clock, FixedClock
from service.db import migrate
from service.db.engine import Database
from service.json_body import RejectDuplicateKeys
from service.limits import BodySizeLimit
from service.logs import RequestId
from service.methods import OptionsResponder
from service.rate_limit import RateLimit
from service.settings import Settings
from service.vectors.recall import VectorRecall
from service.version import VERSION
from tests.conftest import TenantKeys


def test_every_domain_is_mounted(app: FastAPI) -> None:
    paths = set(app.openapi()["paths"])
    assert "/metrics" in {getattr(r, "path", "") for r in app.routes}
    for expected in (
        "/healthz",
        "/readyz",
        "/v1/users/{user_id}/items",
        "/v1/users/{user_id}/observations",
        "/v1/users/{user_id}/events",
        "/v1/users/{user_id}/export",
        "/v1/users/{user_id}/window",
    ):
        assert expected in paths, expected
    assert any(p.startswith("/v1/jobs") for p in paths)


def test_the_openapi_document_names_the_version_and_hides_metrics(app: FastAPI) -> None:
    doc = app.openapi()
    assert doc["info"]["title"] == "ctxmem" and doc["info"]["version"] == VERSION
    assert "/metrics" not in doc["paths"]
    assert "application/problem+json" in doc["info"]["description"]


def test_middleware_names_the_request_first_then_rate_limits_and_reads_bodies_last(app: FastAPI) -> None:
    # add_middleware puts each one outside the previous: this list is outermost first (the metrics
    # middleware, service/http_metrics.py, sits inside them all).
    ours = (RequestId, RateLimit, OptionsResponder, BodySizeLimit, RejectDuplicateKeys)
    assert [m.cls for m in app.user_middleware if m.cls in ours] == list(ours)
    assert app.user_middleware[0].cls is RequestId


def test_the_state_a_request_needs_is_set_at_creation(app: FastAPI, settings: Settings, db: Database) -> None:
    state = app.state
    assert state.settings is settings and state.db is db
    assert isinstance(state.clock, Clock)
    assert state.migration_head == migrate.head_revision()
    assert state.migration_head in state.migration_revisions
    assert state.tokenizer.count("hello world") > 0


async def test_an_oversized_body_is_refused_before_its_keys_are_checked(app: FastAPI, settings: Settings) -> None:
    body = b'{"a": 1, "a": 2, "pad": "' + b"x" * settings.server.max_body_bytes + b'"}'
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        r = await client.post("/v1/users/u/items", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert r.json()["type"] == "urn:ctxmem:problem:payload-too-large"


async def test_duplicate_keys_are_refused_before_authentication(app: FastAPI) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        r = await client.post(
            "/v1/users/u/items", content=b'{"a": 1, "a": 2}', headers={"content-type": "application/json"}
        )
    assert r.status_code == 422 and "twice" in r.json()["detail"]


async def test_an_injected_clock_is_the_apps_and_a_handed_database_outlives_the_app(
    settings: Settings, db: Database, vectors: VectorRecall, tenant: TenantKeys
) -> None:
    clock = FixedClock(datetime(2026, 9, 1, tzinfo=UTC))
    app = create_app(settings, database=db, clock=clock, vectors=vectors)
    assert app.state.clock is clock
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            r = await client.post("/v1/users/app-u/items", json={"type": "fact", "content": "x"}, headers=tenant.agent)
        assert r.status_code == 201, r.text
        assert r.json()["created_at"].startswith("2026-09-01")
    async with db.engine.connect() as conn:  # the lifespan did not dispose of what it was handed
        assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1
    assert vectors.index.name  # nor close the index it was handed
    assert await vectors.index.count(tenant_id=tenant.tenant_id) >= 0
