"""service/methods.py: ``Allow`` lists every method some route serves at a path, and OPTIONS answers it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import APIRouter, FastAPI

from service.methods import OptionsResponder, allowed_methods


def small_app() -> FastAPI:
    app = FastAPI()
    inner = APIRouter(prefix="/v1")

    @inner.get("/things/{thing_id}")
    async def get_thing(thing_id: str) -> dict[str, str]:
        return {"id": thing_id}

    @inner.delete("/things/{thing_id}")
    async def delete_thing(thing_id: str) -> dict[str, str]:
        return {"deleted": thing_id}

    @inner.post("/things")
    async def create_thing() -> dict[str, str]:
        return {}

    app.include_router(inner)
    app.add_middleware(OptionsResponder, router=app.router)
    return app


def scope(path: str, method: str = "GET") -> dict[str, object]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "path_params": {}}


def test_every_route_of_the_path_counts_also_inside_included_routers() -> None:
    app = small_app()
    assert allowed_methods(app.router, scope("/v1/things/7")) == ["DELETE", "GET", "OPTIONS"]
    assert allowed_methods(app.router, scope("/v1/things")) == ["OPTIONS", "POST"]


def test_a_path_no_route_serves_allows_nothing() -> None:
    assert allowed_methods(small_app().router, scope("/v2/nothing")) == []


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=small_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        yield c


async def test_options_answers_204_with_the_real_allow(client: httpx.AsyncClient) -> None:
    r = await client.options("/v1/things/7")
    assert r.status_code == 204
    assert r.headers["allow"] == "DELETE, GET, OPTIONS"
    assert r.content == b""


async def test_options_on_an_unknown_path_goes_on_to_the_app(client: httpx.AsyncClient) -> None:
    r = await client.options("/nowhere")
    assert r.status_code == 404


async def test_other_methods_pass_through(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/things/7")
    assert (r.status_code, r.json()) == (200, {"id": "7"})
