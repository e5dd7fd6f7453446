"""The console's profile pages in a real headless Chromium against a real ``ctxmem serve``, offline (issue
#16): sign in, find a user, open an entry, see the 4C bars and the evidence plot, confirm the entry from the
keyboard and see its tier change; the pages hold at 375 px; sign out. Screenshots go to build/screenshots/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import SHOTS, Offline, Site, api, secret

pytestmark = pytest.mark.asyncio

USER = "browser-profile-ada"


async def seed(site: Site) -> str:
    """A user with a candidate entry (inferred in two sessions, contradicted in a third, stated in a fourth),
    another entry, and two items contesting one slot. Returns the candidate's id."""
    base = {"dimension": "preference", "domain": "laptop", "key": "brand", "value": "ThinkPad"}
    observations = [
        {**base, "session_id": "s1", "context": "browse", "observed_at": "2026-09-01T10:00:00Z"},
        {**base, "session_id": "s2", "context": "compare", "observed_at": "2026-10-03T10:00:00Z"},
        {
            **base,
            "session_id": "s3",
            "context": "browse",
            "stance": "contradicts",
            "observed_at": "2026-10-20T10:00:00Z",
        },
        {**base, "session_id": "s4", "context": "chat", "explicit": True, "observed_at": "2026-11-02T10:00:00Z"},
        {"dimension": "goal", "key": "trip", "value": "Lisbon", "session_id": "s4", "context": "chat"},
    ]
    r = await api(site, "POST", f"/v1/users/{USER}/observations/batch", json={"observations": observations})
    assert r.status_code == 201, r.text
    entry = r.json()["items"][3]
    assert entry["tier"] == "candidate", entry
    for value in ("vegan", "vegetarian"):
        item = {"type": "preference", "content": f"Diet: {value}", "key": "diet", "value": value, "source": "user"}
        assert (await api(site, "POST", f"/v1/users/{USER}/items", json=item)).status_code == 201
    return str(entry["id"])


async def no_horizontal_scroll(pg: Any) -> bool:
    width: int = await pg.evaluate("document.documentElement.scrollWidth")
    viewport: int = await pg.evaluate("window.innerWidth")
    return width <= viewport + 1


async def test_trace_an_entry_to_its_evidence_and_confirm_it(page: tuple[Any, Offline], site: Site) -> None:
    pg, offline = page
    SHOTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    pg.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    pg.on("pageerror", lambda e: problems.append(str(e)))
    entry_id = await seed(site)

    # Sign in: the console sends an unsigned browser to the sign-in page and back.
    await pg.goto(f"{site.url}/console/")
    await pg.wait_for_url(f"{site.url}/console/sign-in?next=%2Fconsole%2F")
    await pg.fill('[data-testid="api-key"]', secret(site.keys.operator))
    await pg.click('[data-testid="sign-in"]')
    await pg.wait_for_url(f"{site.url}/console/")

    # Find the user by a prefix of the id.
    await pg.fill('[data-testid="user-search"]', "browser-profile")
    await pg.keyboard.press("Enter")
    await pg.wait_for_url(f"{site.url}/console/?q=browser-profile")
    rows = pg.locator('[data-testid="user-row"]')
    assert await rows.count() == 1
    assert USER in await rows.first.inner_text()
    await pg.screenshot(path=str(SHOTS / "console-users.png"), full_page=True)
    await rows.first.get_by_role("link", name=USER).click()

    # The overview: the entry under its tier with its 4C bar; the conflicted slot.
    await pg.wait_for_url(f"{site.url}/console/users/{USER}")
    candidate = pg.locator('[data-testid="tier-candidate"]')
    entry_row = candidate.locator('[data-testid="entry-row"]')
    assert await entry_row.count() == 1
    bar = entry_row.locator('[data-testid="fourc-bar"]')
    assert await bar.is_visible()
    label = await bar.get_attribute("aria-label")
    assert label and label.startswith("4C score") and "Count" in label and "penalty" in label
    assert await bar.locator("[data-part]").count() >= 4  # parts with points, and the penalty
    box = await bar.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 5
    assert await pg.locator('[data-testid="tier-current"] [data-testid="entry-row"]').count() == 1
    assert await pg.locator('[data-testid="conflict-slot"]').count() == 1
    await pg.screenshot(path=str(SHOTS / "console-user.png"), full_page=True)
    await entry_row.get_by_role("link").click()

    # The entry: its tier, the evidence plot with one marker per observation, the changes.
    await pg.wait_for_url(f"{site.url}/console/users/{USER}/entries/{entry_id}")
    assert (await pg.locator('[data-testid="entry-tier"]').inner_text()).strip() == "candidate"
    plot = pg.locator('[data-testid="evidence-plot"]')
    assert await plot.is_visible()
    assert await plot.locator('[data-testid="evidence-point"]').count() == 4
    assert await plot.locator('[data-stance="contradicts"]').count() == 1
    assert await plot.locator('[data-shape="square"]').count() == 1
    assert await pg.locator('[data-testid="observation-row"]').count() == 4
    await pg.screenshot(path=str(SHOTS / "console-entry.png"), full_page=True)

    # Colour by context: the select submits itself (console.js).
    await pg.select_option("#colour", "context")
    await pg.wait_for_url(f"{site.url}/console/users/{USER}/entries/{entry_id}?colour=context#evidence")
    assert "context" in await pg.locator('[data-testid="plot-legend"]').inner_text()

    # Confirm, from the keyboard: the tier changes and the flash says so.
    await pg.focus('[data-testid="confirm-button"]')
    await pg.keyboard.press("Enter")
    await pg.wait_for_selector('[data-testid="flash"]')
    assert "Confirmed" in await pg.locator('[data-testid="flash"]').inner_text()
    assert (await pg.locator('[data-testid="entry-tier"]').inner_text()).strip() == "long_term"
    assert await pg.locator('[data-testid="evidence-point"][data-shape="diamond"]').count() == 1
    evidence = (await api(site, "GET", f"/v1/users/{USER}/profile/{entry_id}", role="operator")).json()
    assert evidence["entry"]["tier"] == "long_term"
    assert evidence["observations"][0]["confirmation"] is True

    # Narrow screens: nothing scrolls sideways, the plot and the bars still show.
    await pg.set_viewport_size({"width": 375, "height": 800})
    for path in ("/console/", f"/console/users/{USER}/entries/{entry_id}", f"/console/users/{USER}"):
        await pg.goto(site.url + path)
        assert await no_horizontal_scroll(pg), path
    assert await pg.locator('[data-testid="tier-long_term"] [data-testid="fourc-bar"]').first.is_visible()
    await pg.screenshot(path=str(SHOTS / "console-user-narrow.png"), full_page=True)

    # The first Tab reaches the skip link; sign out ends the session.
    await pg.set_viewport_size({"width": 1280, "height": 900})
    await pg.goto(f"{site.url}/console/")
    await pg.keyboard.press("Tab")
    assert await pg.evaluate("document.activeElement.textContent") == "Skip to content"
    await pg.click('[data-testid="sign-out"]')
    await pg.wait_for_url(f"{site.url}/console/sign-in?signed_out=true")
    await pg.goto(f"{site.url}/console/users/{USER}")
    assert "/console/sign-in" in pg.url

    assert problems == []  # no script error, no Content-Security-Policy violation
    assert offline.blocked == []
