"""Date-times at the edges of what PostgreSQL, asyncpg and Python can hold are a 422, not a 500.

Found by the OpenAPI fuzzer (tests/proof/test_fuzz_openapi.py): ``0001-01-01T00:00:00Z`` was stored as
``-infinity`` (asyncpg's encoding of ``datetime.min``) and read back naive, and ``…+14:00`` at year 1 or
``…-14:00`` at year 9999 overflowed when converted to UTC — 500 on observations, items and job runs.
"""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import TenantKeys

EDGES = [
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T23:59:59-14:00",
    "1899-12-31T23:59:59Z",
]


@pytest.mark.parametrize("at", EDGES)
async def test_out_of_range_date_times_are_422(client: httpx.AsyncClient, tenant: TenantKeys, at: str) -> None:
    calls = [
        ("/v1/users/u/observations", {"dimension": "goal", "key": "k", "value": "v", "observed_at": at}, tenant.agent),
        ("/v1/users/u/items", {"type": "fact", "content": "x", "observed_at": at}, tenant.agent),
        ("/v1/users/u/items", {"type": "fact", "content": "x", "expires_at": at}, tenant.agent),
        ("/v1/jobs/expire/run", {"now": at}, tenant.admin),
    ]
    for path, body, headers in calls:
        r = await client.post(path, json=body, headers=headers)
        assert r.status_code == 422, (path, body, r.status_code, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        assert "1900-01-01T00:00:00Z" in r.text


async def test_date_times_inside_the_range_are_accepted(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post(
        "/v1/users/u/items",
        json={
            "type": "fact",
            "content": "x",
            "observed_at": "1900-01-01T00:00:00Z",
            "expires_at": "9998-12-31T23:59:59Z",
        },
        headers=tenant.agent,
    )
    assert r.status_code == 201, r.text
    r = await client.post("/v1/jobs/expire/run", json={"now": "1900-01-01T00:00:00+00:00"}, headers=tenant.admin)
    assert r.status_code == 200, r.text
