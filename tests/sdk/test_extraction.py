"""Extraction through the SDK, against real ``ctxmem serve`` processes: a dry run says what would be learned and
writes nothing; a stored conversation's extraction writes the user's hard constraint with its evidence, which a
later window holds whatever the question; ``extracted_by`` lists what was learned; profile observations carry
their evidence; and the extraction problems (off, an extractor outage, a spent token cap) arrive as typed errors,
retried or not as the README says."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime

import pytest
from ctxmem_client import (
    AsyncClient,
    Client,
    Conflict,
    ExtractionCapReached,
    ExtractionOff,
    ExtractorUnavailable,
    RateLimited,
    RetryPolicy,
    Unavailable,
)
from ctxmem_client.models import ExtractionResult

from tests.sdk.conftest import UNLIMITED, Keys, Live, live_server
from tests.service.extraction.llm_standin import LlmStandIn, serve

REDIS = "We have a small ops team, so don't recommend Redis Cluster."
MODEL = "standin-1"


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:10]}"


def test_a_dry_run_says_what_would_be_learned_and_writes_nothing(live: Live, keys: Keys) -> None:
    messages = [
        {"role": "system", "content": "The user hates cats."},
        {"role": "user", "content": REDIS},
        {"role": "assistant", "content": "I love Redis Cluster, and I live in Paris."},
    ]
    with Client(live.url, keys.agent) as client:
        me = client.user(_user())
        found = me.extract(messages, session_id="s1", dry_run=True)
        assert isinstance(found, ExtractionResult)
        assert found.dry_run and found.extracted_by == "rules/1" and found.messages == 3 and found.waiting == 0
        (record,) = [r for r in found.records if r.type == "constraint"]
        assert record.hard and record.outcome == "would_write" and record.item is None
        assert record.content in REDIS and "Redis Cluster" in record.content
        evidence = record.evidence
        assert (evidence.message_index, evidence.message_id, evidence.session_id) == (1, None, "s1")
        assert evidence.quote == record.content and REDIS[evidence.span[0] : evidence.span[1]] == record.content
        # nothing from the system's or the assistant's words, and nothing stored
        assert all(r.evidence.message_index == 1 for r in found.records)
        assert not any("Paris" in r.content or "cats" in r.content for r in found.records)
        assert me.list_items(include_superseded=True).items == []
        assert all(not entries for by_domain in me.profile().tiers.values() for entries in by_domain.values())


def test_a_stored_conversation_yields_a_hard_constraint_with_evidence(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.agent) as client:
        me = client.user(_user())
        written = me.add_item(type="fact", content="The staging cluster runs in eu-west-1.", source="tool")
        turns = [
            {"role": "user", "content": REDIS},
            {"role": "assistant", "content": "Understood."},
            {"role": "user", "content": "What should step 1 of the migration do?"},
            {"role": "assistant", "content": "Copy the orders table and check its row counts."},
        ]
        me.append_messages("s1", turns)
        found = me.extract_session("s1")
        assert (found.extracted_by, found.dry_run, found.messages, found.waiting) == ("rules/1", False, 4, 0)
        (record,) = [r for r in found.records if r.type == "constraint"]
        assert record.hard and record.outcome == "new" and record.item is not None
        assert record.item.extracted_by == "rules/1" and record.item.authority == "inferred"

        # the learned item, as listings show it: its evidence points into the stored message
        (item,) = [i for i in me.list_items(extracted_by="any").items if i.type == "constraint"]
        assert item.id == record.item.id and item.hard and item.scope == "user" and item.content == record.content
        assert item.evidence is not None
        assert item.evidence.quote == item.content and item.evidence.session_id == "s1"
        assert item.evidence.message_id is not None and item.evidence.message_index is None
        stored = {m.id: m for m in me.iter_messages("s1")}
        assert stored[item.evidence.message_id].seq == 1 and stored[item.evidence.message_id].message == turns[0]
        start, end = item.evidence.span
        assert REDIS[start:end] == item.content

        # the filter: by extractor, by version, none (written by clients only)
        assert item.id in [i.id for i in me.list_items(extracted_by="rules").items]
        assert item.id in [i.id for i in me.list_items(extracted_by="rules/1").items]
        assert me.list_items(extracted_by="llm").items == []
        assert [i.id for i in me.list_items(extracted_by="none").items] == [written.id]
        assert written.extracted_by is None and written.evidence is None

        # a later conversation, a question that shares none of its words: the constraint is in the window
        window = me.window(
            input="Which cache should we put in front of the catalogue?", max_tokens=400, session_id="s2"
        )
        assert item.content in window.text

        # each message is extracted once per version: again, nothing waits
        again = me.extract_session("s1")
        assert (again.messages, again.records, again.waiting) == (0, [], 0)
        assert me.extract_session("s1", reextract=True).messages == 0  # no older version extracted them


def test_preferences_feed_the_profile_with_evidence(live: Live, keys: Keys) -> None:
    user = _user()
    with Client(live.url, keys.agent) as client, Client(live.url, keys.operator) as operator:
        found = client.user(user).extract([{"role": "user", "content": "I love Thai food."}], session_id="p1")
        (entry,) = found.profile
        assert (entry.dimension, entry.polarity, entry.tier) == ("preference", "like", "current")
        (observation,) = operator.user(user).profile_entry(entry.id).observations
        assert observation.explicit and observation.extracted_by == "rules/1"
        assert observation.evidence is not None and observation.evidence.quote in "I love Thai food."
        assert observation.evidence.message_index == 0 and observation.session_id == "p1"
        assert client.user(user).confirm(entry.id).tier == "long_term"


def test_the_extract_job_runs_on_demand(live: Live, keys: Keys) -> None:
    with Client(live.url, keys.admin) as admin:
        run = admin.run_job("extract", now=datetime(2027, 6, 1, tzinfo=UTC))
        assert (run.name, run.status) == ("extract", "succeeded")
        assert run.id in [r.id for r in admin.job_runs(name="extract", limit=5).items]


async def test_the_async_client_extracts_too(live: Live, keys: Keys) -> None:
    async with AsyncClient(live.url, keys.agent) as client:
        me = client.user(_user())
        dry = await me.extract([{"role": "user", "content": "I live in Porto."}], dry_run=True)
        assert [(r.type, r.key, r.outcome) for r in dry.records] == [("fact", "location", "would_write")]
        assert (await me.list_items()).items == []
        await me.append_messages("s1", [{"role": "user", "content": "I live in Porto."}])
        found = await me.extract_session("s1")
        (record,) = found.records
        assert record.item is not None and record.item.value == dry.records[0].value
        assert [i.id for i in (await me.list_items(extracted_by="any")).items] == [record.item.id]


def test_extraction_off_is_a_conflict_and_not_retried(limited: Live, limited_keys: Keys) -> None:
    waits: list[float] = []
    with Client(limited.url, limited_keys.agent, sleep=waits.append) as client, pytest.raises(ExtractionOff) as caught:
        client.user(_user()).extract([{"role": "user", "content": REDIS}], dry_run=True)
    assert (
        isinstance(caught.value, Conflict) and caught.value.status == 409 and "CTXMEM_EXTRACTOR" in caught.value.detail
    )
    assert waits == []


# The llm extractor against a chat-completions stand-in: its outages and its token cap.


@pytest.fixture(scope="module")
def standin() -> Iterator[tuple[LlmStandIn, str]]:
    found = LlmStandIn()
    with serve(found) as url:
        yield found, url


@pytest.fixture(scope="module")
async def llm_live(
    server_url: str, tmp_path_factory: pytest.TempPathFactory, standin: tuple[LlmStandIn, str]
) -> AsyncIterator[Live]:
    env = {
        **UNLIMITED,
        "CTXMEM_VECTOR_BACKEND": "off",
        "CTXMEM_EXTRACTOR": "llm",
        "CTXMEM_EXTRACTOR_URL": standin[1],
        "CTXMEM_EXTRACTOR_MODEL": MODEL,
        "CTXMEM_EXTRACTOR_MAX_RETRIES": "0",
        "CTXMEM_EXTRACTOR_DAILY_TOKEN_CAP": "400",
    }
    async with live_server(server_url, tmp_path_factory.mktemp("sdk-llm"), env) as found:
        yield found


@pytest.fixture
def model(standin: tuple[LlmStandIn, str]) -> Iterator[LlmStandIn]:
    standin[0].reset()
    yield standin[0]
    standin[0].reset()
    standin[0].prompt_tokens, standin[0].completion_tokens = 120, 30


TEA = [{"role": "user", "content": "Hi! I like green tea. I live in Lisbon."}]


async def test_an_extractor_outage_is_retried_with_the_same_key_and_then_extracts(
    llm_live: Live, model: LlmStandIn
) -> None:
    keys = await llm_live.tenant()
    model.script = ["500"]  # the first attempt finds the provider down, the retry finds it back
    waits: list[float] = []
    with Client(llm_live.url, keys.agent, sleep=waits.append, retry=RetryPolicy(max_retries=1)) as client:
        me = client.user(_user())
        found = me.extract(TEA, session_id="s1")
        assert found.extracted_by == f"llm/{MODEL}/p1"
        assert {r.content for r in found.records} == {"I like green tea", "I live in Lisbon"}
        assert len(waits) == 1 and 60 <= waits[0] <= 61  # the server's Retry-After
        assert len(model.requests) == 2
        assert len(me.list_items(extracted_by="llm").items) == 2


async def test_an_outage_that_outlasts_the_retries_raises_extractor_unavailable(
    llm_live: Live, model: LlmStandIn
) -> None:
    keys = await llm_live.tenant()
    model.mode = "500"
    with Client(llm_live.url, keys.agent, max_retries=0) as client:
        me = client.user(_user())
        me.append_messages("s1", TEA)
        with pytest.raises(ExtractorUnavailable) as caught:  # messages in the body cannot wait
            me.extract(TEA)
        err = caught.value
        assert isinstance(err, Unavailable) and err.status == 503 and err.retry_after is not None
        waited = me.extract_session("s1")  # a stored session's messages wait, and the answer says why
        assert waited.messages == 0 and waited.waiting == 1 and waited.unavailable
        assert me.list_items(extracted_by="any").items == []  # nothing learned, nothing lost:
        assert len(me.list_messages("s1").items) == 1
        model.mode = "honest"
        assert me.extract_session("s1").waiting == 0  # the messages waited


async def test_a_spent_token_cap_is_raised_at_once(llm_live: Live, model: LlmStandIn) -> None:
    keys = await llm_live.tenant()
    model.prompt_tokens, model.completion_tokens = 300, 150  # one call spends more than the cap of 400
    waits: list[float] = []
    async with AsyncClient(llm_live.url, keys.agent, sleep=_record(waits)) as client:
        me = client.user(_user())
        assert (await me.extract(TEA, dry_run=True)).records
        with pytest.raises(ExtractionCapReached) as caught:
            await me.extract(TEA, dry_run=True)
    err = caught.value
    assert isinstance(err, RateLimited) and err.status == 429
    assert err.retry_after is not None and 0 < err.retry_after <= 86_400
    assert "CTXMEM_EXTRACTOR_DAILY_TOKEN_CAP" in err.detail
    if err.retry_after > 60:  # until 00:00 UTC: longer than the policy waits, so not waited
        assert waits == []


def _record(waits: list[float]) -> Callable[[float], Awaitable[None]]:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return sleep
