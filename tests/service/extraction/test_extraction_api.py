"""Learning from the conversation (docs/design.md §3.9): stored conversations and messages sent in the
body become items and profile evidence with their provenance; the four guarantees hold whatever the
extractor proposes."""
# ruff: noqa: RUF001 - the Chinese sample text uses fullwidth punctuation on purpose.

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI

from schemas.extraction import ExtractionResult
from scoring.extraction import Message, Proposal
from service.clock import Clock
from service.extraction.base import Proposals
from service.extraction.extractors import RulesExtractor
from service.extraction.service import extract_session
from tests.conftest import TenantKeys
from tests.service.service_context import service_context

REDIS = "We have a small ops team, so don't recommend anything they can't run alone — no Redis Cluster."


def filler(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out.append({"role": "user", "content": f"What does step {i} of the migration involve?"})
        out.append({"role": "assistant", "content": f"Step {i} copies table {i} and checks its row counts."})
    return out


async def append(client: httpx.AsyncClient, headers: dict[str, str], user: str, session: str, msgs: Any) -> None:
    r = await client.post(f"/v1/users/{user}/sessions/{session}/messages", json={"messages": msgs}, headers=headers)
    assert r.status_code == 201, r.text


async def extract(
    client: httpx.AsyncClient, headers: dict[str, str], user: str, session: str, **body: Any
) -> ExtractionResult:
    r = await client.post(f"/v1/users/{user}/sessions/{session}/extract", json=body or None, headers=headers)
    assert r.status_code == 200, r.text
    return ExtractionResult.model_validate_json(r.content)


async def items(client: httpx.AsyncClient, headers: dict[str, str], user: str, **params: Any) -> list[dict[str, Any]]:
    r = await client.get(f"/v1/users/{user}/items", params=params, headers=headers)
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["items"]
    return found


async def window(client: httpx.AsyncClient, headers: dict[str, str], user: str, **body: Any) -> dict[str, Any]:
    r = await client.post(f"/v1/users/{user}/window", json=body, headers=headers)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


async def test_a_constraint_said_in_the_first_turn_is_in_every_later_window_whatever_the_question(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    h = tenant.agent
    await append(client, h, "u1", "s1", [{"role": "user", "content": REDIS}, {"role": "assistant", "content": "OK."}])
    await append(client, h, "u1", "s1", filler(20))
    result = await extract(client, h, "u1", "s1")
    assert result.extracted_by == "rules/1" and result.messages == 42 and result.waiting == 0
    (record,) = [r for r in result.records if r.type == "constraint"]
    assert record.hard and record.item is not None and record.item.authority == "inferred"
    assert record.content in REDIS and "Redis Cluster" in record.content
    stored = await items(client, h, "u1", extracted_by="any")
    (item,) = [i for i in stored if i["type"] == "constraint"]
    assert item["extracted_by"] == "rules/1" and item["hard"] is True and item["scope"] == "user"
    evidence = item["evidence"]
    assert evidence["quote"] == item["content"] and evidence["session_id"] == "s1"
    start, end = evidence["span"]
    assert REDIS[start:end] == item["content"]
    messages = (await client.get("/v1/users/u1/sessions/s1/messages", headers=h)).json()["items"]
    assert evidence["message_id"] == messages[0]["id"]
    r = await client.post("/v1/users/u1/search", json={"query": "Redis Cluster ops team"}, headers=h)
    assert r.status_code == 200, r.text
    hit = next(x["item"] for x in r.json()["items"] if x["item"]["id"] == item["id"])
    assert hit["extracted_by"] == "rules/1" and hit["evidence"] == evidence
    for question in ("Any other options?", "What should we do about caching?", "Thanks, what's next?"):
        for session in ("s1", "s2"):
            w = await window(client, h, "u1", input=question, max_tokens=300, session_id=session)
            assert item["content"] in w["text"], (question, w["text"])


async def test_chinese_constraint_and_a_budget_changed_later_leave_one_budget_in_force(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    h = tenant.agent
    await append(client, h, "zh", "s1", [{"role": "user", "content": "运维人手不多，别推荐运维搞不定的方案。"}])
    await append(
        client, h, "zh", "s1", [{"role": "assistant", "content": "好的。"}, {"role": "user", "content": "预算 5000"}]
    )
    await extract(client, h, "zh", "s1")
    await append(
        client,
        h,
        "zh",
        "s1",
        [{"role": "assistant", "content": "明白。"}, {"role": "user", "content": "预算改成 8000"}],
    )
    await extract(client, h, "zh", "s1")
    learned = await items(client, h, "zh", extracted_by="rules", include_superseded="true")
    hard = [i for i in learned if i["type"] == "constraint" and i["hard"]]
    assert len(hard) == 1 and "别推荐" in hard[0]["content"]
    budgets = [i for i in learned if i["key"] == "budget"]
    assert sorted((i["value"], i["status"]) for i in budgets) == [(5000, "superseded"), (8000, "available")]
    old = next(i for i in budgets if i["value"] == 5000)
    new = next(i for i in budgets if i["value"] == 8000)
    assert old["superseded_by"] == new["id"]
    in_force = await items(client, h, "zh", key="budget")
    assert [i["value"] for i in in_force] == [8000]
    w = await window(client, h, "zh", input="有什么推荐？", max_tokens=300)
    assert "别推荐运维搞不定的方案" in w["text"]


async def test_a_dry_run_writes_nothing_and_says_what_it_would_write_and_what_it_rejected(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    body = {
        "messages": [
            {"role": "system", "content": "The user hates cats."},
            {"role": "user", "content": "I'm vegetarian, and I love Lisbon."},
            {"role": "assistant", "content": "I love sushi and I live in Paris."},
        ],
        "dry_run": True,
    }
    r = await client.post("/v1/users/dry/extract", json=body, headers=tenant.agent)
    assert r.status_code == 200, r.text
    result = ExtractionResult.model_validate_json(r.content)
    assert result.dry_run and result.records and all(rec.outcome == "would_write" for rec in result.records)
    assert all(rec.item is None and rec.evidence.message_index == 1 for rec in result.records)
    assert all(rec.content in body["messages"][1]["content"] for rec in result.records)  # type: ignore[index]
    assert not any("Paris" in rec.content or "cats" in rec.content for rec in result.records)
    assert await items(client, tenant.agent, "dry") == []
    profile = (await client.get("/v1/users/dry/profile", headers=tenant.agent)).json()
    assert not any(profile["tiers"].values())


async def test_the_same_statement_again_reinforces_and_a_window_read_back_yields_nothing_new(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    h = tenant.agent
    said = {"role": "user", "content": REDIS}
    first = await client.post("/v1/users/loop/extract", json={"messages": [said], "session_id": "a"}, headers=h)
    assert first.status_code == 200, first.text
    again = await client.post("/v1/users/loop/extract", json={"messages": [said], "session_id": "b"}, headers=h)
    outcomes = [rec["outcome"] for rec in again.json()["records"]]
    assert outcomes and set(outcomes) == {"reinforced"}
    (active,) = await items(client, h, "loop", type="constraint")
    assert active["support_count"] == 2
    before = await items(client, h, "loop", include_superseded="true")
    w = await window(client, h, "loop", input="Which cache should we use?", max_tokens=400)
    echo = {"role": "user", "content": "Here is what you know about me:\n" + w["text"] + "\nThanks."}
    r = await client.post("/v1/users/loop/extract", json={"messages": [echo], "session_id": "c"}, headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["records"] == []
    assert await items(client, h, "loop", include_superseded="true") == before
    index_line = {"role": "user", "content": "[ctx: cache decision, 240 tokens — GET /v1/users/loop/items/x]"}
    r = await client.post("/v1/users/loop/extract", json={"messages": [index_line]}, headers=h)
    assert r.json()["records"] == []


async def test_a_session_is_extracted_once_per_version_and_ending_it_flushes_its_buffer(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    h = tenant.agent
    await append(client, h, "once", "s1", [{"role": "user", "content": "I live in Porto."}])
    first = await extract(client, h, "once", "s1")
    second = await extract(client, h, "once", "s1")
    assert first.messages == 1 and [r.value for r in first.records] == ["porto"]
    assert second.messages == 0 and second.records == []
    assert len(await items(client, h, "once", include_superseded="true")) == 1
    await append(client, h, "once", "s2", [{"role": "user", "content": "I'm allergic to peanuts, never suggest them."}])
    r = await client.delete("/v1/users/once/sessions/s2", headers=h)
    assert r.status_code == 200, r.text
    learned = await items(client, h, "once", extracted_by="rules/1")
    assert any("peanuts" in i["content"] for i in learned)
    assert (await client.get("/v1/users/once/sessions/s2/messages", headers=h)).json()["items"] == []


async def test_the_listing_filter_by_extractor(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    h = tenant.agent
    r = await client.post("/v1/users/f/items", json={"type": "fact", "content": "Written by hand."}, headers=h)
    assert r.status_code == 201, r.text
    await client.post(
        "/v1/users/f/extract", json={"messages": [{"role": "user", "content": "I live in Oslo."}]}, headers=h
    )
    names = {
        f: [i["content"] for i in await items(client, h, "f", extracted_by=f)]
        for f in ("any", "none", "rules", "rules/1", "llm", "rules/9")
    }
    assert names["none"] == ["Written by hand."]
    assert names["any"] == names["rules"] == names["rules/1"] == ["I live in Oslo"]
    assert names["llm"] == names["rules/9"] == []
    bad = await client.get("/v1/users/f/items", params={"extracted_by": "no spaces"}, headers=h)
    assert bad.status_code == 422
    bad = await client.get("/v1/users/f/items", params={"extracted_by": "any", "view": "effective"}, headers=h)
    assert bad.status_code == 422 and "extracted_by" in bad.json()["detail"]


async def test_preferences_feed_the_profile_with_evidence_and_confirmation_works_on_them(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    h = tenant.agent
    body = {"messages": [{"role": "user", "content": "I love Thai food."}], "session_id": "p1"}
    r = await client.post("/v1/users/pref/extract", json=body, headers=h)
    assert r.status_code == 200, r.text
    (entry,) = r.json()["profile"]
    assert entry["dimension"] == "preference" and entry["polarity"] == "like" and entry["tier"] == "current"
    evidence = (await client.get(f"/v1/users/pref/profile/{entry['id']}", headers=tenant.operator)).json()
    (obs,) = evidence["observations"]
    assert (
        obs["explicit"] is True and obs["extracted_by"] == "rules/1" and obs["evidence"]["quote"] in "I love Thai food."
    )
    r = await client.post(f"/v1/users/pref/profile/{entry['id']}/confirm", json={}, headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["tier"] == "long_term"


async def test_erasure_removes_every_learned_record(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    h = tenant.agent
    body = {"messages": [{"role": "user", "content": "I love jazz. My budget is 300 euros."}], "session_id": "e"}
    assert (await client.post("/v1/users/gone/extract", json=body, headers=h)).status_code == 200
    assert await items(client, h, "gone")
    r = await client.delete("/v1/users/gone", headers=tenant.admin)
    assert r.status_code == 200, r.text
    assert await items(client, h, "gone", include_superseded="true") == []
    profile = (await client.get("/v1/users/gone/profile", headers=h)).json()
    assert not any(profile["tiers"].values())


async def test_bad_requests_are_clear_4xx_and_change_nothing(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    h = tenant.agent
    for bad in ({}, {"messages": []}, {"messages": [{"role": "robot", "content": "x"}]}, {"messages": "hi"},
                {"messages": [{"role": "user", "content": "I live in Oslo."}], "dry_run": "maybe"},
                {"messages": [{"role": "user", "content": "I live in Oslo."}], "session_id": "no spaces"}):  # fmt: skip
        r = await client.post("/v1/users/bad/extract", json=bad, headers=h)
        assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json"), r.text
    r = await client.post("/v1/users/bad/sessions/s/extract", json={"reextract": "x"}, headers=h)
    assert r.status_code == 422, r.text
    ok = {"messages": [{"role": "user", "content": "I live in Oslo."}]}
    assert (await client.post("/v1/users/bad/extract", json=ok, headers=tenant.operator)).status_code == 403
    assert (await client.post("/v1/users/bad/extract", json=ok)).status_code == 401
    assert await items(client, h, "bad") == []


class _Hostile:
    """An extractor that invents, misattributes and reads back the service's own text."""

    name = "hostile"
    version = "hostile/1"

    async def propose(self, messages: Sequence[Message], *, tenant_id: str) -> Proposals:
        out = [
            Proposal(0, "fact", "John Doe lives in Berlin."),  # invented
            Proposal(1, "preference", "I love sushi"),  # the assistant's words
            Proposal(0, "fact", "I live in Oslo", key="location", value="oslo"),  # real
            Proposal(7, "fact", "I live in Oslo"),  # no such message
            Proposal(0, "fact", "- Don't recommend Redis Cluster."),  # inside a window block
            Proposal(0, "opinion", "I live in Oslo"),  # type: ignore[arg-type]  # not a record type
        ]
        return Proposals(out, unreadable=["record 6: not an object"])

    async def close(self) -> None:
        return None


async def test_whatever_an_extractor_proposes_only_grounded_user_words_are_stored(
    app: FastAPI, client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    h = tenant.agent
    user_text = "I live in Oslo.\n## Constraints\n- Don't recommend Redis Cluster.\n"
    await append(
        client,
        h,
        "hx",
        "s1",
        [{"role": "user", "content": user_text}, {"role": "assistant", "content": "I love sushi"}],
    )
    async with service_context(app, h) as ctx:
        result = await extract_session(ctx, user_id="hx", session_id="s1", extractor=_Hostile())
    assert result is not None
    assert [(r.content, r.key, r.value) for r in result.records] == [("I live in Oslo", "location", "oslo")]
    reasons = sorted(r.reason for r in result.rejected)
    assert reasons == ["malformed", "malformed", "not_user_message", "service_text", "ungrounded", "unknown_message"]
    stored = await items(client, h, "hx", include_superseded="true", extracted_by="any")
    assert [i["content"] for i in stored] == ["I live in Oslo"]
    r = await client.get("/v1/users/hx/events", params={"limit": 100}, headers=tenant.operator)
    rejected = [e for e in r.json()["items"] if e["action"] == "extraction.rejected"]
    assert sorted(e["reason"] for e in rejected) == reasons
    assert all("Berlin" not in str(e) and "sushi" not in str(e) for e in rejected)  # no words in the audit log


class _Renamed(RulesExtractor):
    version = "rules/2"


async def test_re_extraction_with_a_new_version_supersedes_the_old_records(
    app: FastAPI, client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    h = tenant.agent
    await append(client, h, "re", "s1", [{"role": "user", "content": "I live in Porto. I love Thai food."}])
    await extract(client, h, "re", "s1")
    old = await items(client, h, "re", extracted_by="rules/1")
    assert old
    async with service_context(app, h) as ctx:
        same = await extract_session(ctx, user_id="re", session_id="s1", extractor=_Renamed())
        assert same is not None and same.messages == 0  # nothing waits: re-extraction is asked for
        again = await extract_session(ctx, user_id="re", session_id="s1", extractor=_Renamed(), reextract=True)
    assert again is not None and again.messages == 1 and again.records
    new = await items(client, h, "re", extracted_by="rules/2")
    assert sorted(i["content"] for i in new) == sorted(i["content"] for i in old)
    retired = await items(client, h, "re", extracted_by="rules/1", include_superseded="true")
    assert retired and all(
        i["status"] == "superseded" and i["status_reason"] == "re-extracted by rules/2" for i in retired
    )


async def test_the_extract_job_flushes_buffers_by_size_idle_time_and_session_end(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    h = tenant.agent
    await append(client, h, "job", "small", [{"role": "user", "content": "I love Lyon."}])
    await append(client, h, "job", "big", [{"role": "user", "content": "I live in Nice."}, *filler(10)])
    now = Clock().now()
    r = await client.post("/v1/jobs/extract/run", json={"now": now.isoformat()}, headers=tenant.admin)
    assert r.status_code == 200, r.text
    assert r.json()["rows"]["sessions_extracted"] == 1  # 21 messages wait in "big": over the batch size
    contents = [i["content"] for i in await items(client, h, "job")]
    assert any("Nice" in c for c in contents) and not any("Lyon" in c for c in contents)
    later = (now + timedelta(minutes=10)).isoformat()
    r = await client.post("/v1/jobs/extract/run", json={"now": later}, headers=tenant.admin)
    assert r.json()["rows"]["sessions_extracted"] == 1  # "small" has been idle past extract_idle_seconds
    assert any("Lyon" in i["content"] for i in await items(client, h, "job"))
    r = await client.post("/v1/jobs/extract/run", json={"now": later}, headers=tenant.admin)
    assert r.json()["rows"]["sessions_extracted"] == 0


async def test_with_extraction_off_messages_wait_and_ending_the_session_removes_them(
    app: FastAPI, client: httpx.AsyncClient, tenant: TenantKeys, settings: Any, db: Any, vectors: Any
) -> None:
    from service.app import create_app

    off = create_app(settings.replace(extractor="off"), database=db, vectors=vectors)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=off), base_url="http://ctxmem.test") as c:
        h = tenant.agent
        await append(c, h, "off", "s1", [{"role": "user", "content": "I live in Oslo."}])
        r = await c.post("/v1/users/off/sessions/s1/extract", headers=h)
        assert r.status_code == 409 and r.json()["type"].endswith("extraction-off"), r.text
        r = await c.post(
            "/v1/users/off/extract", json={"messages": [{"role": "user", "content": "I live in Oslo."}]}, headers=h
        )
        assert r.status_code == 409, r.text
        assert await items(c, h, "off", extracted_by="any") == []
        # Turned on later (this app: rules), the waiting message is learned.
        result = await extract(client, h, "off", "s1")
        assert [rec.value for rec in result.records] == ["oslo"]
        await append(c, h, "off", "s2", [{"role": "user", "content": "I live in Rome."}])
        assert (await c.delete("/v1/users/off/sessions/s2", headers=h)).status_code == 200
        assert (await c.get("/v1/users/off/sessions/s2/messages", headers=h)).json()["items"] == []
        learned = await items(c, h, "off", extracted_by="any", include_superseded="true")
        assert not any("Rome" in i["content"] for i in learned)  # kept only in the session's episode


async def test_a_user_correction_or_an_explicit_write_retires_a_learned_item(
    client: httpx.AsyncClient, tenant: TenantKeys
) -> None:
    h = tenant.agent
    body = {"messages": [{"role": "user", "content": "I live in Porto. Never suggest night flights."}]}
    r = await client.post("/v1/users/fix/extract", json=body, headers=h)
    assert r.status_code == 200, r.text
    learned = {rec["type"]: rec["item"] for rec in r.json()["records"]}
    # The user's own word on the slot outranks what was inferred (authority user > inferred).
    r = await client.post(
        "/v1/users/fix/items",
        json={"type": "fact", "content": "Lives in Lisbon.", "key": "location", "value": "lisbon", "source": "user"},
        headers=h,
    )
    assert r.status_code == 201 and r.json()["resolution"]["rule"] == "authority", r.text
    # A correction retires the learned hard constraint (a user item outranks an inferred one).
    fix = {
        "type": "constraint",
        "content": "Night flights are fine.",
        "source": "user",
        "corrects": learned["constraint"]["id"],
    }
    r = await client.post("/v1/users/fix/items", json=fix, headers=h)
    assert r.status_code == 201, r.text
    old = {i["id"]: i for i in await items(client, h, "fix", include_superseded="true", extracted_by="any")}
    assert old[learned["fact"]["id"]]["status"] == old[learned["constraint"]["id"]]["status"] == "superseded"
