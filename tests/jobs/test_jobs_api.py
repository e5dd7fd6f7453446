"""POST /v1/jobs/{name}/run and GET /v1/jobs/runs."""

from __future__ import annotations

import asyncio

import httpx

from tests.conftest import TenantKeys


async def test_run_and_list(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    r = await client.post(
        "/v1/users/api/items", json={"type": "tool_result", "content": "x", "source": "tool"}, headers=tenant.agent
    )
    assert r.status_code == 201
    assert (await client.post("/v1/jobs/expire/run", headers=tenant.agent)).status_code == 403
    assert (await client.post("/v1/jobs/expire/run", headers=tenant.operator)).status_code == 403
    r = await client.post("/v1/jobs/expire/run", json={"now": "2099-01-01T00:00:00Z"}, headers=tenant.admin)
    assert r.status_code == 200, r.text
    run = r.json()
    assert run["status"] == "succeeded" and run["tenant_id"] == tenant.tenant_id and run["trigger"] == "api"
    assert run["rows"]["items_expired"] == 1 and run["as_of"].startswith("2099-01-01")
    runs = (await client.get("/v1/jobs/runs?name=expire", headers=tenant.admin)).json()["items"]
    assert runs[0]["id"] == run["id"]
    assert (await client.post("/v1/jobs/nope/run", headers=tenant.admin)).status_code == 422
    assert (
        await client.post("/v1/jobs/expire/run", json={"now": "2099-01-01T00:00:00"}, headers=tenant.admin)
    ).status_code == 422
    assert (await client.get("/v1/jobs/runs?limit=0", headers=tenant.admin)).status_code == 422


async def test_runs_are_scoped_to_the_tenant(
    client: httpx.AsyncClient, tenant: TenantKeys, other_tenant: TenantKeys
) -> None:
    r = await client.post("/v1/jobs/decay/run", headers=tenant.admin)
    assert r.status_code == 200
    theirs = (await client.get("/v1/jobs/runs", headers=other_tenant.admin)).json()["items"]
    assert r.json()["id"] not in {x["id"] for x in theirs}


async def test_concurrent_runs_answer_with_their_own_record_or_409(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    """Runs of one job at once: each answer is its own run's record as stored, or job-running; never a 500."""
    answers = await asyncio.gather(
        *(
            client.post("/v1/jobs/expire/run", json={"now": "2031-01-01T00:00:00Z"}, headers=tenant.admin)
            for _ in range(6)
        )
    )
    assert {r.status_code for r in answers} <= {200, 409}, [r.text for r in answers]
    ran = [r.json() for r in answers if r.status_code == 200]
    assert ran and len({r["id"] for r in ran}) == len(ran)
    busy = [r.json() for r in answers if r.status_code == 409]
    assert all(b["type"].endswith("job-running") for b in busy)
    listed = {r["id"]: r for r in (await client.get("/v1/jobs/runs?name=expire", headers=tenant.admin)).json()["items"]}
    for run in ran:
        assert listed[run["id"]] == run and run["status"] == "succeeded" and run["finished_at"] is not None
