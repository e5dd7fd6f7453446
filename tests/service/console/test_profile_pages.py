"""The users list, a user's overview and an entry's detail (service/console/pages/users.py, entries.py):
what they show comes from the API's own services, for the signed-in key's tenant only."""

from __future__ import annotations

import logging
import re
import secrets
import uuid
from html import unescape
from typing import Any

import httpx
import pytest

from service.app import create_app
from service.db.engine import Database
from service.settings import Settings
from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys
from tests.helpers import tenant_rows
from tests.service.console.conftest import signed_in


def _user() -> str:
    return f"cu-{secrets.token_hex(4)}"


async def _post(client: httpx.AsyncClient, path: str, body: Any, headers: dict[str, str], status: int = 201) -> Any:
    r = await client.post(path, json=body, headers=headers)
    assert r.status_code == status, r.text
    return r.json()


async def _observe(client: httpx.AsyncClient, tenant: TenantKeys, user: str, **fields: Any) -> dict[str, Any]:
    obs = {"dimension": "preference", "key": "editor", "value": "emacs", "session_id": "s1", **fields}
    entry: dict[str, Any] = await _post(client, f"/v1/users/{user}/observations", obs, tenant.agent)
    return entry


def _rows(html: str, testid: str) -> list[str]:
    return re.findall(rf'<tr data-testid="{testid}"[^>]*>(.*?)</tr>', html, re.S)


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _cells(row: str) -> dict[str, str]:
    """A table row's cells by their column label (the data-label every console table cell carries)."""
    return {label: _text(cell) for label, cell in re.findall(r'<td data-label="([^"]+)"[^>]*>(.*?)</td>', row, re.S)}


