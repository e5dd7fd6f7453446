"""The console's window preview, timeline, jobs and erase pages in a real headless Chromium against a real
``ctxmem serve``, offline (issue #16): sign in through the sign-in page, preview a window at two budgets and
see the mode and the levels change, filter the timeline, run a job, erase a user through the typed
confirmation. Screenshots go to build/screenshots/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import SHOTS, Offline, Site, api, secret

pytestmark = pytest.mark.asyncio

INPUT = "Which cache should we use?"


async def seed_window_user(site: Site, user: str) -> None:
    items: list[dict[str, Any]] = [
        {"type": "constraint", "content": "Do not recommend Redis Cluster.", "hard": True, "source": "user"},
        {"type": "fact", "content": "The ops team is small (2 people).", "source": "user"},
    ]
    items += [
        {"type": "tool_result", "content": f"Benchmark run {i}: " + "latency numbers " * 40, "source": "tool"}
        for i in range(12)
    ]
    r = await api(site, "POST", f"/v1/users/{user}/items/batch", json={"items": items})
    assert r.status_code == 201, r.text


def watch(pg: Any) -> list[str]:
    """Script errors and CSP violations the page reports from now on (a 422 page the test asks for is not one)."""
    problems: list[str] = []
    expected = "the server responded with a status of 422"
    pg.on(
        "console",
        lambda m: problems.append(m.text) if m.type in ("error", "warning") and expected not in m.text else None,
    )
    pg.on("pageerror", lambda e: problems.append(str(e)))
    return problems


async def sign_in(pg: Any, site: Site, role: str) -> None:
    await pg.goto(f"{site.url}/console/sign-in")
    await pg.fill('[data-testid="api-key"]', secret(getattr(site.keys, role)))
    await pg.click('[data-testid="sign-in"]')
    await pg.wait_for_url(f"{site.url}/console/")


async def levels(pg: Any, side: str) -> list[int]:
    cells = pg.locator(f'[data-testid="{side}"] [data-testid="window-item"]')
    return [int(await cells.nth(i).get_attribute("data-level")) for i in range(await cells.count())]


async def test_a_window_at_two_budgets_side_by_side(page: tuple[Any, Offline], site: Site) -> None:
    pg, offline = page
    problems = watch(pg)
    await seed_window_user(site, "browser-w")
    await sign_in(pg, site, "operator")
    await pg.goto(f"{site.url}/console/users/browser-w")  # from the user's overview, by its link
    await pg.get_by_role("link", name="Window preview").click()
    await pg.wait_for_url("**/console/users/browser-w/window")
    await pg.fill('[data-testid="window-input"]', INPUT)
    # The slider moves its number field (window.js); the number field is what the form sends.
    slider = pg.locator("#max_tokens-range")
    assert await slider.is_visible()
    await slider.fill("8000")
    assert await pg.input_value('[data-testid="budget-a"]') == "8000"
    await pg.fill('[data-testid="budget-b"]', "400")
    await pg.click('[data-testid="window-submit"]')
    await pg.wait_for_selector('[data-testid="window-b"] [data-testid="window-mode"]')

    roomy = await pg.inner_text('[data-testid="window-a"] [data-testid="window-mode"]')
    tight = await pg.inner_text('[data-testid="window-b"] [data-testid="window-mode"]')
    assert (roomy, tight) == ("full", "compact")
    assert set(await levels(pg, "window-a")) == {0}
    assert await levels(pg, "window-b") != await levels(pg, "window-a")
    assert await pg.locator('[data-testid="window-b"] [data-testid="window-omitted"]').count() > 0
    assert await pg.locator('[data-testid="window-tokens"]').count() == 2
    assert "8000" in pg.url and "max_tokens_b=400" in pg.url  # a preview is a link: GET, nothing written
    SHOTS.mkdir(parents=True, exist_ok=True)
    await pg.screenshot(path=str(SHOTS / "console-window.png"), full_page=True)

    # A narrow screen: the two windows stack and nothing needs sideways scrolling.
    await pg.set_viewport_size({"width": 375, "height": 800})
    wide = await pg.evaluate("document.documentElement.scrollWidth")
    assert wide <= 375, f"the page is {wide} px wide at 375 px"
    a_box = await pg.locator('[data-testid="window-a"]').bounding_box()
    b_box = await pg.locator('[data-testid="window-b"]').bounding_box()
    assert b_box["y"] >= a_box["y"] + a_box["height"]  # one under the other
    await pg.evaluate("window.scrollTo(0, document.querySelector('[data-testid=window-a]').offsetTop - 8)")
    await pg.screenshot(path=str(SHOTS / "console-window-narrow.png"), full_page=False)

    # A budget the pinned content does not fit: the page says what it needs.
    await pg.set_viewport_size({"width": 1280, "height": 900})
    await pg.fill('[data-testid="budget-a"]', "5")
    await pg.fill('[data-testid="budget-b"]', "")
    await pg.click('[data-testid="window-submit"]')
    error = pg.locator('[data-testid="window-a"] [data-testid="window-error"]')
    await error.wait_for()
    assert "raise budget a (max_tokens) to at least" in await error.inner_text()
    assert offline.blocked == [] and problems == []


async def test_the_timeline_filters_by_kind(page: tuple[Any, Offline], site: Site) -> None:
    pg, offline = page
    problems = watch(pg)
    await seed_window_user(site, "browser-tl")
    obs = {"dimension": "preference", "key": "drink", "value": "tea", "session_id": "s1"}
    r = await api(site, "POST", "/v1/users/browser-tl/observations", json=obs)
    assert r.status_code in (200, 201), r.text
    await sign_in(pg, site, "operator")
    await pg.goto(f"{site.url}/console/users/browser-tl")
    await pg.get_by_role("link", name="Timeline").click()
    await pg.wait_for_url("**/console/users/browser-tl/timeline")
    rows = pg.locator('[data-testid="event-row"]')
    assert await rows.count() >= 3
    await pg.check('[data-testid="kind-profile"]')
    await pg.click('[data-testid="timeline-apply"]')
    await pg.wait_for_url("**kind=profile**")
    actions = [await rows.nth(i).get_attribute("data-action") for i in range(await rows.count())]
    assert actions and all(a.startswith("profile.") for a in actions)
    await pg.uncheck('[data-testid="kind-profile"]')
    await pg.click('[data-testid="timeline-apply"]')
    await pg.wait_for_load_state()
    SHOTS.mkdir(parents=True, exist_ok=True)
    await pg.screenshot(path=str(SHOTS / "console-timeline.png"), full_page=True)
    assert offline.blocked == [] and problems == []


async def test_an_admin_runs_a_job(page: tuple[Any, Offline], site: Site) -> None:
    pg, offline = page
    problems = watch(pg)
    await sign_in(pg, site, "admin")
    await pg.get_by_role("link", name="Jobs").click()
    await pg.wait_for_url("**/console/jobs")
    await pg.click('[data-testid="run-job-expire"]')
    await pg.wait_for_selector('[data-testid="flash"]')
    assert (await pg.inner_text('[data-testid="flash"]')).startswith("expire: succeeded")
    first = pg.locator('[data-testid="job-run-row"]').first
    assert await first.get_attribute("data-job") == "expire"
    SHOTS.mkdir(parents=True, exist_ok=True)
    await pg.screenshot(path=str(SHOTS / "console-jobs.png"), full_page=True)
    assert offline.blocked == [] and problems == []


async def test_an_admin_erases_a_user_by_typing_the_id(page: tuple[Any, Offline], site: Site) -> None:
    pg, offline = page
    problems = watch(pg)
    user = "browser-erase@example.com"
    await seed_window_user(site, user)
    await sign_in(pg, site, "admin")
    await pg.goto(f"{site.url}/console/users/{user}")
    await pg.get_by_role("link", name="Erase…").click()
    await pg.wait_for_url("**/erase")
    counts = pg.locator('[data-testid="erase-count"][data-table="context_item"] td.num')
    assert await counts.inner_text() == "14"
    await pg.fill('[data-testid="erase-confirm-input"]', "browser-erase")  # not the whole id
    await pg.click('[data-testid="erase-button"]')
    await pg.wait_for_selector('[data-testid="erase-error"]')
    left = await api(site, "GET", f"/v1/users/{user}/items", role="admin")
    assert len(left.json()["items"]) == 14  # nothing was erased

    await pg.fill('[data-testid="erase-confirm-input"]', user)
    SHOTS.mkdir(parents=True, exist_ok=True)
    await pg.screenshot(path=str(SHOTS / "console-erase.png"), full_page=True)
    await pg.click('[data-testid="erase-button"]')
    await pg.wait_for_selector('[data-testid="erase-done"]')
    assert (await pg.inner_text('[data-testid="erase-fingerprint"]')).startswith("sha256:")
    gone = await api(site, "GET", f"/v1/users/{user}/items", role="admin")
    assert gone.json()["items"] == []
    assert offline.blocked == [] and problems == []
