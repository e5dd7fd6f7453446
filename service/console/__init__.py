"""The operator console (docs/console.md): server-rendered pages at /console, signed in with an operator or
admin key. Each page module has its own router (``rendering.console_router()``); this one includes them all.
The app factory includes ``router`` and mounts ``static`` at ``STATIC_URL``."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from service.console import auth
from service.console.pages import entries, erase, jobs, timeline, users, window
from service.console.rendering import SECURITY_HEADERS, STATIC_DIR, STATIC_URL, ConsoleRoute, error_page

router = APIRouter(prefix="/console", include_in_schema=False, route_class=ConsoleRoute)
router.include_router(auth.router)
router.include_router(users.router)
router.include_router(entries.router)
router.include_router(window.router)
router.include_router(timeline.router)
router.include_router(jobs.router)
router.include_router(erase.router)

static = StaticFiles(directory=STATIC_DIR)

_ANSWERS = {404: "There is no console page at this address.", 405: "This page does not take that method."}


def install_html_errors(app: FastAPI) -> None:
    """A path under /console that no page matches (a mistyped address, a wrong method) answers an HTML
    page, not the API's problem+json; the API keeps its handler for everything else. Call it after the
    app's error handlers are installed."""
    api_handler = app.exception_handlers[StarletteHTTPException]

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        path = request.url.path
        if (path == "/console" or path.startswith("/console/")) and not path.startswith(STATIC_URL + "/"):
            detail = _ANSWERS.get(exc.status_code, exc.detail if isinstance(exc.detail, str) else "")
            page = error_page(request, status=exc.status_code, title=f"Error {exc.status_code}", detail=detail)
            page.headers.update(SECURITY_HEADERS)
            if exc.headers:
                page.headers.update(exc.headers)
            return page
        response: Response = await api_handler(request, exc)
        return response

    app.add_exception_handler(StarletteHTTPException, on_http)


__all__ = ["STATIC_URL", "install_html_errors", "router", "static"]
