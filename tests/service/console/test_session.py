"""Console sign-in, cookies, CSRF and idle expiry (service/console/session.py), through the real app and
PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from service.app import create_app
from service.auth import repository as key_repository
from service.auth.service import hash_secret
from service.clock import Clock, FixedClock
from service.console.session import COOKIE
from service.db.engine import Database, session_scope
from service.db.models import ConsoleSession
from service.settings import Settings
from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys
from tests.service.console.conftest import secret, sign_in, signed_in

T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)


async def _sessions(db: Database, tenant_id: str) -> int:
    async with session_scope(db) as s:
        stmt = select(func.count()).select_from(ConsoleSession).where(ConsoleSession.tenant_id == tenant_id)  # type: ignore[arg-type]
        return int((await s.execute(stmt)).scalar_one())


async def test_an_agent_key_is_refused_with_a_reason(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    r = await sign_in(client, tenant.agent)
    assert r.status_code == 403
    assert "text/html" in r.headers["content-type"]
    assert "cannot sign in to the console" in r.text and "operator or admin key" in r.text
    assert secret(tenant.agent) not in r.text  # the key is not echoed back
    assert COOKIE not in r.headers.get("set-cookie", "")
    assert await _sessions(db, tenant.tenant_id) == 0


async def test_unknown_revoked_and_malformed_keys_are_refused(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    for key in ("cmk_" + "x" * 43, "not-a-key", ""):
        r = await client.post("/console/sign-in", data={"api_key": key})
        assert r.status_code == 401, (key, r.status_code)
        assert "set-cookie" not in r.headers
    async with session_scope(db) as s:
        key_row = await key_repository.key_by_hash(s, hash_secret(secret(tenant.operator)))
        assert key_row is not None
        await key_repository.revoke_key(s, tenant.tenant_id, key_row.id, Clock().now())
    r = await sign_in(client, tenant.operator)
    assert r.status_code == 401 and "unknown or revoked" in r.text
    assert await _sessions(db, tenant.tenant_id) == 0


async def test_the_cookie_is_httponly_strict_console_only_and_holds_no_stored_secret(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    r = await sign_in(client, tenant.operator)
    assert r.status_code == 303 and r.headers["location"] == "/console/"
    cookie = r.headers["set-cookie"]
    attrs = {a.strip().split("=")[0].lower() for a in cookie.split(";")}
    assert cookie.startswith(f"{COOKIE}=")
    assert {"httponly", "samesite", "path"} <= attrs
    assert "samesite=strict" in cookie.lower() and "path=/console" in cookie.lower()
    assert "secure" not in attrs  # plain http: a Secure cookie would never come back
    token = client.cookies.get(COOKIE, path="/console")
    assert token is not None
    async with session_scope(db) as s:
        rows = (
            (await s.execute(select(ConsoleSession).where(ConsoleSession.tenant_id == tenant.tenant_id)))
            .scalars()
            .all()
        )  # type: ignore[arg-type]
    assert len(rows) == 1 and rows[0].token_hash == hash_secret(token) and token not in rows[0].token_hash


async def test_the_cookie_is_secure_over_https(app: FastAPI, tenant: TenantKeys) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://ctxmem.test") as c:
        r = await sign_in(c, tenant.admin)
    assert r.status_code == 303
    assert "secure" in {a.strip().lower() for a in r.headers["set-cookie"].split(";")}


async def test_a_page_without_a_session_redirects_to_sign_in_and_comes_back(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    r = await client.get("/console/?q=ab")
    assert r.status_code == 303
    assert r.headers["location"] == "/console/sign-in?next=%2Fconsole%2F%3Fq%3Dab"
    page = await client.get(r.headers["location"])
    assert page.status_code == 200 and 'name="next" value="/console/?q=ab"' in page.text
    back = await client.post("/console/sign-in", data={"api_key": secret(tenant.operator), "next": "/console/?q=ab"})
    assert back.status_code == 303 and back.headers["location"] == "/console/?q=ab"


async def test_sign_in_never_sends_the_browser_to_another_site(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    for target in ("https://evil.example/", "//evil.example/console", "/console\\@evil.example", "/v1/users"):
        r = await client.post("/console/sign-in", data={"api_key": secret(tenant.operator), "next": target})
        assert r.status_code == 303 and r.headers["location"] == "/console/", target


async def test_a_post_without_a_session_is_refused(client: httpx.AsyncClient) -> None:
    r = await client.post("/console/sign-out", data={"csrf_token": "x"})
    assert r.status_code == 401 and "text/html" in r.headers["content-type"]
    assert "sign in again" in r.text


async def test_sign_out_needs_the_csrf_token_and_ends_the_session(
    app: FastAPI, client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    csrf = await signed_in(client, tenant.operator)
    assert await _sessions(db, tenant.tenant_id) == 1
    for bad in ({}, {"csrf_token": ""}, {"csrf_token": csrf[:-1] + ("A" if csrf[-1] != "A" else "B")}):
        r = await client.post("/console/sign-out", data=bad)
        assert r.status_code == 403 and "security token" in r.text, bad
    assert await _sessions(db, tenant.tenant_id) == 1
    token = client.cookies.get(COOKIE, path="/console")
    r = await client.post("/console/sign-out", data={"csrf_token": csrf})
    assert r.status_code == 303 and r.headers["location"] == "/console/sign-in?signed_out=true"
    assert await _sessions(db, tenant.tenant_id) == 0
    # The old cookie, sent again, opens nothing.
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test") as replay:
        replay.cookies.set(COOKIE, token or "", path="/console")
        assert (await replay.get("/console/")).status_code == 303


async def test_a_form_from_another_site_is_refused_even_with_the_token(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    csrf = await signed_in(client, tenant.operator)
    for header in ({"Origin": "https://evil.example"}, {"Referer": "https://evil.example/page"}):
        r = await client.post("/console/sign-out", data={"csrf_token": csrf}, headers=header)
        assert r.status_code == 403 and "another site" in r.text
    r = await client.post(
        "/console/sign-in", data={"api_key": secret(tenant.operator)}, headers={"Origin": "https://evil.example"}
    )
    assert r.status_code == 403
    assert await _sessions(db, tenant.tenant_id) == 1


async def test_a_revoked_key_ends_its_sessions(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    await signed_in(client, tenant.admin)
    assert (await client.get("/console/")).status_code == 200
    async with session_scope(db) as s:
        key_row = await key_repository.key_by_hash(s, hash_secret(secret(tenant.admin)))
        assert key_row is not None
        await key_repository.revoke_key(s, tenant.tenant_id, key_row.id, Clock().now())
    assert await _sessions(db, tenant.tenant_id) == 0
    r = await client.get("/console/")
    assert r.status_code == 303 and r.headers["location"].startswith("/console/sign-in")


async def test_a_session_of_a_key_revoked_behind_its_back_is_not_honoured(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    """Revocation by any path (a direct UPDATE, as a restore or another tool might): the session checks its key."""
    await signed_in(client, tenant.operator)
    async with session_scope(db) as s:
        key_row = await key_repository.key_by_hash(s, hash_secret(secret(tenant.operator)))
        assert key_row is not None
        key_row.revoked_at = Clock().now()
    r = await client.get("/console/")
    assert r.status_code == 303


async def test_a_session_expires_after_the_idle_time_and_each_request_restarts_it(
    settings: Settings, db: Database, vectors: VectorRecall, tenant: TenantKeys
) -> None:
    clock = FixedClock(T0)
    app = create_app(settings.replace(console_idle_minutes=10), database=db, vectors=vectors, clock=clock)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test") as c:
        await signed_in(c, tenant.operator)
        for _ in range(3):  # 27 minutes of use, never 10 idle
            clock.at += timedelta(minutes=9)
            assert (await c.get("/console/")).status_code == 200
        clock.at += timedelta(minutes=10)
        r = await c.get("/console/")
        assert r.status_code == 303 and r.headers["location"].startswith("/console/sign-in")
        # Signing in again sweeps the idle session away.
        await signed_in(c, tenant.operator)
    assert await _sessions(db, tenant.tenant_id) == 1


async def test_console_pages_carry_the_security_headers(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    for r in (await client.get("/console/sign-in"), await client.get("/console/")):
        csp = r.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["referrer-policy"] == "same-origin"
        assert r.headers["cache-control"] == "no-store"
    page = (await client.get("/console/sign-in")).text
    assert "<script>" not in page and "style=" not in page  # nothing inline for the policy to block


async def test_the_static_files_are_served_locally(client: httpx.AsyncClient) -> None:
    page = (await client.get("/console/sign-in")).text
    assert 'href="/console/static/console.css"' in page and 'src="/console/static/console.js"' in page
    for path in ("/console/static/console.css", "/console/static/console.js"):
        r = await client.get(path)
        assert r.status_code == 200 and len(r.content) > 500, path
    assert "http://" not in page.replace("http://ctxmem.test", "") and "https://" not in page


async def test_exporting_and_erasing_a_user_leave_console_sessions_alone(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    """Sessions are keyed by key and tenant, not by end user: a user's export does not carry them and the
    erasure (of every USER_TABLES table) neither deletes nor trips over them."""
    await signed_in(client, tenant.admin)
    r = await client.post("/v1/users/erased-one/items", json={"type": "fact", "content": "c"}, headers=tenant.agent)
    assert r.status_code == 201
    export = await client.get("/v1/users/erased-one/export", headers=tenant.admin)
    assert export.status_code == 200 and "console" not in export.text and "csrf" not in export.text
    erased = await client.delete("/v1/users/erased-one", headers=tenant.admin)
    assert erased.status_code == 200, erased.text
    assert "console_session" not in erased.json()["rows"]
    assert await _sessions(db, tenant.tenant_id) == 1
    assert (await client.get("/console/")).status_code == 200


async def test_signing_in_again_replaces_the_browsers_session(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    await signed_in(client, tenant.operator)
    first = client.cookies.get(COOKIE, path="/console")
    await signed_in(client, tenant.admin)
    assert client.cookies.get(COOKIE, path="/console") != first
    assert await _sessions(db, tenant.tenant_id) == 1
    assert "admin key" in (await client.get("/console/")).text
