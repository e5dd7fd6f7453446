"""Console sessions: sign-in with an operator or admin API key, a random token in an HttpOnly cookie (only its
hash stored), a CSRF token per session, idle expiry; and the dependencies pages use to get the operator."""

from __future__ import annotations

import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Form, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from service.auth.principal import Principal
from service.auth.service import KEY_PREFIX, authenticate, hash_secret
from service.caches import app_caches
from service.console import repository
from service.context import RequestContext
from service.deps import ClockDep, SessionDep, SettingsDep
from service.errors import Forbidden, Unauthorized
from service.ids import uuid7

COOKIE = "ctxmem_console"
COOKIE_PATH = "/console"
CSRF_FIELD = "csrf_token"
CONSOLE_ROLES = ("operator", "admin")


@dataclass(frozen=True)
class ConsoleSession:
    """The signed-in operator of a console request: its key's principal, the session's CSRF token, the
    request's database session (what services are called with) and the flash message to show once."""

    principal: Principal
    csrf_token: str
    db: AsyncSession
    session_id: uuid.UUID
    key_prefix: str
    flash: str | None = None


class SignInRequired(Exception):
    """No live console session: a GET is sent to the sign-in page, anything else is refused (401)."""


def _idle_since(now: datetime, idle_minutes: int) -> datetime:
    return now - timedelta(minutes=idle_minutes)


async def sign_in(session: AsyncSession, *, api_key: str, now: datetime, idle_minutes: int) -> tuple[str, Principal]:
    """Check ``api_key`` as the API does (``service.auth``), refuse agent keys, and open a session: returns the
    cookie's token (shown to the browser once, stored as its SHA-256) and the key's principal."""
    api_key = api_key.strip()
    if not api_key.startswith(KEY_PREFIX):
        raise Unauthorized(f"that is not a ctxmem API key (they start with {KEY_PREFIX})")
    principal = await authenticate(session, f"Bearer {api_key}")
    if principal.role not in CONSOLE_ROLES:
        raise Forbidden(
            f"a key with role {principal.role!r} cannot sign in to the console; use an operator or admin key "
            "(ctxmem keys create --tenant T --role operator)"
        )
    await repository.delete_idle_sessions(session, key_id=principal.key_id, idle_since=_idle_since(now, idle_minutes))
    token = secrets.token_urlsafe(32)
    row = {
        "id": uuid7(),
        "tenant_id": principal.tenant_id,
        "key_id": principal.key_id,
        "token_hash": hash_secret(token),
        "csrf_token": secrets.token_urlsafe(32),
        "flash": None,
        "created_at": now,
        "last_seen_at": now,
    }
    await repository.insert_session(session, row=row)
    return token, principal


async def sign_out(session: AsyncSession, *, token: str | None) -> None:
    if token:
        await repository.delete_session(session, token_hash=hash_secret(token))


def set_cookie(response: Response, request: Request, token: str) -> None:
    """The session cookie: script cannot read it, other sites never send it, only /console sees it, and it is
    Secure when the request came over HTTPS (the scheme uvicorn reports, behind a proxy with
    --proxy-headers too)."""
    response.set_cookie(
        COOKIE,
        token,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def clear_cookie(response: Response, request: Request) -> None:
    response.delete_cookie(
        COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


async def get_operator(request: Request, session: SessionDep, settings: SettingsDep, clock: ClockDep) -> ConsoleSession:
    """The request's console session, its idle timer restarted; ``SignInRequired`` without a live one."""
    token = request.cookies.get(COOKIE)
    if not token or len(token) > 128:
        raise SignInRequired
    now = clock.now()
    row = await repository.touch_session(
        session,
        token_hash=hash_secret(token),
        now=now,
        idle_since=_idle_since(now, settings.console.idle_minutes),
    )
    if row is None or row["role"] not in CONSOLE_ROLES:
        raise SignInRequired
    if row["flash"] is not None and request.method == "GET":
        await repository.set_flash(session, session_id=row["id"], message=None)  # shown once, on this page
    operator = ConsoleSession(
        principal=Principal(tenant_id=row["tenant_id"], key_id=row["key_id"], role=row["role"]),
        csrf_token=row["csrf_token"],
        db=session,
        session_id=row["id"],
        key_prefix=row["prefix"],
        flash=row["flash"] if request.method == "GET" else None,
    )
    request.state.console_operator = operator  # for the error page of a failure further on
    return operator


Operator = Annotated[ConsoleSession, Depends(get_operator)]


def same_origin(request: Request) -> bool:
    """A form post names this site as its origin (Origin, else Referer) or names none: browsers send Origin
    on every cross-site POST, so a missing header is a non-browser client, which has no cookie to abuse."""
    claimed = request.headers.get("origin") or request.headers.get("referer")
    if not claimed:
        return True
    parts = urlsplit(claimed)
    return (parts.scheme, parts.netloc) == (request.url.scheme, request.url.netloc)


def check_origin(request: Request) -> None:
    if not same_origin(request):
        raise Forbidden("this form was sent from another site; open the console and submit it from there")


async def require_csrf(
    request: Request, operator: Operator, csrf_token: Annotated[str | None, Form()] = None
) -> ConsoleSession:
    """A console form post: from this site, carrying the session's CSRF token (compared in constant time)."""
    check_origin(request)
    if not csrf_token or not hmac.compare_digest(csrf_token.encode(), operator.csrf_token.encode()):
        raise Forbidden("the form's security token is missing or out of date: reload the page and submit it again")
    return operator


CheckedOperator = Annotated[ConsoleSession, Depends(require_csrf)]


async def flash(operator: ConsoleSession, message: str) -> None:
    """A message for the next page this session shows (after a form's redirect)."""
    await repository.set_flash(operator.db, session_id=operator.session_id, message=message)


def context(request: Request, operator: ConsoleSession) -> RequestContext:
    """The request context a console page calls services with: the operator's principal, so tenancy and
    permissions are the services' own (as for the API, service.deps.get_context)."""
    state = request.app.state
    vectors = getattr(state, "vectors", None)
    return RequestContext(
        operator.db,
        operator.principal,
        state.settings,
        state.tokenizer,
        state.clock.now(),
        vectors,
        caches=app_caches(state),  # the console's previews share the process's caches with the API
    )
