"""The methods a path allows, from every route that matches it (``Allow`` of 405 and ``OPTIONS``).

Starlette answers 405 with the methods of the first route whose path matched, so an item, served by a
GET route and a DELETE route, claimed to allow GET only.
"""

from __future__ import annotations

from fastapi.routing import iter_route_contexts
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send


def allowed_methods(app: ASGIApp, scope: Scope) -> list[str]:
    """Every method some route serves at this path, and OPTIONS;
    empty when no route matches the path at all."""
    methods: set[str] = set()
    # FastAPI keeps included routers as such; this walks the routes inside them too.
    for route in iter_route_contexts(getattr(app, "routes", ())):
        route_methods = route.methods
        if route_methods and route.matches(scope)[0] != Match.NONE:
            methods |= set(route_methods)
    return sorted(methods | {"OPTIONS"}) if methods else []


class OptionsResponder:
    """``OPTIONS`` on any path that exists: ``204`` with the real ``Allow`` (no CORS: the API is called
    by servers with keys, not by browsers)."""

    def __init__(self, app: ASGIApp, *, router: ASGIApp) -> None:
        self.app = app
        self.router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "OPTIONS":
            allowed = allowed_methods(self.router, scope)
            if allowed:
                headers = [(b"allow", ", ".join(allowed).encode()), (b"content-length", b"0")]
                await send({"type": "http.response.start", "status": 204, "headers": headers})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)
