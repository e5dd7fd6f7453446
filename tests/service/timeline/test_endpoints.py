"""service/timeline/endpoints.py: the route's parameters refused with a 422 naming them. (Filters and
paging through the route: tests/service/test_timeline.py.)"""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import TenantKeys


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"limit": 0}, "limit"),
        ({"cursor": "c" * 513}, "cursor"),
        ({"order": "newest"}, "order"),
        ({"kind": "job"}, "kind"),
    ],
)
async def test_bad_parameters_are_422_naming_them(
    client: httpx.AsyncClient, tenant: TenantKeys, params: dict[str, object], where: str
) -> None:
    r = await client.get("/v1/users/u/events", params=params, headers=tenant.operator)
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["errors"][0]["loc"][:2] == ["query", where]


async def test_a_forged_cursor_is_422_not_500(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.get("/v1/users/u/events", params={"cursor": "bm90LWEtY3Vyc29y"}, headers=tenant.operator)
    assert r.status_code == 422 and r.json()["type"] == "urn:ctxmem:problem:validation-error"


async def test_a_bad_user_id_is_422(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.get("/v1/users/has%20space/events", headers=tenant.operator)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["path", "user_id"]
