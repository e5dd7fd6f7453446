"""HTML for the console: one Jinja2 environment (autoescaped), ``render``, and the route class every console
router uses, which turns the services' problems into an HTML error page, sends a browser without a session
to sign in, and puts the security headers on every response."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute

from scoring.items import SCOPE_ID_FIELD
from service.console.session import ConsoleSession, SignInRequired
from service.errors import ServiceError, Unauthorized
from service.validation_messages import explain

log = logging.getLogger("ctxmem.console")

HERE = Path(__file__).parent
TEMPLATES_DIR = HERE / "templates"
STATIC_DIR = HERE / "static"
STATIC_URL = "/console/static"

# Self only: no inline script or style attribute can run, no frame can hold the console, nothing is cached.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _when(value: datetime | None) -> str:
    """A time as operators read it in the console: UTC, to the second."""
    if value is None:
        return "—"
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value.utcoffset() is not None else value.isoformat()


def path_segment(value: Any) -> str:
    """One path segment (a user id may hold ':' and '@')."""
    return quote(str(value), safe="")


def _scope_ref(item: Any) -> str:
    """The instance an item's scope names (its session, task, stage or step id); '' for user and global."""
    field = SCOPE_ID_FIELD.get(item.scope)
    return (getattr(item, field) or "") if field else ""


def _number(value: Any, digits: int = 2) -> str:
    if value is None:
        return "—"
    return f"{float(value):.{digits}f}".rstrip("0").rstrip(".")


env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
env.filters.update(when=_when, seg=path_segment, num=_number, query=lambda d: urlencode(d, doseq=True))
env.globals.update(static=lambda path: f"{STATIC_URL}/{path}", scope_ref=_scope_ref)


def render(
    request: Request,
    template_name: str,
    *,
    operator: ConsoleSession | None,
    status_code: int = 200,
    **ctx: Any,
) -> HTMLResponse:
    """A page: ``template_name`` rendered with ``operator`` (None on the sign-in page) and its CSRF token, which
    every POST form puts in its hidden ``csrf_token`` field."""
    html = env.get_template(template_name).render(
        request=request,
        operator=operator,
        csrf_token=operator.csrf_token if operator else "",
        flash=operator.flash if operator else None,
        path=request.url.path,
        **ctx,
    )
    return HTMLResponse(html, status_code=status_code)


def error_page(request: Request, *, status: int, title: str, detail: str) -> HTMLResponse:
    operator = getattr(request.state, "console_operator", None)
    return render(
        request, "error.html", operator=operator, status_code=status, status=status, title=title, detail=detail
    )


def sign_in_url(next_path: str) -> str:
    return "/console/sign-in?" + urlencode({"next": next_path})


def _next_of(request: Request) -> str:
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def _on_validation(request: Request, exc: RequestValidationError) -> HTMLResponse:
    content_type = request.headers.get("content-type")
    messages = [
        f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'request'}: "
        f"{explain(e, body_model=None, content_type=content_type)}"
        for e in exc.errors()
    ]
    return error_page(request, status=422, title="The request is not valid", detail="; ".join(messages))


class ConsoleRoute(APIRoute):
    """A console route: its failures are HTML pages, not problem+json, and never a 500 for bad input."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def console_handler(request: Request) -> Response:
            try:
                response = await handler(request)
            except SignInRequired:
                if request.method in ("GET", "HEAD"):
                    response = RedirectResponse(sign_in_url(_next_of(request)), status_code=303)
                else:
                    err = Unauthorized("your console session has ended: sign in again")
                    response = error_page(request, status=401, title=err.title, detail=err.detail)
            except ServiceError as exc:
                response = error_page(request, status=exc.status, title=exc.title, detail=exc.detail)
            except RequestValidationError as exc:
                response = _on_validation(request, exc)
            response.headers.update(SECURITY_HEADERS)
            return response

        return console_handler


def console_router(**kwargs: Any) -> APIRouter:
    """The router of a console page module: HTML errors and security headers (``ConsoleRoute``), out of the
    OpenAPI document."""
    return APIRouter(route_class=ConsoleRoute, include_in_schema=False, **kwargs)
