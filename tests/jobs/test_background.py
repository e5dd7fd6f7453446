"""The API process runs the extract job itself when a session is due (jobs/background.py), so a service
started alone learns from stored conversations."""

from __future__ import annotations

import asyncio

import httpx

from jobs.background import anything_due, extract_in_background
from service.clock import Clock
from service.db.engine import Database
from service.settings import Settings
from tests.conftest import TenantKeys


async def test_the_server_extracts_a_due_session_by_itself_and_stops_when_told(
    client: httpx.AsyncClient, tenant: TenantKeys, db: Database, settings: Settings
) -> None:
    h = tenant.agent
    said = {"role": "user", "content": "We have a small ops team, so don't recommend Redis Cluster."}
    r = await client.post("/v1/users/bg/sessions/s1/messages", json={"messages": [said]}, headers=h)
    assert r.status_code == 201, r.text
    quick = settings.replace(extract_server_seconds=0.05, extract_idle_seconds=0)
    assert await anything_due(db, quick, Clock())
    stop = asyncio.Event()
    task = asyncio.create_task(extract_in_background(stop, db=db, settings=quick, clock=Clock()))
    learned: list[dict[str, object]] = []
    for _ in range(200):
        r = await client.get("/v1/users/bg/items", params={"extracted_by": "any"}, headers=h)
        learned = r.json()["items"]
        if learned:
            break
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(task, timeout=5)
    assert [i["hard"] for i in learned] == [True]
    runs = (await client.get("/v1/jobs/runs", params={"name": "extract"}, headers=tenant.admin)).json()["items"]
    assert any(run["trigger"] == "server" and run["status"] == "succeeded" for run in runs)


async def test_off_and_zero_do_not_start_it(db: Database, settings: Settings) -> None:
    stop = asyncio.Event()
    for changed in (settings.replace(extract_server_seconds=0), settings.replace(extractor="off")):
        await asyncio.wait_for(extract_in_background(stop, db=db, settings=changed, clock=Clock()), timeout=1)
