"""The console's jobs page (service/console/pages/jobs.py) through the real app and PostgreSQL: recent runs
and a run form per job for admins; an operator may neither see the runs nor run a job (as with the API);
a post without the session's CSRF token, or naming no job, runs nothing."""

from __future__ import annotations

import html
import re

import httpx
from sqlalchemy import text

from schemas.jobs import JOB_NAMES
from service.db.engine import Database
from tests.conftest import TenantKeys
from tests.service.console.conftest import signed_in


async def tenant_runs(db: Database, tenant_id: str) -> int:
    async with db.engine.connect() as conn:
        found = await conn.execute(text("SELECT count(*) FROM job_run WHERE tenant_id = :t"), {"t": tenant_id})
        return int(found.scalar_one())


async def test_an_admin_sees_a_run_form_per_job_and_runs_one(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    csrf = await signed_in(client, tenant.admin)
    r = await client.get("/console/jobs")
    assert r.status_code == 200, r.text
    for name in JOB_NAMES:
        assert f'data-testid="run-job-{name}"' in r.text
    assert 'href="/console/jobs" aria-current="page"' in r.text  # in an admin's menu
    r = await client.post("/console/jobs/decay/run", data={"csrf_token": csrf})
    assert r.status_code == 303 and r.headers["location"] == "/console/jobs"
    assert await tenant_runs(db, tenant.tenant_id) == 1
    page = await client.get("/console/jobs", params={"name": "decay", "limit": 5})
    assert page.status_code == 200
    assert re.search(r'data-testid="flash">decay: succeeded', page.text)  # the outcome, once
    rows = re.findall(r'data-testid="job-run-row" data-job="(\w+)" data-status="(\w+)"', page.text)
    api = (await client.get("/v1/jobs/runs", params={"name": "decay", "limit": 5}, headers=tenant.admin)).json()
    assert rows == [(run["name"], run["status"]) for run in api["items"]] and rows[0] == ("decay", "succeeded")
    assert "this tenant" in page.text
    again = await client.get("/console/jobs")
    assert 'data-testid="flash"' not in again.text


async def test_an_operator_sees_no_runs_and_may_not_run_a_job(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    csrf = await signed_in(client, tenant.operator)
    r = await client.get("/console/jobs")
    assert r.status_code == 403 and "text/html" in r.headers["content-type"]
    assert "jobs:run" in r.text and "admin" in r.text  # what it needs, and which key has it
    assert "run-job-" not in r.text and "job-run-row" not in r.text
    home = await client.get("/console/")
    assert 'href="/console/jobs"' not in home.text  # the menu offers an operator no page it cannot open
    r = await client.post("/console/jobs/decay/run", data={"csrf_token": csrf})
    assert r.status_code == 403 and "jobs:run" in r.text
    assert await tenant_runs(db, tenant.tenant_id) == 0


async def test_a_post_without_the_csrf_token_or_for_no_job_runs_nothing(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database
) -> None:
    csrf = await signed_in(client, tenant.admin)
    for data in ({}, {"csrf_token": "forged"}):
        r = await client.post("/console/jobs/decay/run", data=data)
        assert r.status_code == 403, r.text
        assert "security token" in r.text
    r = await client.post(
        "/console/jobs/decay/run", data={"csrf_token": csrf}, headers={"Origin": "https://elsewhere.example"}
    )
    assert r.status_code == 403
    r = await client.post("/console/jobs/vacuum/run", data={"csrf_token": csrf})
    assert r.status_code == 404 and "text/html" in r.headers["content-type"]
    assert "there is no job 'vacuum'" in html.unescape(r.text) and ", ".join(JOB_NAMES) in r.text
    assert await tenant_runs(db, tenant.tenant_id) == 0


async def test_bad_filters_are_a_422_page(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    await signed_in(client, tenant.admin)
    for params in ({"limit": "many"}, {"limit": "0"}, {"limit": "501"}, {"name": "vacuum"}):
        r = await client.get("/console/jobs", params=params)
        assert r.status_code == 422 and "text/html" in r.headers["content-type"], params
    assert "there is no job" in r.text
    all_jobs = await client.get("/console/jobs", params={"name": "", "limit": "50"})  # the form's "All jobs"
    assert all_jobs.status_code == 200, all_jobs.text
