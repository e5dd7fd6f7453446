"""service/errors.py: every failure is RFC 9457 problem+json with a stable type; a client mistake is a 4xx
that says what to fix, a database outage a 503 with Retry-After, a bug a 500 that leaks nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError, IntegrityError

from schemas.common import StrictModel
from service import errors
from service.errors import (
    ERRORS,
    PROBLEM_JSON,
    BatchTooLarge,
    Conflict,
    Forbidden,
    ItemNotFound,
    ReplayedResponse,
    ServiceError,
    Unauthorized,
    install_error_handlers,
    problem_type,
)
from service.settings import Settings


def all_service_errors() -> list[type[ServiceError]]:
    out: list[type[ServiceError]] = []
    todo = [ServiceError]
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return out


def test_every_error_type_has_one_stable_slug_and_a_client_or_unavailable_status() -> None:
    classes = [c for c in all_service_errors() if c.__module__ == errors.__name__]
    slugs = [c.slug for c in classes]
    assert len(slugs) == len(set(slugs)), "two error classes share a problem type"
    for cls in classes:
        assert 400 <= cls.status < 500 or cls.status == 503, cls
        assert cls.title and cls.slug == cls.slug.lower()


def test_subclasses_keep_the_status_of_their_family() -> None:
    assert (ItemNotFound.status, BatchTooLarge.status, errors.CorrectionRefused.status) == (404, 413, 409)
    assert issubclass(errors.JobBusy, Conflict)


def test_body_is_a_problem_with_the_extra_members() -> None:
    err = ItemNotFound("no item 7", item_id=7, when=("a",))
    assert err.body("/v1/x") == {
        "type": "urn:ctxmem:problem:item-not-found",
        "title": "No such item",
        "status": 404,
        "detail": "no item 7",
        "instance": "/v1/x",
        "item_id": 7,
        "when": ["a"],
    }
    bare = Forbidden()
    assert bare.detail == bare.title == str(bare)
    assert "instance" not in bare.body()
    assert problem_type("x") == "urn:ctxmem:problem:x"


def test_every_router_declares_the_problem_responses() -> None:
    assert set(ERRORS) == {401, 403, 404, 409, 413, 422}
    assert all(PROBLEM_JSON in spec["content"] for spec in ERRORS.values())  # type: ignore[operator]


class Item(StrictModel):
    name: str


class Batch(BaseModel):
    items: list[Item]


def small_app() -> FastAPI:
    app = FastAPI()
    app.state.settings = Settings(database_url="postgresql://unused/unused", unavailable_retry_after_seconds=7)
    install_error_handlers(app)
    raised: dict[str, Exception] = {
        "unauthorized": Unauthorized("send a key"),
        "conflict": Conflict("try again", current=3),
        "integrity": IntegrityError("INSERT", {}, Exception("duplicate key")),
        "outage": ConnectionRefusedError("refused"),
        "dbbug": DBAPIError("SELECT nonsense", {}, Exception("syntax error")),
        "bug": RuntimeError("secret internals"),
        "replay": ReplayedResponse(201, b'{"id": 1}'),
    }

    @app.get("/raise/{what}")
    async def raise_it(what: str) -> None:
        raise raised[what]

    @app.post("/batch")
    async def batch(body: Batch) -> dict[str, int]:
        return {"n": len(body.items)}

    @app.post("/one")
    async def one(body: Item) -> dict[str, str]:
        return {"name": body.name}

    @app.delete("/raise/{what}")
    async def delete_it(what: str) -> None:
        return None

    return app


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=small_app(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        yield c


def problem(r: httpx.Response, status: int, slug: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == PROBLEM_JSON
    body: dict[str, Any] = r.json()
    assert body["type"] == problem_type(slug)
    assert body["status"] == status
    return body


async def test_a_service_error_is_its_own_problem(client: httpx.AsyncClient) -> None:
    body = problem(await client.get("/raise/conflict"), 409, "conflict")
    assert (body["detail"], body["current"], body["instance"]) == ("try again", 3, "/raise/conflict")


async def test_a_401_asks_for_a_bearer_key(client: httpx.AsyncClient) -> None:
    r = await client.get("/raise/unauthorized")
    problem(r, 401, "unauthorized")
    assert r.headers["www-authenticate"] == "Bearer"


async def test_an_integrity_error_is_a_retryable_409(client: httpx.AsyncClient) -> None:
    body = problem(await client.get("/raise/integrity"), 409, "conflict")
    assert "retry" in body["detail"]
    assert "duplicate key" not in body["detail"]


async def test_an_outage_is_a_503_with_retry_after(client: httpx.AsyncClient) -> None:
    r = await client.get("/raise/outage")
    body = problem(r, 503, "unavailable")
    assert r.headers["retry-after"] == "7"
    assert "nothing was changed" in body["detail"] and "retry in 7 s" in body["detail"]


@pytest.mark.parametrize("what", ["dbbug", "bug"])
async def test_a_bug_is_a_500_that_leaks_nothing(client: httpx.AsyncClient, what: str) -> None:
    body = problem(await client.get(f"/raise/{what}"), 500, "internal-error")
    assert "secret" not in body["detail"] and "nonsense" not in body["detail"]


async def test_a_replayed_response_is_sent_as_stored(client: httpx.AsyncClient) -> None:
    r = await client.get("/raise/replay")
    assert (r.status_code, r.content, r.headers["idempotent-replayed"]) == (201, b'{"id": 1}', "true")
    assert r.headers["content-type"] == "application/json"


async def test_a_bad_item_of_a_batch_names_its_index(client: httpx.AsyncClient) -> None:
    body = problem(await client.post("/batch", json={"items": [{"name": "a"}, {"name": 5}]}), 422, "batch-item-invalid")
    assert body["index"] == 1
    assert body["errors"][0]["loc"] == ["body", "items", "1", "name"]


async def test_validation_errors_count_the_rest(client: httpx.AsyncClient) -> None:
    body = problem(await client.post("/one", json={"x": 1, "y": 2}), 422, "validation-error")
    assert body["detail"] == "name is required (and 2 more: see errors)"
    assert [e["type"] for e in body["errors"]] == ["missing", "extra_forbidden", "extra_forbidden"]


async def test_a_body_that_is_not_utf8_is_a_422_not_a_400(client: httpx.AsyncClient) -> None:
    r = await client.post("/one", content=b'{"name": "\xff"}', headers={"content-type": "application/json"})
    body = problem(r, 422, "validation-error")
    assert "not valid UTF-8 JSON" in body["detail"]


async def test_http_errors_are_problems_and_405_lists_every_method(client: httpx.AsyncClient) -> None:
    body = problem(await client.get("/nowhere"), 404, "not-found")
    assert body["instance"] == "/nowhere"
    r = await client.put("/raise/x")
    problem(r, 405, "method-not-allowed")
    assert r.headers["allow"] == "DELETE, GET, OPTIONS"
