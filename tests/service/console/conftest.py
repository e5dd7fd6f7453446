"""Helpers of the console tests: sign in through the real sign-in form, read the CSRF token off a page."""

from __future__ import annotations

import re

import httpx

from service.console.session import COOKIE

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def secret(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


async def sign_in(client: httpx.AsyncClient, headers: dict[str, str]) -> httpx.Response:
    """Sign in with the key of ``headers`` (a tenant's role headers); the client keeps the cookie."""
    return await client.post("/console/sign-in", data={"api_key": secret(headers), "next": "/console/"})


async def signed_in(client: httpx.AsyncClient, headers: dict[str, str]) -> str:
    """Sign in and return the session's CSRF token (from the sign-out form every page carries)."""
    r = await sign_in(client, headers)
    assert r.status_code == 303, r.text
    assert client.cookies.get(COOKIE, path="/console")
    return await csrf_of(client, "/console/")


async def csrf_of(client: httpx.AsyncClient, path: str) -> str:
    r = await client.get(path)
    assert r.status_code == 200, r.text
    match = CSRF.search(r.text)
    assert match, "no CSRF token on the page"
    return match.group(1)
