"""Sign-in and sign-out pages of the console."""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Query, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from service.console import session as console_session
from service.console.rendering import console_router, render
from service.console.session import COOKIE, CheckedOperator, check_origin
from service.deps import ClockDep, SessionDep, SettingsDep
from service.errors import ServiceError

router = console_router()

HOME = "/console/"


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a console path of this site, never another site (``//host``, ``\\``)."""
    if not target or not target.startswith("/console") or target.startswith("//") or "\\" in target:
        return HOME
    if any(ord(c) < 0x20 for c in target):
        return HOME
    return target


@router.get("/sign-in", response_class=HTMLResponse)
async def sign_in_page(
    request: Request,
    next: Annotated[str | None, Query(max_length=2000)] = None,
    signed_out: Annotated[bool, Query()] = False,
) -> Response:
    notice = "You are signed out." if signed_out else None
    return render(request, "sign_in.html", operator=None, next=safe_next(next), error=None, notice=notice)


@router.post("/sign-in", response_class=HTMLResponse)
async def sign_in(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    clock: ClockDep,
    api_key: Annotated[str, Form(max_length=500)] = "",
    next: Annotated[str, Form(max_length=2000)] = HOME,
) -> Response:
    check_origin(request)
    target = safe_next(next)
    # Signing in again replaces the browser's session rather than leaving the old one open beside it.
    await console_session.sign_out(session, token=request.cookies.get(COOKIE))
    try:
        token, _ = await console_session.sign_in(
            session, api_key=api_key, now=clock.now(), idle_minutes=settings.console.idle_minutes
        )
    except ServiceError as exc:
        # The form again, with why; the key itself is never echoed back.
        return render(
            request, "sign_in.html", operator=None, status_code=exc.status, next=target, error=exc.detail, notice=None
        )
    response = RedirectResponse(target, status_code=303)
    console_session.set_cookie(response, request, token)
    return response


@router.post("/sign-out")
async def sign_out(request: Request, operator: CheckedOperator) -> Response:
    await console_session.sign_out(operator.db, token=request.cookies.get(COOKIE))
    response = RedirectResponse("/console/sign-in?signed_out=true", status_code=303)
    console_session.clear_cookie(response, request)
    return response
