"""service/deps.py: one transaction per request (committed before the response, rolled back on error), the
caller's principal from the bearer key, the shared path and query parameters, and the request context."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from service.auth.cache import KeyCache
from service.clock import FixedClock
from service.db.engine import Database
from service.deps import (
    ContextDep,
    CursorQuery,
    ItemIdPath,
    LimitQuery,
    OrderQuery,
    PrincipalDep,
    SessionDep,
    UserIdPath,
)
from service.errors import Conflict, install_error_handlers
from service.settings import Settings
from service.tokenizer import build_tokenizer
from tests.conftest import TenantKeys

AT = datetime(2026, 9, 1, 12, tzinfo=UTC)


@pytest.fixture
async def scratch(db: Database) -> AsyncIterator[str]:
    name = f"deps_probe_{secrets.token_hex(4)}"
    async with db.engine.begin() as conn:
        await conn.execute(text(f"CREATE TABLE {name} (v text)"))
    yield name
    async with db.engine.begin() as conn:
        await conn.execute(text(f"DROP TABLE {name}"))


@pytest.fixture
async def client(db: Database, settings: Settings, scratch: str) -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    app.state.db = db
    app.state.settings = settings
    app.state.clock = FixedClock(AT)
    app.state.key_cache = KeyCache(0)  # what create_app sets: every request reads its key
    app.state.tokenizer = build_tokenizer(settings.tokens.tokenizer, cache_dir=settings.resolved_tokenizer_cache_dir)
    install_error_handlers(app)

    @app.post("/write/{value}")
    async def write(value: str, session: SessionDep, fail: bool = False) -> dict[str, str]:
        await session.execute(text(f"INSERT INTO {scratch} VALUES (:v)"), {"v": value})
        if fail:
            raise Conflict("refused after writing")
        return {"wrote": value}

    @app.get("/whoami")
    async def whoami(principal: PrincipalDep) -> dict[str, str]:
        return {"tenant": principal.tenant_id, "role": principal.role}

    @app.get("/users/{user_id}/items/{item_id}")
    async def params(
        user_id: UserIdPath,
        item_id: ItemIdPath,
        limit: LimitQuery = None,
        cursor: CursorQuery = None,
        order: OrderQuery = "desc",
    ) -> dict[str, Any]:
        return {"user_id": user_id, "item_id": str(item_id), "limit": limit, "order": order}

    @app.get("/ctx")
    async def context(ctx: ContextDep) -> dict[str, Any]:
        return {"now": ctx.now.isoformat(), "tenant": ctx.principal.tenant_id, "vectors": ctx.vectors is None}

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c


async def stored(db: Database, table: str) -> list[str]:
    async with db.engine.connect() as conn:
        return list((await conn.execute(text(f"SELECT v FROM {table} ORDER BY v"))).scalars())


async def test_a_success_is_committed_before_the_response(
    client: httpx.AsyncClient, db: Database, scratch: str
) -> None:
    r = await client.post("/write/a")
    assert r.status_code == 200
    assert await stored(db, scratch) == ["a"]


async def test_an_error_rolls_back_what_the_request_wrote(
    client: httpx.AsyncClient, db: Database, scratch: str
) -> None:
    r = await client.post("/write/b", params={"fail": "true"})
    assert r.status_code == 409
    assert r.headers["content-type"] == "application/problem+json"
    assert await stored(db, scratch) == []


async def test_the_principal_comes_from_the_bearer_key(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.get("/whoami", headers=tenant.operator)
    assert r.json() == {"tenant": tenant.tenant_id, "role": "operator"}
    r = await client.get("/whoami")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"


async def test_the_context_reads_the_apps_clock(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.get("/ctx", headers=tenant.agent)
    assert r.json() == {"now": AT.isoformat(), "tenant": tenant.tenant_id, "vectors": True}


ITEM = "0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00"


async def test_shared_parameters_accept_their_forms(client: httpx.AsyncClient) -> None:
    r = await client.get(f"/users/alice@example.com/items/{ITEM}", params={"limit": 5, "order": "asc"})
    assert r.json() == {"user_id": "alice@example.com", "item_id": ITEM, "limit": 5, "order": "asc"}


@pytest.mark.parametrize(
    ("path", "params", "where"),
    [
        (f"/users/a b/items/{ITEM}", {}, "user_id"),
        (f"/users/{'u' * 129}/items/{ITEM}", {}, "user_id"),
        ("/users/u/items/not-a-uuid", {}, "item_id"),
        (f"/users/u/items/{ITEM}", {"limit": 0}, "limit"),
        (f"/users/u/items/{ITEM}", {"cursor": "c" * 513}, "cursor"),
        (f"/users/u/items/{ITEM}", {"order": "random"}, "order"),
    ],
)
async def test_shared_parameters_refuse_with_a_422_naming_the_parameter(
    client: httpx.AsyncClient, path: str, params: dict[str, Any], where: str
) -> None:
    r = await client.get(path, params=params)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["type"] == "urn:ctxmem:problem:validation-error"
    assert body["errors"][0]["loc"][-1] == where
    assert body["detail"].startswith(where)
