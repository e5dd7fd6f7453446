"""The route x caller matrix (issue #12, part 4), generated from ``app.routes``.

Every route the app serves must have a row in ``MATRIX`` — a new route fails
``test_every_route_has_a_row`` until someone decides who may call it — and every row is called by each
caller: no key, a malformed key, an unknown key, a revoked key, each role of the owning tenant, and each
role of another tenant aimed at the owner's user and ids. The expected status of each cell comes from the
role table in docs/api.md (Authentication and roles). Another tenant never changes or sees the owner's rows.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts
from starlette.routing import Mount

from service.auth import repository as key_repository
from service.auth.service import hash_secret
from service.clock import Clock
from service.db.engine import Database, session_scope
from tests.conftest import TenantKeys, make_tenant
from tests.helpers import tenant_rows
from tests.service.console.test_routes import CONSOLE_ROUTES

SECRET = "owner-secret-7f3a"
ROLES = ("agent", "operator", "admin")
BAD_KEYS = {
    "no key": {},
    "malformed key": {"Authorization": "Basic dXNlcjpwYXNz"},
    "unknown key": {"Authorization": "Bearer cmk_" + "x" * 43},
}

# What another tenant's key gets when aimed at the owner's user or ids: a role that may not call the route
# at all is refused before anything is looked up (403); one that may gets what an id that exists nowhere
# gets — an empty list or window for a user (200), 404 for an item, entry or erasure. Writes to a user id
# create that tenant's own user of the same name (201), never touching the owner's.
Body = Callable[["Seed"], Any]


@dataclass(frozen=True)
class Row:
    allowed: frozenset[str]  # roles that may call it
    ok: int  # the status of an allowed call
    other_tenant: int  # an allowed role of another tenant, aimed at the owner's user and ids
    body: Body | None = None
    public: bool = False  # no key needed


@dataclass
class Seed:
    user: str
    item_id: str
    entry_id: str


def _row(roles: str, ok: int, other: int, body: Body | None = None) -> Row:
    return Row(frozenset(roles.split()), ok, other, body)


ALL = "agent operator admin"
ITEM = {"type": "fact", "content": "matrix fact"}
OBS = {"dimension": "preference", "key": "editor", "value": "emacs", "session_id": "s9"}
MATRIX: dict[tuple[str, str], Row] = {
    ("GET", "/healthz"): Row(frozenset(ROLES), 200, 200, public=True),
    ("GET", "/readyz"): Row(frozenset(ROLES), 200, 200, public=True),
    ("GET", "/metrics"): Row(frozenset(ROLES), 200, 200, public=True),
    ("GET", "/openapi.json"): Row(frozenset(ROLES), 200, 200, public=True),
    ("GET", "/docs"): Row(frozenset(ROLES), 200, 200, public=True),
    ("GET", "/docs-assets/redoc.standalone.js"): Row(frozenset(ROLES), 200, 200, public=True),
    ("GET", "/docs-assets/{path}"): Row(frozenset(ROLES), 200, 200, public=True),  # a mount: any file under it
    ("GET", "/redoc"): Row(frozenset(ROLES), 200, 200, public=True),
    ("POST", "/v1/users/{user_id}/items"): _row("agent admin", 201, 201, lambda s: ITEM),
    ("POST", "/v1/users/{user_id}/items/batch"): _row("agent admin", 201, 201, lambda s: {"items": [ITEM]}),
    ("GET", "/v1/users/{user_id}/items"): _row(ALL, 200, 200),
    ("GET", "/v1/users/{user_id}/items/{item_id}"): _row(ALL, 200, 404),
    ("DELETE", "/v1/users/{user_id}/items/{item_id}"): _row("agent admin", 200, 404),
    ("POST", "/v1/users/{user_id}/observations"): _row("agent admin", 201, 201, lambda s: OBS),
    ("POST", "/v1/users/{user_id}/observations/batch"): _row(
        "agent admin", 201, 201, lambda s: {"observations": [OBS]}
    ),
    ("GET", "/v1/users/{user_id}/profile"): _row(ALL, 200, 200),
    ("GET", "/v1/users/{user_id}/profile/{entry_id}"): _row("operator admin", 200, 404),
    ("POST", "/v1/users/{user_id}/profile/{entry_id}/confirm"): _row(ALL, 200, 404, lambda s: {}),
    ("POST", "/v1/users/{user_id}/profile/{entry_id}/reject"): _row(ALL, 200, 404, lambda s: {}),
    ("GET", "/v1/users/{user_id}/events"): _row("operator admin", 200, 200),
    ("POST", "/v1/users/{user_id}/window"): _row(ALL, 200, 200, lambda s: {"input": "hello", "max_tokens": 2000}),
    ("POST", "/v1/users/{user_id}/search"): _row(ALL, 200, 200, lambda s: {"query": "matrix fact"}),
    # Another tenant's session of the same ids is its own (empty) conversation.
    ("POST", "/v1/users/{user_id}/sessions/{session_id}/messages"): _row(
        "agent admin", 201, 201, lambda s: {"messages": [{"role": "user", "content": "matrix turn"}]}
    ),
    ("GET", "/v1/users/{user_id}/sessions/{session_id}/messages"): _row(ALL, 200, 200),
    ("DELETE", "/v1/users/{user_id}/sessions/{session_id}"): _row("agent admin", 200, 200),
    ("DELETE", "/v1/users/{user_id}/sessions/{session_id}/messages/last"): _row("agent admin", 200, 200),
    # Extraction writes what it learns: an agent's or an admin's; another tenant's session is its own.
    ("POST", "/v1/users/{user_id}/extract"): _row(
        "agent admin", 200, 200, lambda s: {"messages": [{"role": "user", "content": "I live in Oslo."}]}
    ),
    ("POST", "/v1/users/{user_id}/sessions/{session_id}/extract"): _row("agent admin", 200, 200, lambda s: {}),
    ("GET", "/v1/users/{user_id}/export"): _row("operator admin", 200, 200),
    ("DELETE", "/v1/users/{user_id}"): _row("admin", 200, 404),
    # Jobs are the caller's tenant's: another tenant's admin runs its own (there is no user in the path).
    ("POST", "/v1/jobs/{name}/run"): _row("admin", 200, 200, lambda s: {}),
    ("GET", "/v1/jobs/runs"): _row("admin", 200, 200),
}


CONVERTOR = re.compile(r"{(\w+):\w+}")


def served_routes(app: Any) -> set[tuple[str, str]]:
    """(method, path) of every route, through included routers (the walk FastAPI's OpenAPI does)."""
    out: set[tuple[str, str]] = set()
    for route in iter_route_contexts(app.routes):
        path = CONVERTOR.sub(r"{\1}", str(route.path))  # "{item_id:item_id}" is the item_id parameter
        if isinstance(route.original_route, Mount):  # static files: every GET under the prefix
            out.add(("GET", path + "/{path}"))
            continue
        methods = set(route.methods or ()) - {"HEAD", "OPTIONS"}
        out.update((method, path) for method in methods)
    return out


def test_every_route_has_a_row(app: Any) -> None:
    """Every route has a row here (the API: bearer keys) or in CONSOLE_ROUTES (the console under /console:
    a session cookie, never a bearer key; its callers are tested in tests/service/console/test_routes.py)."""
    served = served_routes(app)
    console = {route for route in served if route[1].startswith("/console")}
    assert console == CONSOLE_ROUTES.keys(), "console routes and CONSOLE_ROUTES differ: decide who may call them"
    api = served - console
    assert api - MATRIX.keys() == set(), "routes with no row in MATRIX: decide who may call them"
    assert MATRIX.keys() - api == set(), "rows in MATRIX for routes the app no longer serves"
    assert not any(path.startswith("/console") for _, path in MATRIX), "console routes belong in CONSOLE_ROUTES"
    assert len(api) >= 24


async def seed_user(client: httpx.AsyncClient, tenant: TenantKeys) -> Seed:
    user = f"m-{secrets.token_hex(4)}"
    r = await client.post(
        f"/v1/users/{user}/items", json={"type": "fact", "content": SECRET, "key": "secret"}, headers=tenant.agent
    )
    assert r.status_code == 201, r.text
    item_id = r.json()["id"]
    obs = {"dimension": "preference", "key": "editor", "value": SECRET, "session_id": "s1", "explicit": True}
    r = await client.post(f"/v1/users/{user}/observations", json=obs, headers=tenant.agent)
    assert r.status_code == 201, r.text
    return Seed(user, item_id, r.json()["id"])


def url_of(path: str, seed: Seed) -> str:
    return path.format(
        user_id=seed.user,
        item_id=seed.item_id,
        entry_id=seed.entry_id,
        session_id="s-matrix",
        name="expire",
        path="favicon.png",
    )


async def call(
    client: httpx.AsyncClient, method: str, path: str, row: Row, seed: Seed, headers: dict[str, str]
) -> httpx.Response:
    body = row.body(seed) if row.body else None
    return await client.request(method, url_of(path, seed), json=body, headers=headers)


async def revoked_key(db: Database) -> dict[str, str]:
    tenant = await make_tenant(db)
    secret = tenant.agent["Authorization"].removeprefix("Bearer ")
    async with session_scope(db) as session:
        key = await key_repository.key_by_hash(session, hash_secret(secret))
        assert key is not None
        await key_repository.revoke_key(session, tenant.tenant_id, key.id, Clock().now())
    return tenant.agent


def assert_problem(r: httpx.Response, status: int, cell: str) -> None:
    assert r.status_code == status, (cell, r.status_code, r.text[:300])
    if status >= 400:
        assert r.headers["content-type"] == "application/problem+json", cell
        assert r.json()["status"] == status, cell


@pytest.mark.parametrize(("method", "path"), sorted(MATRIX))
async def test_route_caller_matrix(
    client: httpx.AsyncClient,
    tenant: TenantKeys,
    other_tenant: TenantKeys,
    db: Database,
    method: str,
    path: str,
) -> None:
    row = MATRIX[(method, path)]
    callers: dict[str, tuple[dict[str, str], int]] = {}
    for name, headers in {**BAD_KEYS, "revoked key": await revoked_key(db)}.items():
        callers[name] = (headers, row.ok if row.public else 401)
    for role in ROLES:
        callers[role] = (getattr(tenant, role), row.ok if role in row.allowed else 403)
    for role in ROLES:
        expected = row.other_tenant if role in row.allowed else 403
        callers[f"other tenant's {role}"] = (getattr(other_tenant, role), expected)

    for caller, (headers, expected) in callers.items():
        seed = await seed_user(client, tenant)  # a fresh user per cell: deletes and confirmations are not reused
        before = await tenant_rows(db, tenant.tenant_id)
        r = await call(client, method, path, row, seed, headers)
        cell = f"{method} {path} x {caller}"
        assert_problem(r, expected, cell)
        if expected == 401:
            assert r.headers["www-authenticate"] == "Bearer", cell
        if caller.startswith("other tenant") or expected >= 400:
            assert SECRET not in r.text, cell
        if expected >= 400 or (caller.startswith("other tenant") and not row.public):
            # A refused call changes nothing; another tenant's job run or write lands in its own tenant.
            assert await tenant_rows(db, tenant.tenant_id) == before, cell
