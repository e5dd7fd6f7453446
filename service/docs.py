"""The interactive API documentation: Swagger UI at ``/docs`` and ReDoc at ``/redoc``, served with their
JavaScript and CSS from this process (the assets ship in the ``fastapi-offline`` wheel), so both pages work
on a machine without internet. FastAPI's own pages load them from a CDN and are a blank page offline.

"Authorize" in Swagger UI works because every route that needs a key declares the bearer scheme
(``service.deps.bearer``); Swagger UI then sends ``Authorization: Bearer <key>`` with each "Try it out".
"""

from __future__ import annotations

import functools
from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

ASSETS_URL = "/docs-assets"
_ASSETS = files("fastapi_offline") / "static"
# ReDoc's bundle shows a logo fetched from its CDN (hidden again when the fetch fails): served with the local
# favicon instead, so a page view sends nothing off the machine.
_REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


@functools.cache
def _redoc_js() -> bytes:
    return (_ASSETS / "redoc.standalone.js").read_bytes().replace(_REDOC_LOGO, f"{ASSETS_URL}/favicon.png".encode())


def install_docs(app: FastAPI) -> None:
    """Mount the assets and the two pages (the app must be built with ``docs_url=None, redoc_url=None``)."""
    assert app.openapi_url is not None
    openapi_url = app.openapi_url

    @app.get(f"{ASSETS_URL}/redoc.standalone.js", include_in_schema=False)
    async def redoc_js() -> Response:
        return Response(_redoc_js(), media_type="text/javascript", headers={"Cache-Control": "public, max-age=86400"})

    app.mount(ASSETS_URL, StaticFiles(directory=str(_ASSETS)), name="docs-assets")

    def page_urls(request: Request) -> tuple[str, str]:
        """The OpenAPI document's URL and the assets' folder as the browser must ask for them: below the
        ``root_path`` a proxy that strips a prefix declares."""
        root = request.scope.get("root_path", "")
        return f"{root}{openapi_url}", f"{root}{ASSETS_URL}"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        spec, assets = page_urls(request)
        # persistAuthorization: the key typed into "Authorize" survives a reload of the page.
        parameters = {"persistAuthorization": True, "displayRequestDuration": True}
        return get_swagger_ui_html(
            openapi_url=spec,
            title=f"{app.title} API",
            swagger_js_url=f"{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets}/swagger-ui.css",
            swagger_favicon_url=f"{assets}/favicon.png",
            swagger_ui_parameters=parameters,
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        spec, assets = page_urls(request)
        title = f"{app.title} API reference"
        js, favicon = f"{assets}/redoc.standalone.js", f"{assets}/favicon.png"
        return get_redoc_html(
            openapi_url=spec, title=title, redoc_js_url=js, redoc_favicon_url=favicon, with_google_fonts=False
        )
