"""/docs in a real headless Chromium, offline: Swagger UI renders every operation of the OpenAPI document,
"Authorize" takes an API key, and "Try it out" sends a real request with it (issue #14)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.browser.conftest import Offline, Site

pytestmark = pytest.mark.asyncio


async def _spec(site: Site) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=site.url) as c:
        spec: dict[str, Any] = (await c.get("/openapi.json")).json()
    return spec


async def test_docs_lists_every_operation_offline(page: tuple[Any, Offline], site: Site) -> None:
    pg, offline = page
    spec = await _spec(site)
    expected = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    await pg.goto(f"{site.url}/docs")
    await pg.wait_for_selector(".opblock", timeout=30_000)
    shown = set()
    for block in await pg.query_selector_all(".opblock"):
        method = (await (await block.query_selector(".opblock-summary-method")).inner_text()).strip()
        path = await (await block.query_selector(".opblock-summary-path")).get_attribute("data-path")
        shown.add((method, path))
    assert shown == expected
    assert offline.blocked == []


async def test_redoc_renders_offline(page: tuple[Any, Offline], site: Site) -> None:
    pg, offline = page
    await pg.goto(f"{site.url}/redoc")
    await pg.wait_for_selector("h2:has-text('Write one context item')", timeout=30_000)
    spec_summaries = {op["summary"] for ops in (await _spec(site))["paths"].values() for op in ops.values()}
    headings = {t.strip() for t in await pg.locator("h2").all_inner_texts()}
    assert spec_summaries <= headings
    assert offline.blocked == []


async def test_authorize_then_try_it_out_sends_the_key(page: tuple[Any, Offline], site: Site) -> None:
    pg, offline = page
    token = site.keys.agent["Authorization"].removeprefix("Bearer ")
    async with httpx.AsyncClient(base_url=site.url, headers=site.keys.agent) as c:
        r = await c.post("/v1/users/docs-try/items", json={"type": "fact", "content": "Tried from the docs."})
        assert r.status_code == 201
    await pg.goto(f"{site.url}/docs")
    await pg.click(".btn.authorize", timeout=30_000)
    await pg.fill(".auth-container input", token)
    await pg.click(".auth-btn-wrapper .authorize")
    await pg.click(".btn-done")
    block = pg.locator(".opblock-get", has=pg.locator('[data-path="/v1/users/{user_id}/items"]'))
    await block.locator(".opblock-summary").first.click()
    await block.locator(".try-out__btn").click()
    await block.locator('input[placeholder="user_id"]').fill("docs-try")
    await block.locator(".execute").click()
    status = block.locator(".live-responses-table .response .response-col_status").first
    await status.wait_for(timeout=30_000)
    assert (await status.inner_text()).strip() == "200"
    body = await block.locator(".live-responses-table .microlight").first.inner_text()
    assert "Tried from the docs." in body
    assert offline.blocked == []
