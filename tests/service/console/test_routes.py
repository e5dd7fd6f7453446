"""Every console route, and who may reach it: the console's half of the route matrix
(tests/proof/test_route_matrix.py holds the API's and requires every served route to have a row in one of
the two). Console routes take no API key: a browser signs in once and carries the session cookie, so a
bearer key alone opens nothing. Who may do what once signed in (roles, tenants) is the services' own rule,
tested page by page."""

from __future__ import annotations

import re
from typing import Any, Literal

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from starlette.routing import Mount

from service.console.rendering import SECURITY_HEADERS, ConsoleRoute
from tests.conftest import TenantKeys

Access = Literal["public", "session"]

# (method, path) → "public" (no session needed) or "session" (a GET without one is sent to sign in, a POST
# is refused 401). A new console route fails test_every_console_route_has_a_row until it has a row here.
CONSOLE_ROUTES: dict[tuple[str, str], Access] = {
    ("GET", "/console/static/{path}"): "public",
    ("GET", "/console/sign-in"): "public",
    ("POST", "/console/sign-in"): "public",
    ("POST", "/console/sign-out"): "session",
    ("GET", "/console/"): "session",
    ("GET", "/console/users/{user_id}"): "session",
    ("GET", "/console/users/{user_id}/entries/{entry_id}"): "session",
    ("POST", "/console/users/{user_id}/entries/{entry_id}/confirm"): "session",
    ("POST", "/console/users/{user_id}/entries/{entry_id}/reject"): "session",
    ("GET", "/console/users/{user_id}/window"): "session",
    ("GET", "/console/users/{user_id}/timeline"): "session",
    ("GET", "/console/jobs"): "session",
    ("POST", "/console/jobs/{name}/run"): "session",
    ("GET", "/console/users/{user_id}/erase"): "session",
    ("POST", "/console/users/{user_id}/erase"): "session",
}

# Any path parameter: a string that is also a valid UUID, so that the request gets as far as the session check.
ANY_ID = "0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00"


def console_routes(app: FastAPI) -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    for ctx in iter_route_contexts(app.routes):
        path = str(ctx.path)
        if not path.startswith("/console"):
            continue
        if isinstance(ctx.original_route, Mount):
            out[("GET", path + "/{path}")] = ctx.original_route
            continue
        for method in set(ctx.methods or ()) - {"HEAD", "OPTIONS"}:
            out[(method, path)] = ctx.original_route
    return out


def test_every_console_route_has_a_row(app: FastAPI) -> None:
    served = console_routes(app)
    assert served.keys() - CONSOLE_ROUTES.keys() == set(), "console routes with no row: decide who may call them"
    assert CONSOLE_ROUTES.keys() - served.keys() == set(), "rows for console routes the app no longer serves"


def test_every_console_page_renders_its_errors_as_html(app: FastAPI) -> None:
    """Each page module's router is a ``console_router()``: problems become HTML pages, headers are set."""
    for (method, path), route in console_routes(app).items():
        if not isinstance(route, Mount):
            assert isinstance(route, ConsoleRoute), f"{method} {path} is not a ConsoleRoute"


def _url(path: str) -> str:
    """``path`` with a static file for ``{path}`` and ``ANY_ID`` for every other parameter."""
    path = path.replace("{path}", "console.css")
    return re.sub(r"{\w+(?::\w+)?}", ANY_ID, path)


@pytest.mark.parametrize(("method", "path"), sorted(CONSOLE_ROUTES))
async def test_without_a_session_a_page_sends_to_sign_in_and_a_post_is_refused(
    client: httpx.AsyncClient, tenant: TenantKeys, method: str, path: str
) -> None:
    access = CONSOLE_ROUTES[(method, path)]
    url = _url(path)
    for headers in ({}, tenant.admin, tenant.operator):  # an API key is not a console session
        r = await client.request(method, url, headers=headers, data={} if method == "POST" else None)
        cell = f"{method} {path} with {sorted(headers)}"
        if access == "public":
            assert r.status_code in (200, 401), cell  # sign-in without a key answers its form again, 401
            continue
        if method == "GET":
            assert r.status_code == 303, cell
            assert r.headers["location"].startswith("/console/sign-in?next="), cell
        else:
            assert r.status_code == 401, cell
            assert "text/html" in r.headers["content-type"], cell
        assert r.headers["x-frame-options"] == SECURITY_HEADERS["X-Frame-Options"], cell


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/console/no-such-page", 404), ("GET", "/console/users/u/nothing", 404), ("PUT", "/console/jobs", 405)],
)
async def test_a_console_address_no_page_answers_is_an_html_page(
    client: httpx.AsyncClient, method: str, path: str, status: int
) -> None:
    r = await client.request(method, path)
    assert r.status_code == status
    assert r.headers["content-type"].startswith("text/html")
    assert f"Error {status}" in r.text
    assert all(r.headers[k] == v for k, v in SECURITY_HEADERS.items())
    # Outside /console (and for a missing static file) the API's problem+json stays.
    api = await client.get("/v1/no-such-route")
    assert api.status_code == 404 and api.headers["content-type"] == "application/problem+json"
    asset = await client.get("/console/static/no-such-file.css")
    assert asset.status_code == 404 and not asset.headers["content-type"].startswith("text/html")
