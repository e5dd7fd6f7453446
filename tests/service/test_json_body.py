"""service/json_body.py: a JSON body with a key twice in one object is a 422, not "the last one wins"."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from hypothesis import given
from hypothesis import strategies as st

from service.json_body import RejectDuplicateKeys, duplicate_key


@pytest.mark.parametrize(
    ("body", "key"),
    [
        (b'{"a": 1, "a": 2}', "a"),
        (b'{"a": 1, "b": {"c": 1, "c": 1}}', "c"),
        (b'[{"x": 1}, {"y": 1, "y": 2}]', "y"),
        (b'{"b": 1, "a": 1, "b": 1, "a": 2}', "b"),  # the first repeated
        ('{"\u00e9": 1, "\u00e9": 2}'.encode(), "\u00e9"),
    ],
)
def test_the_first_repeated_key_is_named(body: bytes, key: str) -> None:
    assert duplicate_key(body) == key


@pytest.mark.parametrize(
    "body", [b'{"a": {"a": 1}}', b'[{"a": 1}, {"a": 2}]', b"{", b"not json", b"\xff", b"[" * 100_000, b""]
)
def test_no_duplicate_within_one_object_or_invalid_json_is_none(body: bytes) -> None:
    assert duplicate_key(body) is None


@given(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=3), max_size=8))
def test_a_document_serialised_from_a_dict_never_has_duplicates(doc: dict[str, Any]) -> None:
    assert duplicate_key(json.dumps(doc).encode()) is None


def echo_app() -> FastAPI:
    app = FastAPI()

    @app.post("/echo")
    async def echo(request: Request) -> dict[str, Any]:
        return {"got": (await request.body()).decode()}

    @app.get("/echo")
    async def echo_get(request: Request) -> dict[str, Any]:
        return {"got": (await request.body()).decode()}

    app.add_middleware(RejectDuplicateKeys)
    return app


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=echo_app()), base_url="http://t") as c:
        yield c


async def test_a_duplicate_key_is_a_problem_json_422_that_says_what_to_do(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/echo", content=b'{"status": "a", "status": "b"}', headers={"content-type": "application/json"}
    )
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["type"] == "urn:ctxmem:problem:validation-error"
    assert body["instance"] == "/echo"
    assert "'status' twice" in body["detail"] and "send each key once" in body["detail"]
    assert body["errors"][0]["type"] == "json_duplicate_key"
    assert int(r.headers["content-length"]) == len(r.content)


async def test_a_long_key_is_shortened_in_the_message(client: httpx.AsyncClient) -> None:
    key = "k" * 100
    r = await client.post("/echo", content=f'{{"{key}": 1, "{key}": 2}}', headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert "k" * 64 + "…" in r.json()["detail"]
    assert "k" * 65 not in r.json()["detail"]


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "application/merge-patch+json"])
async def test_every_json_media_type_is_checked(client: httpx.AsyncClient, content_type: str) -> None:
    r = await client.post("/echo", content=b'{"a": 1, "a": 2}', headers={"content-type": content_type})
    assert r.status_code == 422


async def test_the_body_reaches_the_route_unchanged_when_it_is_fine(client: httpx.AsyncClient) -> None:
    body = '{"a": {"a": 1}, "b": "é"}'
    r = await client.post("/echo", content=body.encode(), headers={"content-type": "application/json"})
    assert (r.status_code, r.json()) == (200, {"got": body})


async def test_non_json_bodies_and_reads_are_not_checked(client: httpx.AsyncClient) -> None:
    r = await client.post("/echo", content=b'{"a": 1, "a": 2}', headers={"content-type": "text/plain"})
    assert r.status_code == 200
    r = await client.request("GET", "/echo", content=b'{"a": 1, "a": 2}', headers={"content-type": "application/json"})
    assert r.status_code == 200
