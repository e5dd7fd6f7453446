"""The console's window preview (service/console/pages/window.py) through the real app and PostgreSQL: the
window the API would give, at two budgets side by side, written to no table; bad input is a page that says
what to fix, never a 500."""

from __future__ import annotations

import re
from typing import Any

import httpx
from sqlalchemy import text

from service.db.engine import Database
from tests.conftest import TenantKeys
from tests.helpers import tenant_rows
from tests.service.console.conftest import signed_in

USER = "w"
PAGE = f"/console/users/{USER}/window"
INPUT = "Which cache should we use?"


async def seed(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    items: list[dict[str, Any]] = [
        {"type": "constraint", "content": "Do not recommend Redis Cluster.", "hard": True, "source": "user"}
    ]
    items += [
        {"type": "tool_result", "content": f"Benchmark run {i}: " + "latency numbers " * 40, "source": "tool"}
        for i in range(20)
    ]
    r = await client.post(f"/v1/users/{USER}/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text


def panel(html: str, testid: str) -> str:
    """The HTML of one side of the preview (window-a runs up to window-b)."""
    start = html.index(f'data-testid="{testid}"')
    end = html.find('data-testid="window-b"', start + 1) if testid == "window-a" else -1
    return html[start:end] if end != -1 else html[start:]


def modes(html: str) -> list[str]:
    return re.findall(r'data-testid="window-mode">(\w+)<', html)


def levels(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'data-testid="window-item" data-level="(\d)"', html)]


async def test_the_form_comes_first_with_two_budgets_and_a_slider(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await seed(client, tenant)
    await signed_in(client, tenant.operator)
    r = await client.get(PAGE)
    assert r.status_code == 200, r.text
    assert 'name="max_tokens"' in r.text and 'name="max_tokens_b"' in r.text
    assert 'type="range"' in r.text and 'data-mirror="max_tokens"' in r.text
    assert 'data-testid="window-a"' not in r.text  # no input yet: no window


async def test_two_budgets_side_by_side_give_different_modes_and_levels(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await seed(client, tenant)
    await signed_in(client, tenant.operator)
    r = await client.get(PAGE, params={"input": INPUT, "max_tokens": "100000", "max_tokens_b": "400"})
    assert r.status_code == 200, r.text
    roomy, tight = panel(r.text, "window-a"), panel(r.text, "window-b")
    assert modes(roomy) == ["full"] and modes(tight) == ["compact"]
    assert levels(roomy) and set(levels(roomy)) == {0}  # everything whole
    assert levels(tight) != levels(roomy)  # items compressed or left out
    assert 'data-testid="window-omitted"' in tight and 'data-testid="window-omitted"' not in roomy
    assert "Do not recommend Redis Cluster." in tight  # pinned: in the text at any budget
    # The same numbers the API gives for the same request.
    api = await client.post(
        f"/v1/users/{USER}/window", json={"input": INPUT, "max_tokens": 400, "detail": "full"}, headers=tenant.operator
    )
    w = api.json()
    assert modes(tight) == [w["mode"]]
    assert levels(tight) == [it["level"] for s in w["sections"] for it in s["items"]]
    assert f"{w['tokens']['used']} / 400" in tight
    assert tight.count('data-testid="window-omitted"') == len(w["omitted"])


async def test_one_budget_gives_one_window(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await seed(client, tenant)
    await signed_in(client, tenant.operator)
    r = await client.get(PAGE, params={"input": INPUT, "max_tokens": "900", "max_tokens_b": ""})
    assert r.status_code == 200, r.text
    assert 'data-testid="window-a"' in r.text and 'data-testid="window-b"' not in r.text
    assert 'data-testid="window-tokens"' in r.text


async def _state(db: Database, tenant_id: str) -> dict[str, Any]:
    """Every row a window could write: the user's tables, the vector outbox and search rows, and which stored
    turns are archived."""
    rows: dict[str, Any] = dict(await tenant_rows(db, tenant_id))
    async with db.engine.connect() as conn:
        for table in ("conversation_message", "vector_outbox", "item_search", "job_run"):
            sql = f"SELECT count(*) FROM {table} WHERE tenant_id = :t"  # table names are constants
            rows[table] = (await conn.execute(text(sql), {"t": tenant_id})).scalar_one()
        archived = "SELECT count(*) FROM conversation_message WHERE tenant_id = :t AND archived_item_id IS NOT NULL"
        rows["archived"] = (await conn.execute(text(archived), {"t": tenant_id})).scalar_one()
    return rows


async def test_the_preview_writes_nothing_even_for_an_admin_whose_window_would_archive(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    await seed(client, tenant)
    turns = [
        {"role": role, "content": f"{role} turn {i}: the offsite venue seats forty and has a garden"}
        for i in range(30)
        for role in ("user", "assistant")
    ]
    r = await client.post(f"/v1/users/{USER}/sessions/s1/messages", json={"messages": turns}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    await signed_in(client, tenant.admin)
    before = await _state(db, tenant.tenant_id)
    r = await client.get(PAGE, params={"input": INPUT, "session_id": "s1", "max_tokens": "700", "max_tokens_b": "500"})
    assert r.status_code == 200, r.text
    kept = [int(n) for n in re.findall(r"history messages \((\d+) kept\)", r.text)]
    assert len(kept) == 2 and all(0 < n < len(turns) for n in kept)  # turns fell out of both windows
    assert await _state(db, tenant.tenant_id) == before
    history = re.findall(r"<li><strong>(user|assistant)</strong>: ([^<]*)</li>", panel(r.text, "window-a"))
    assert len(history) == kept[0] and history[-1] == ("assistant", turns[-1]["content"])
    # The same request through the API, with the same admin key, does write: the comparison above can fail.
    api = await client.post(
        f"/v1/users/{USER}/window", json={"input": INPUT, "session_id": "s1", "max_tokens": 700}, headers=tenant.admin
    )
    assert api.status_code == 200 and api.json()["archived_item_id"] is not None
    after = await _state(db, tenant.tenant_id)
    assert after["archived"] > before["archived"] and after["context_item"] == before["context_item"] + 1


async def test_bad_budgets_and_inputs_are_pages_that_say_how_to_fix_them(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    await seed(client, tenant)
    await signed_in(client, tenant.operator)
    r = await client.get(PAGE, params={"input": INPUT, "max_tokens": "lots", "max_tokens_b": "400"})
    assert r.status_code == 422 and "text/html" in r.headers["content-type"]
    assert "is not a whole number of tokens" in panel(r.text, "window-a")
    assert modes(panel(r.text, "window-b")) == ["compact"]  # the other side still shows its window
    r = await client.get(PAGE, params={"input": INPUT, "max_tokens": "5", "max_tokens_b": ""})
    assert r.status_code == 422
    assert "The pinned content alone does not fit the budget" in r.text
    needed = re.search(r"raise budget a \(max_tokens\) to at least ([\d,]+) tokens", r.text)
    assert needed and int(needed.group(1).replace(",", "")) > 5
    for budget in ("0", "-3", "3000001"):
        r = await client.get(PAGE, params={"input": INPUT, "max_tokens": budget, "max_tokens_b": ""})
        assert r.status_code == 422, (budget, r.text)
        assert 'data-testid="window-error"' in r.text and "type a whole number of tokens from 1 to 2,000,000" in r.text
    for budget in ("", " ", "1e3", "0x10", "2.5", "²", "١٢", "9" * 40, "NaN", "\x00"):
        r = await client.get(PAGE, params={"input": INPUT, "max_tokens": budget, "max_tokens_b": ""})
        assert r.status_code == 422 and 'data-testid="window-error"' in r.text, (budget, r.status_code)
    r = await client.get(PAGE, params={"input": INPUT, "max_tokens": "2,000", "max_tokens_b": ""})
    assert r.status_code == 200 and modes(r.text)  # thousands separators are fine
    r = await client.get(PAGE, params={"input": "  ", "max_tokens": "900"})
    assert r.status_code == 422 and "input is required" in r.text
    r = await client.get(PAGE, params={"input": "x" * 40_000, "max_tokens": "900"})
    assert r.status_code == 422 and "text/html" in r.headers["content-type"]
    r = await client.get("/console/users/bad%20user!/window", params={"input": INPUT})
    assert r.status_code == 422 and "text/html" in r.headers["content-type"]


async def test_a_profile_entry_in_the_window_links_to_its_evidence(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    obs = {"dimension": "preference", "key": "cache", "value": "memcached", "session_id": "s1", "explicit": True}
    r = await client.post(f"/v1/users/{USER}/observations", json=obs, headers=tenant.agent)
    assert r.status_code in (200, 201), r.text
    await signed_in(client, tenant.operator)
    r = await client.get(PAGE, params={"input": INPUT, "session_id": "s1", "max_tokens": "2000", "max_tokens_b": ""})
    assert r.status_code == 200, r.text
    links = re.findall(r'<a href="([^"]+)" data-testid="window-entry-link">', r.text)
    assert links, "the profile entry in the window has no link to its evidence"
    entry = await client.get(links[0])
    assert entry.status_code == 200 and "memcached" in entry.text


async def test_another_tenants_user_is_a_404(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    await seed(client, other_tenant)
    await signed_in(client, tenant.admin)
    r = await client.get(PAGE, params={"input": INPUT, "max_tokens": "900"})
    assert r.status_code == 404 and "text/html" in r.headers["content-type"]
    assert "Do not recommend Redis Cluster." not in r.text and 'data-testid="window-a"' not in r.text


async def test_the_preview_needs_a_signed_in_console_session(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.get(PAGE, params={"input": INPUT, "max_tokens": "900"})
    assert r.status_code == 303 and r.headers["location"].startswith("/console/sign-in?next=")
    r = await client.get(PAGE, params={"input": INPUT, "max_tokens": "900"}, headers=tenant.operator)
    assert r.status_code == 303  # an API key is not a console session
