"""The console's erase page (service/console/pages/erase.py) through the real app and PostgreSQL: what will be
erased, then the erasure itself only for an admin, with the session's CSRF token and the user id typed exactly;
anything else erases nothing."""

from __future__ import annotations

import re

import httpx

from service.db.engine import Database
from service.users.service import user_fingerprint
from tests.conftest import TenantKeys
from tests.helpers import count_rows
from tests.service.console.conftest import signed_in

USER = "erase.me@example.com"
PAGE = f"/console/users/{USER}/erase"


async def seed(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    items = [{"type": "fact", "content": f"Fact {i} about the user."} for i in range(3)]
    r = await client.post(f"/v1/users/{USER}/items/batch", json={"items": items}, headers=tenant.agent)
    assert r.status_code == 201, r.text
    obs = {"dimension": "preference", "key": "drink", "value": "tea", "session_id": "s1"}
    r = await client.post(f"/v1/users/{USER}/observations", json=obs, headers=tenant.agent)
    assert r.status_code in (200, 201), r.text


def shown_counts(page: str) -> dict[str, int]:
    found = re.findall(r'data-table="(\w+)"><td><code>\w+</code></td><td class="num">(\d+)</td>', page)
    return {table: int(n) for table, n in found}


async def user_rows(db: Database, tenant_id: str) -> dict[str, int]:
    tables = ("context_item", "observation", "profile_entry", "event", "end_user")
    return {t: await count_rows(db, tenant_id, t, USER) for t in tables}


async def test_an_admin_sees_the_counts_and_erases_with_the_typed_id(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    await seed(client, tenant)
    csrf = await signed_in(client, tenant.admin)
    r = await client.get(PAGE)
    assert r.status_code == 200, r.text
    counts = shown_counts(r.text)
    rows = await user_rows(db, tenant.tenant_id)
    assert counts["context_item"] == rows["context_item"] == 3 and counts["observation"] == rows["observation"] == 1
    assert counts["end_user"] == 1 and counts["event"] == rows["event"] > 0
    assert 'data-testid="erase-confirm-input"' in r.text and 'data-testid="erase-button"' in r.text

    done = await client.post(PAGE, data={"csrf_token": csrf, "confirm_user_id": USER})
    assert done.status_code == 200, done.text
    assert user_fingerprint(tenant.tenant_id, USER) in done.text
    assert all(n == 0 for n in (await user_rows(db, tenant.tenant_id)).values())
    items = await client.get(f"/v1/users/{USER}/items", headers=tenant.admin)
    assert items.json()["items"] == []
    gone = await client.get(PAGE)  # nothing left to erase
    assert gone.status_code == 404 and "no user" in gone.text


async def test_a_wrong_typed_id_or_a_missing_csrf_token_erases_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    await seed(client, tenant)
    csrf = await signed_in(client, tenant.admin)
    before = await user_rows(db, tenant.tenant_id)
    for typed in ("", "erase.me", USER.upper(), USER + " "):
        r = await client.post(PAGE, data={"csrf_token": csrf, "confirm_user_id": typed})
        assert r.status_code == 422, (typed, r.text)
        assert 'data-testid="erase-error"' in r.text and "nothing was erased" in r.text
    for data in ({"confirm_user_id": USER}, {"csrf_token": "forged", "confirm_user_id": USER}):
        r = await client.post(PAGE, data=data)
        assert r.status_code == 403 and "security token" in r.text
    assert await user_rows(db, tenant.tenant_id) == before


async def test_an_operator_may_not_see_or_erase(client: httpx.AsyncClient, tenant: TenantKeys, db: Database) -> None:
    await seed(client, tenant)
    csrf = await signed_in(client, tenant.operator)
    before = await user_rows(db, tenant.tenant_id)
    r = await client.get(PAGE)
    assert r.status_code == 403 and "users:erase" in r.text and "erase-button" not in r.text
    r = await client.post(PAGE, data={"csrf_token": csrf, "confirm_user_id": USER})
    assert r.status_code == 403 and "users:erase" in r.text
    assert await user_rows(db, tenant.tenant_id) == before


async def test_another_tenants_user_is_a_404(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys, db: Database
) -> None:
    await seed(client, other_tenant)
    csrf = await signed_in(client, tenant.admin)
    assert (await client.get(PAGE)).status_code == 404
    r = await client.post(PAGE, data={"csrf_token": csrf, "confirm_user_id": USER})
    assert r.status_code == 404
    assert await count_rows(db, other_tenant.tenant_id, "context_item", USER) == 3
