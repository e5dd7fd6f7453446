"""A real headless Chromium (Debian's ``chromium``, driven by Playwright) and a real ``ctxmem serve`` on
loopback, for the pages the service serves to people.

Playwright cannot download its own browsers here, so it launches the system's ``/usr/bin/chromium``
(installed with apt-get on first use when missing and running as root). The browser is offline: every
request that does not go to the server under test is aborted and recorded, so a page that needs the
internet fails its test instead of passing on a machine that happens to have it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.db.engine import Database
from tests.conftest import TenantKeys, make_tenant
from tests.proof.conftest import migrated_database
from tests.proof.live import LiveServer, start_server

CHROMIUM = Path("/usr/bin/chromium")
# Without these, Chromium run as root in a container refuses to start or spends its time on its own
# network connections (updates, sync, QUIC probes).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def ensure_chromium() -> Path:
    """The system Chromium, installed with apt-get when missing (root only; otherwise a failure that says
    what to install)."""
    if CHROMIUM.exists():
        return CHROMIUM
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.fail("the browser tests need Debian's chromium: run `sudo apt-get install -y chromium`")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "-q", "chromium"]
    if subprocess.run(install, env=env, capture_output=True, timeout=1800).returncode != 0:
        # A fresh image may have no package lists yet.
        subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=600", "update", "-q"], env=env, check=True, timeout=900)
        subprocess.run(install, env=env, check=True, capture_output=True, timeout=1800)
    assert CHROMIUM.exists(), "apt-get installed chromium but /usr/bin/chromium is missing"
    return CHROMIUM


@dataclass
class Site:
    """The server under test, with keys of one tenant."""

    server: LiveServer
    keys: TenantKeys
    db: Database

    @property
    def url(self) -> str:
        return self.server.base_url


SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


def secret(headers: dict[str, str]) -> str:
    """The API key in an Authorization header (what a person types into the sign-in form)."""
    return headers["Authorization"].removeprefix("Bearer ")


async def api(site: Site, method: str, path: str, role: str = "agent", **kw: Any) -> httpx.Response:
    """A request to the server under test with one of its tenant's keys (setting up what a page shows)."""
    async with httpx.AsyncClient(base_url=site.url, headers=getattr(site.keys, role), timeout=30) as client:
        return await client.request(method, path, **kw)


@dataclass
class Offline:
    """Requests the page tried to send anywhere but the server under test (all aborted)."""

    blocked: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
async def site(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    async with migrated_database(server_url, "ctxmem_browser", tmp_path_factory.mktemp("browser-data")) as proof:
        server = await asyncio.to_thread(start_server, proof.url, tmp_path_factory.mktemp("browser-live"))
        try:
            yield Site(server, await make_tenant(proof.db), proof.db)
        finally:
            await asyncio.to_thread(server.stop)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    executable = await asyncio.to_thread(ensure_chromium)
    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=str(executable), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            await b.close()


@pytest.fixture
async def page(browser: Any, site: Site, tmp_path: Path) -> AsyncIterator[tuple[Any, Offline]]:
    """A fresh page in a fresh context (its own cookies and storage) that can reach only ``site``."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    offline = Offline()

    async def only_the_site(route: Any) -> None:
        if route.request.url.startswith(site.url):
            await route.continue_()
        else:
            offline.blocked.append(route.request.url)
            await route.abort()

    await context.route("**/*", only_the_site)
    pg = await context.new_page()
    try:
        yield pg, offline
    finally:
        await context.close()
