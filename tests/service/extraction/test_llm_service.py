"""The service with the ``llm`` extractor, against the chat-completions stand-in over real HTTP: whatever the
model invents or misattributes, only the user's own words are stored; an outage or a spent token cap
leaves the messages waiting, and nothing is lost."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from service.app import create_app
from service.clock import Clock
from service.db.engine import Database
from service.settings import Settings
from service.vectors.recall import VectorRecall
from tests.conftest import TenantKeys
from tests.service.extraction.llm_standin import LlmStandIn, serve

MODEL = "standin-1"
VERSION = f"llm/{MODEL}/p1"


@pytest.fixture(scope="module")
def running() -> Iterator[tuple[LlmStandIn, str]]:
    standin = LlmStandIn()
    with serve(standin) as url:
        yield standin, url


@pytest.fixture
async def llm_app(
    running: tuple[LlmStandIn, str], settings: Settings, db: Database, vectors: VectorRecall
) -> AsyncIterator[tuple[FastAPI, LlmStandIn]]:
    standin, url = running
    standin.reset()
    changed = settings.replace(
        extractor="llm",
        extractor_url=url,
        extractor_model=MODEL,
        extractor_max_retries=0,
        extractor_daily_token_cap=400,
    )
    app = create_app(changed, database=db, vectors=vectors)
    yield app, standin
    await app.state.extractor.close()


@pytest.fixture
async def llm_client(llm_app: tuple[FastAPI, LlmStandIn]) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=llm_app[0]), base_url="http://ctxmem.test") as c:
        yield c


CONVERSATION = [
    {"role": "user", "content": "Hi! I like green tea. I live in Lisbon."},
    {"role": "assistant", "content": "You live in Porto. Shall I look for flights?"},
    {"role": "user", "content": "Yes please."},
]


async def append(client: httpx.AsyncClient, h: dict[str, str], user: str, session: str, msgs: Any) -> None:
    r = await client.post(f"/v1/users/{user}/sessions/{session}/messages", json={"messages": msgs}, headers=h)
    assert r.status_code == 201, r.text


async def learned(client: httpx.AsyncClient, h: dict[str, str], user: str) -> list[dict[str, Any]]:
    params = {"extracted_by": "any", "include_superseded": "true"}
    r = await client.get(f"/v1/users/{user}/items", params=params, headers=h)
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["items"]
    return found


@pytest.mark.parametrize("mode", ["invent", "misattribute", "bad_records"])
async def test_a_hostile_model_gets_nothing_but_the_users_own_words_stored(
    llm_app: tuple[FastAPI, LlmStandIn], llm_client: httpx.AsyncClient, tenant: TenantKeys, mode: str
) -> None:
    _, standin = llm_app
    standin.mode = mode
    h = tenant.agent
    await append(llm_client, h, "u", "s1", CONVERSATION)
    r = await llm_client.post("/v1/users/u/sessions/s1/extract", headers=h)
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["extracted_by"] == VERSION and result["messages"] == 3
    user_text = CONVERSATION[0]["content"]
    for item in await learned(llm_client, h, "u"):
        assert item["extracted_by"] == VERSION and item["authority"] == "inferred"
        assert item["content"] in user_text and item["evidence"]["quote"] == item["content"]
        start, end = item["evidence"]["span"]
        assert user_text[start:end] == item["content"]
    contents = {i["content"] for i in await learned(llm_client, h, "u")}
    assert not any("Berlin" in c or "Porto" in c for c in contents)
    reasons = {x["reason"] for x in result["rejected"]}
    expected = {"invent": {"ungrounded"}, "misattribute": {"not_user_message", "ungrounded"}}.get(mode, {"malformed"})
    assert reasons == expected
    assert len(standin.requests) == 1  # the three messages in one call


async def test_an_outage_leaves_the_messages_waiting_and_a_later_run_extracts_them(
    llm_app: tuple[FastAPI, LlmStandIn], llm_client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    _, standin = llm_app
    h = tenant.agent
    await append(llm_client, h, "o", "s1", CONVERSATION)
    standin.mode = "500"
    r = await llm_client.post("/v1/users/o/sessions/s1/extract", headers=h)
    assert r.status_code == 200, r.text  # stored messages simply wait: the answer says why
    waited = r.json()
    assert waited["messages"] == 0 and waited["waiting"] == 3 and "HTTP 500" in waited["unavailable"]
    body = {"messages": CONVERSATION}  # messages sent in the body cannot wait: the caller is told to retry
    r = await llm_client.post("/v1/users/o/extract", json=body, headers=h)
    assert r.status_code == 503 and r.headers["content-type"].startswith("application/problem+json"), r.text
    assert r.json()["type"].endswith("extractor-unavailable") and int(r.headers["Retry-After"]) >= 1
    assert await learned(llm_client, h, "o") == []
    # The job skips the tenant while the provider is down, and says so.
    later = (Clock().now() + timedelta(hours=1)).isoformat()
    r = await llm_client.post("/v1/jobs/extract/run", json={"now": later}, headers=tenant.admin)
    assert r.status_code == 200 and r.json()["rows"]["sessions_waiting"] == 1, r.text
    standin.mode = "honest"
    r = await llm_client.post("/v1/jobs/extract/run", json={"now": later}, headers=tenant.admin)
    assert r.json()["rows"]["sessions_extracted"] == 1 and r.json()["rows"]["messages_extracted"] == 3
    assert {i["content"] for i in await learned(llm_client, h, "o")} == {"I like green tea", "I live in Lisbon"}


async def test_a_session_ended_while_its_messages_wait_keeps_them_until_they_are_extracted(
    llm_app: tuple[FastAPI, LlmStandIn], llm_client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    _, standin = llm_app
    h = tenant.agent
    await append(llm_client, h, "end", "s1", CONVERSATION)
    standin.mode = "500"
    r = await llm_client.delete("/v1/users/end/sessions/s1", headers=h)
    assert r.status_code == 200, r.text
    kept = (await llm_client.get("/v1/users/end/sessions/s1/messages", headers=h)).json()["items"]
    assert len(kept) == 3 and all(m["archived_item_id"] for m in kept)  # out of every window, not lost
    standin.mode = "honest"
    r = await llm_client.post("/v1/jobs/extract/run", headers=tenant.admin)
    assert r.json()["rows"]["sessions_extracted"] == 1, r.text  # an ended session is due at once
    assert (await llm_client.get("/v1/users/end/sessions/s1/messages", headers=h)).json()["items"] == []
    assert {i["content"] for i in await learned(llm_client, h, "end")} == {"I like green tea", "I live in Lisbon"}


async def test_the_daily_token_cap_makes_the_messages_wait(
    llm_app: tuple[FastAPI, LlmStandIn], llm_client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    _, standin = llm_app
    standin.prompt_tokens, standin.completion_tokens = 300, 150  # one call spends more than the cap of 400
    h = tenant.agent
    body = {"messages": CONVERSATION, "dry_run": True}
    r = await llm_client.post("/v1/users/cap/extract", json=body, headers=h)
    assert r.status_code == 200, r.text
    r = await llm_client.post("/v1/users/cap/extract", json=body, headers=h)
    standin.prompt_tokens, standin.completion_tokens = 120, 30
    assert r.status_code == 429 and r.json()["type"].endswith("extraction-cap-reached"), r.text
    assert 0 < int(r.headers["Retry-After"]) <= 86_400
    assert "400" in r.json()["detail"] and "CTXMEM_EXTRACTOR_DAILY_TOKEN_CAP" in r.json()["detail"]
