"""The console's timeline (service/console/pages/timeline.py) through the real app and PostgreSQL: the user's
events as ``GET /v1/users/{u}/events`` gives them, filtered by kind, in either order, paged with its cursors;
a bad filter or cursor is a 422 page."""

from __future__ import annotations

import html
import re
from typing import Any

import httpx

from tests.conftest import TenantKeys
from tests.service.console.conftest import signed_in

USER = "tl"
PAGE = f"/console/users/{USER}/timeline"


async def seed(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    items = [{"type": "fact", "key": "budget", "content": f"The budget is {n} EUR.", "source": "user"} for n in (3, 4)]
    for item in items:  # the second replaces the first: item.created, then a superseding write
        r = await client.post(f"/v1/users/{USER}/items", json=item, headers=tenant.agent)
        assert r.status_code == 201, r.text
    obs = {"dimension": "preference", "key": "drink", "value": "tea", "session_id": "s1"}
    r = await client.post(f"/v1/users/{USER}/observations", json=obs, headers=tenant.agent)
    assert r.status_code in (200, 201), r.text


async def api_actions(client: httpx.AsyncClient, tenant: TenantKeys, **params: Any) -> list[str]:
    r = await client.get(f"/v1/users/{USER}/events", params={"limit": 500, **params}, headers=tenant.operator)
    assert r.status_code == 200, r.text
    return [e["action"] for e in r.json()["items"]]


def actions(page: str) -> list[str]:
    return re.findall(r'data-testid="event-row" data-action="([^"]+)"', page)


async def test_the_timeline_shows_the_events_the_api_gives(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(client, tenant)
    await signed_in(client, tenant.operator)
    r = await client.get(PAGE)
    assert r.status_code == 200, r.text
    expected = await api_actions(client, tenant)
    assert len(expected) >= 4 and actions(r.text) == expected
    assert {"item.created", "observation.added"} <= set(expected)
    entry_link = re.search(rf'<a href="(/console/users/{USER}/entries/[0-9a-f-]+)">', r.text)
    assert entry_link and (await client.get(entry_link.group(1))).status_code == 200  # a profile event's entry
    asc = await client.get(PAGE, params={"order": "asc"})
    assert actions(asc.text) == list(reversed(expected))


async def test_kinds_filter_the_events(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(client, tenant)
    await signed_in(client, tenant.operator)
    r = await client.get(PAGE, params={"kind": "profile"})
    shown = actions(r.text)
    assert shown and all(a.startswith("profile.") for a in shown)
    assert shown == await api_actions(client, tenant, kind="profile")
    both = await client.get(PAGE, params=[("kind", "item"), ("kind", "observation")])
    assert actions(both.text) == await api_actions(client, tenant, kind=["item", "observation"])
    assert 'value="item" checked' in both.text and 'value="profile" checked' not in both.text


async def test_pages_follow_the_api_cursors_to_the_end(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(client, tenant)
    await signed_in(client, tenant.operator)
    expected = await api_actions(client, tenant, order="asc")
    seen: list[str] = []
    url: str | None = PAGE + "?order=asc&limit=2"
    pages = 0
    while url is not None:
        r = await client.get(url)
        assert r.status_code == 200, r.text
        rows = actions(r.text)
        assert len(rows) <= 2
        seen += rows
        pages += 1
        nxt = re.search(r'<a href="([^"]+)" rel="next"', r.text)
        url = html.unescape(nxt.group(1)) if nxt else None
        assert pages <= len(expected)
    assert seen == expected and pages >= 2
    assert '<option value="2" selected>' in r.text  # the page size in use is the one the menu shows


async def test_bad_filters_and_cursors_are_422_pages(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(client, tenant)
    await signed_in(client, tenant.operator)
    for params in (
        {"kind": "robot"},
        {"order": "sideways"},
        {"limit": "ten"},
        {"limit": "100000"},
        {"cursor": "not-a-cursor"},
    ):
        r = await client.get(PAGE, params=params)
        assert r.status_code == 422 and "text/html" in r.headers["content-type"], (params, r.status_code)
    r = await client.get(PAGE, params={"cursor": "not-a-cursor"})
    assert "cursor is not one this service issued" in r.text


async def test_an_empty_filter_says_so_and_another_tenants_user_is_a_404(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    await seed(client, other_tenant)
    await signed_in(client, tenant.operator)
    r = await client.get(PAGE)
    assert r.status_code == 404 and "text/html" in r.headers["content-type"] and actions(r.text) == []
    r = await client.get("/console/users/nobody/timeline")
    assert r.status_code == 404 and "no user" in r.text
    r = await client.post(f"/v1/users/{USER}/items", json={"type": "fact", "content": "x"}, headers=tenant.agent)
    assert r.status_code == 201
    r = await client.get(PAGE, params={"kind": "profile"})
    assert r.status_code == 200 and 'data-testid="timeline-empty"' in r.text and actions(r.text) == []