async def test_the_users_list_finds_by_prefix_with_activity_and_counts(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    base = _user()
    await _post(client, f"/v1/users/{base}-a/items", {"type": "fact", "content": "one"}, tenant.agent)
    await _post(client, f"/v1/users/{base}-a/items", {"type": "fact", "content": "two"}, tenant.agent)
    await _observe(client, tenant, f"{base}-a")
    await _observe(client, tenant, f"{base}-a", session_id="s2")
    await _post(client, f"/v1/users/{base}-b/items", {"type": "fact", "content": "three"}, tenant.agent)
    await _post(client, "/v1/users/other-prefix/items", {"type": "fact", "content": "x"}, tenant.agent)
    await signed_in(client, tenant.operator)
    r = await client.get("/console/", params={"q": base})
    assert r.status_code == 200
    rows = _rows(r.text, "user-row")
    assert len(rows) == 2
    a, b = _cells(rows[0]), _cells(rows[1])
    assert a["User"] == f"{base}-a" and b["User"] == f"{base}-b"
    counts = ("Items in force", "Items stored", "Profile entries", "Observations")
    assert [a[c] for c in counts] == ["2", "2", "1", "2"]
    assert [b[c] for c in counts] == ["1", "1", "0", "0"]
    assert a["Last activity"].endswith("UTC")
    assert "other-prefix" not in r.text


async def test_the_users_list_pages_through_in_id_order(
    settings: Settings, db: Database, vectors: VectorRecall, tenant: TenantKeys
) -> None:
    app = create_app(settings.replace(default_page_size=2), database=db, vectors=vectors)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test") as client:
        base = _user()
        for i in range(5):
            await _post(client, f"/v1/users/{base}-{i}/items", {"type": "fact", "content": "c"}, tenant.agent)
        await signed_in(client, tenant.operator)
        seen: list[list[str]] = []
        r = await client.get("/console/", params={"q": base})
        while True:
            seen.append([_cells(row)["User"] for row in _rows(r.text, "user-row")])
            nxt = re.search(r'href="(/console/\?[^"]+)" data-testid="next-page"', r.text)
            if not nxt:
                break
            r = await client.get(unescape(nxt.group(1)))
            assert r.status_code == 200
    assert seen == [[f"{base}-0", f"{base}-1"], [f"{base}-2", f"{base}-3"], [f"{base}-4"]]


async def test_a_prefix_of_like_wildcards_matches_them_literally(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    base = _user()
    await _post(client, f"/v1/users/{base}_x/items", {"type": "fact", "content": "c"}, tenant.agent)
    await _post(client, f"/v1/users/{base}ax/items", {"type": "fact", "content": "c"}, tenant.agent)
    await signed_in(client, tenant.operator)
    r = await client.get("/console/", params={"q": f"{base}_"})
    assert [_cells(row)["User"] for row in _rows(r.text, "user-row")] == [f"{base}_x"]
    for q in ("%", "\\", "'; DROP TABLE end_user; --", "é", "a\x00b", "a b"):
        r = await client.get("/console/", params={"q": q})
        assert r.status_code == 422 and not _rows(r.text, "user-row"), q
        assert "text/html" in r.headers["content-type"], q
        assert 'data-testid="search-error"' in r.text or 'data-testid="error"' in r.text, q


async def _profile_user(client: httpx.AsyncClient, tenant: TenantKeys) -> tuple[str, dict[str, Any]]:
    """A user with a candidate entry (two inferred sessions and one contradiction), a current one, two items
    that contested one slot and a keyless item."""
    user = _user()
    await _observe(client, tenant, user, session_id="s1", context="chat")
    await _observe(client, tenant, user, session_id="s2", context="shop")
    entry = await _observe(client, tenant, user, session_id="s3", context="chat", stance="contradicts")
    await _observe(client, tenant, user, key="os", value="linux", session_id="s1", explicit=True)
    item = {"type": "preference", "content": "Diet: vegan", "key": "diet", "value": "vegan", "source": "user"}
    await _post(client, f"/v1/users/{user}/items", item, tenant.agent)
    newer = {**item, "content": "Diet: vegetarian", "value": "vegetarian"}
    await _post(client, f"/v1/users/{user}/items", newer, tenant.agent)
    await _post(client, f"/v1/users/{user}/items", {"type": "fact", "content": "Lives in Lyon"}, tenant.agent)
    return user, entry


async def test_the_overview_shows_the_profile_by_tier_items_by_type_and_the_conflicted_slot(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    user, entry = await _profile_user(client, tenant)
    assert entry["tier"] == "candidate"
    await signed_in(client, tenant.operator)
    r = await client.get(f"/console/users/{user}")
    assert r.status_code == 200, r.text
    html = r.text
    sections = {
        t: re.search(rf'data-testid="tier-{t}".*?</section>', html, re.S) for t in ("current", "candidate", "long_term")
    }
    assert all(sections.values()), "a section per tier"
    candidate = sections["candidate"].group(0)  # type: ignore[union-attr]
    assert "editor" in candidate and "emacs" in candidate and "linux" not in candidate
    assert "linux" in sections["current"].group(0)  # type: ignore[union-attr]
    assert "No long-term entries" in sections["long_term"].group(0)  # type: ignore[union-attr]
    # The candidate's 4C bar: its four parts and the penalty, in the drawing and in words.
    bar = re.search(
        r'<svg class="fourc"[^>]*aria-label="([^"]+)"[^>]*data-testid="fourc-bar">(.*?)</svg>', candidate, re.S
    )
    assert bar is not None
    b = entry["breakdown"]
    label = unescape(bar.group(1))
    assert f"4C score {b['score']:g}" in label and f"minus a penalty of {b['penalty']:g}" in label
    assert f"Count {b['count']:g} of 30" in label and "Confirmation" in label
    parts = {part: float(width) for width, part in re.findall(r'width="([\d.]+)"[^>]*data-part="(\w+)"', bar.group(2))}
    assert parts == {p: b[p] for p in ("count", "continuity", "cross_context", "confirmation", "penalty") if b[p] > 0}
    # Items by type, with status, authority, scope and expiry.
    prefs = _rows(re.search(r'data-testid="items-preference".*?</table>', html, re.S).group(0), "item-row")  # type: ignore[union-attr]
    by_content = {_cells(row)["Content"]: _cells(row) for row in prefs}
    assert by_content["Diet: vegetarian"]["Status"].startswith("available")
    assert by_content["Diet: vegan"]["Status"].startswith("superseded")
    assert by_content["Diet: vegan"]["Authority"] == "user" and by_content["Diet: vegan"]["Scope"] == "user"
    assert "Expires" in by_content["Diet: vegan"]
    assert 'data-testid="items-fact"' in html and "Lives in Lyon" in html
    # The conflicted slot: who holds it, and the decision with its rule.
    slots = re.findall(r'<section class="tier" data-testid="conflict-slot".*?</section>', html, re.S)
    assert len(slots) == 1
    assert "Diet: vegetarian" in _text(re.search(r'data-testid="slot-winner">(.*?)</p>', slots[0], re.S).group(1))  # type: ignore[union-attr]
    history = [_cells(row) for row in _rows(slots[0], "event-row")]
    superseded = [h for h in history if h["Action"] == "item.superseded"]
    assert len(superseded) == 1 and superseded[0]["Rule"] == "recency"
    assert superseded[0]["When"].endswith("UTC") and "agent" in superseded[0]["By"]


async def test_another_tenants_user_and_a_user_never_written_are_404_pages(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    user, entry = await _profile_user(client, tenant)
    await signed_in(client, other_tenant.operator)
    for path in (f"/console/users/{user}", f"/console/users/{user}/entries/{entry['id']}", "/console/users/nobody"):
        r = await client.get(path)
        assert r.status_code == 404, path
        assert "text/html" in r.headers["content-type"] and 'data-testid="error"' in r.text
        assert "emacs" not in r.text and "vegan" not in r.text
    listing = await client.get("/console/", params={"q": user})
    assert not _rows(listing.text, "user-row")
    # The owner's entry under another of the owner's users is not found either.
    await signed_in(client, tenant.operator)
    other_user, _ = await _profile_user(client, tenant)
    r = await client.get(f"/console/users/{other_user}/entries/{entry['id']}")
    assert r.status_code == 404 and "No such profile entry" in r.text


async def test_bad_ids_are_422_pages_not_500s(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await signed_in(client, tenant.operator)
    for path in (
        "/console/users/" + "x" * 129,
        "/console/users/bad%20id",
        "/console/users/u/entries/not-a-uuid",
        "/console/users/u/entries/0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00?colour=red",
        "/console/users/u?cursor=garbage",
        "/console/?after=" + "x" * 200,
        "/console/?after=a%00b",
        "/console/?after=a%20b",
        "/console/users/u%00",
        "/console/users/u/entries/0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00?colour=%00",
    ):
        r = await client.get(path)
        assert r.status_code in (404, 422), (path, r.status_code)
        assert "text/html" in r.headers["content-type"], path
        assert r.headers["content-security-policy"], path


async def test_the_entry_page_plots_the_evidence_and_lists_the_tier_changes(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    user, entry = await _profile_user(client, tenant)
    await _observe(client, tenant, user, session_id="s4", context="shop", explicit=True)
    await signed_in(client, tenant.operator)
    r = await client.get(f"/console/users/{user}/entries/{entry['id']}")
    assert r.status_code == 200, r.text
    html = r.text
    assert re.search(r'data-testid="entry-tier">candidate<', html)
    plot = re.search(r'<svg class="plot".*?data-testid="evidence-plot">(.*?)</svg>', html, re.S)
    assert plot is not None
    points = re.findall(r'data-testid="evidence-point" data-stance="(\w+)" data-shape="(\w+)"', plot.group(1))
    assert sorted(points) == sorted(
        [("supports", "circle"), ("supports", "circle"), ("contradicts", "circle"), ("supports", "square")]
    )
    # Colour by session: four sessions, four colours in the legend; by context, two.
    legend = re.search(r'data-testid="plot-legend">(.*?)</ul>', html, re.S).group(1)  # type: ignore[union-attr]
    assert [n for n in ("s1", "s2", "s3", "s4") if f"session <code>{n}</code>" in legend] == ["s1", "s2", "s3", "s4"]
    by_context = (await client.get(f"/console/users/{user}/entries/{entry['id']}?colour=context")).text
    legend = re.search(r'data-testid="plot-legend">(.*?)</ul>', by_context, re.S).group(1)  # type: ignore[union-attr]
    assert (
        "context <code>chat</code>" in legend
        and "context <code>shop</code>" in legend
        and "session <code>" not in legend
    )
    # The text fallback: every observation, newest first.
    table = [_cells(row) for row in _rows(html, "observation-row")]
    assert [(t["Session"], t["Stance"], t["Kind"]) for t in table] == [
        ("s4", "supports", "explicit"),
        ("s3", "contradicts", "inferred"),
        ("s2", "supports", "inferred"),
        ("s1", "supports", "inferred"),
    ]
    changes = [
        _cells(row)
        for row in _rows(re.search(r'data-testid="tier-events".*?</table>', html, re.S).group(0), "event-row")
    ]  # type: ignore[union-attr]
    assert [c["Action"] for c in changes][-1] == "profile.created"
    assert any(c["Action"] == "profile.changed" and '"candidate"' in c["Change"] for c in changes)


async def _events_after(client: httpx.AsyncClient, tenant: TenantKeys, user: str, count: int) -> list[dict[str, Any]]:
    r = await client.get(f"/v1/users/{user}/events", params={"order": "desc", "limit": count}, headers=tenant.operator)
    assert r.status_code == 200
    return list(reversed(r.json()["items"]))


def _comparable(e: dict[str, Any]) -> dict[str, Any]:
    after = {k: v for k, v in (e["after"] or {}).items() if k not in ("entry_id", "score")}
    return {
        **{k: e[k] for k in ("actor", "actor_role", "action", "entity_type", "reason", "rule", "before")},
        "after": after,
    }


@pytest.mark.parametrize("verdict", ["confirm", "reject"])
async def test_a_verdict_through_the_console_is_recorded_as_the_api_records_it(
    client: httpx.AsyncClient, tenant: TenantKeys, verdict: str
) -> None:
    by_console, entry_c = await _profile_user(client, tenant)
    by_api, entry_a = await _profile_user(client, tenant)
    csrf = await signed_in(client, tenant.operator)
    before_c = len((await client.get(f"/v1/users/{by_console}/events", headers=tenant.operator)).json()["items"])
    url = f"/console/users/{by_console}/entries/{entry_c['id']}"
    r = await client.post(f"{url}/{verdict}", data={"csrf_token": csrf, "note": ""})
    assert r.status_code == 303 and r.headers["location"] == url
    api = await client.post(f"/v1/users/{by_api}/profile/{entry_a['id']}/{verdict}", headers=tenant.operator)
    assert api.status_code == 200
    after_c = (await client.get(f"/v1/users/{by_console}/events", headers=tenant.operator)).json()["items"]
    added = len(after_c) - before_c
    assert added >= 2  # the observation and the entry's change
    console_events = await _events_after(client, tenant, by_console, added)
    api_events = await _events_after(client, tenant, by_api, added)
    assert [_comparable(e) for e in console_events] == [_comparable(e) for e in api_events]
    assert console_events[0]["actor"] == f"key:{console_events[0]['actor'].split(':', 1)[1]}"
    # The page after the redirect: the flash message once, the new tier.
    page = await client.get(r.headers["location"])
    tier = "long_term" if verdict == "confirm" else api.json()["tier"]
    assert re.search(rf'data-testid="entry-tier">{tier}<', page.text)
    assert 'data-testid="flash"' in page.text and ("Confirmed" if verdict == "confirm" else "Rejected") in page.text
    again = await client.get(r.headers["location"])
    assert 'data-testid="flash"' not in again.text


async def test_a_verdict_without_a_valid_csrf_token_changes_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    user, entry = await _profile_user(client, tenant)
    csrf = await signed_in(client, tenant.operator)
    url = f"/console/users/{user}/entries/{entry['id']}/confirm"
    before = await tenant_rows(db, tenant.tenant_id)
    for data in ({}, {"csrf_token": ""}, {"csrf_token": "forged"}, {"csrf_token": csrf + "x"}):
        r = await client.post(url, data=data)
        assert r.status_code == 403, data
        assert "text/html" in r.headers["content-type"] and "security token" in r.text
    r = await client.post(url, data={"csrf_token": csrf}, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403
    r = await client.post(url, json={"csrf_token": csrf})  # not a form
    assert r.status_code == 403
    assert await tenant_rows(db, tenant.tenant_id) == before
    page = await client.get(f"/console/users/{user}/entries/{entry['id']}")
    assert re.search(r'data-testid="entry-tier">candidate<', page.text)


async def test_a_verdict_on_another_tenants_entry_is_a_404_and_changes_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys, db: Database
) -> None:
    user, entry = await _profile_user(client, tenant)
    csrf = await signed_in(client, other_tenant.admin)
    before = await tenant_rows(db, tenant.tenant_id)
    for verdict in ("confirm", "reject"):
        r = await client.post(f"/console/users/{user}/entries/{entry['id']}/{verdict}", data={"csrf_token": csrf})
        assert r.status_code == 404 and "No such profile entry" in r.text
    assert await tenant_rows(db, tenant.tenant_id) == before


async def test_a_note_is_kept_with_the_evidence_and_a_bad_one_is_a_422_page(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    user, entry = await _profile_user(client, tenant)
    csrf = await signed_in(client, tenant.operator)
    url = f"/console/users/{user}/entries/{entry['id']}"
    r = await client.post(f"{url}/confirm", data={"csrf_token": csrf, "note": "said so on the phone"})
    assert r.status_code == 303
    evidence = (await client.get(f"/v1/users/{user}/profile/{entry['id']}", headers=tenant.operator)).json()
    assert evidence["observations"][0]["note"] == "said so on the phone"
    for note in ("a\x00b", "x" * 2001):
        r = await client.post(f"{url}/reject", data={"csrf_token": csrf, "note": note})
        assert r.status_code == 422, note
        assert "text/html" in r.headers["content-type"]
    evidence = (await client.get(f"/v1/users/{user}/profile/{entry['id']}", headers=tenant.operator)).json()
    assert len(evidence["observations"]) == 4  # three from the set-up, the confirmation; no rejection


async def test_pages_log_no_item_content_or_profile_value(
    client: httpx.AsyncClient, tenant: TenantKeys, caplog: pytest.LogCaptureFixture
) -> None:
    user = _user()
    marker = f"secret-{uuid.uuid4().hex}"
    await _post(client, f"/v1/users/{user}/items", {"type": "fact", "content": f"The code is {marker}"}, tenant.agent)
    entry = await _observe(client, tenant, user, value=marker)
    csrf = await signed_in(client, tenant.operator)
    with caplog.at_level(logging.DEBUG):
        pages = [
            await client.get(f"/console/?q={user}"),
            await client.get(f"/console/users/{user}"),
            await client.get(f"/console/users/{user}/entries/{entry['id']}"),
        ]
        await client.post(f"/console/users/{user}/entries/{entry['id']}/confirm", data={"csrf_token": csrf})
        await client.post(f"/console/users/{user}/entries/{entry['id']}/reject", data={"csrf_token": "bad"})
    assert all(p.status_code == 200 for p in pages)
    assert marker in pages[1].text and marker in pages[2].text  # shown on the page...
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert caplog.records  # the capture saw the requests' own logging
    assert marker not in logged  # ...never in the log


async def test_learned_items_and_observations_show_the_extractor_and_the_users_words(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    user = _user()
    said = "I love Thai food. We have a small ops team, so don't recommend Redis Cluster."
    body = {"messages": [{"role": "user", "content": said}], "session_id": "s-9"}
    learned = await _post(client, f"/v1/users/{user}/extract", body, tenant.agent, status=200)
    entry_id = learned["profile"][0]["id"]
    await signed_in(client, tenant.operator)
    page = (await client.get(f"/console/users/{user}")).text
    rows = {_cells(r)["Content"] for r in _rows(page, "item-row")}
    assert any("Redis Cluster" in r and "hard" in r and "learned by rules/1 in session s-9" in r for r in rows), rows
    entry = (await client.get(f"/console/users/{user}/entries/{entry_id}")).text
    (row,) = _rows(entry, "observation-row")
    assert "learned by rules/1 from “ I love Thai food ”" in _cells(row)["Note"]  # the quote in a span of its own
