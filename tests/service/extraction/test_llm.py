"""service/extraction/llm.py through a real HTTP stand-in of an OpenAI-compatible provider: what it sends,
how records become proposals (invented and misattributed ones included, for the service's checks to
reject), and how it survives a provider that is broken, slow, rate-limiting or refusing.

No wall clock: the backoff's sleep is injected and recorded; only the hanging provider costs real time
(a 0.3 s timeout per call)."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from scoring.extraction import Grounded, Message, ProfileHint, Proposal, Rejected, check
from service.extraction.base import Extractor, ExtractorUnavailable, Usage
from service.extraction.llm import (
    PROMPT_VERSION,
    RESPONSE_SCHEMA,
    SLOT_KEYS,
    SYSTEM_PROMPT,
    LlmExtractor,
    render,
    slug,
    to_proposal,
)
from service.extraction.metrics import ExtractionMetrics
from service.settings import ExtractionSettings
from tests.service.extraction.llm_standin import LlmStandIn, serve

DOCS = Path(__file__).resolve().parents[3] / "docs"
MODEL = "standin-1"
PROMPT, COMPLETION = 120, 30  # what the stand-in reports for every answer

CHAT = [
    Message(0, "system", "You are a travel assistant."),
    Message(1, "user", "Hi! I like green tea. I live in Lisbon and plan a trip."),
    Message(2, "assistant", "You live in Porto. Shall I look for flights?"),
    Message(3, "user", "Yes please, and I like window seats"),
]


@pytest.fixture(scope="module")
def running() -> Iterator[tuple[LlmStandIn, str]]:
    standin = LlmStandIn()
    with serve(standin) as url:
        yield standin, url


@pytest.fixture
def standin(running: tuple[LlmStandIn, str]) -> LlmStandIn:
    running[0].reset()
    return running[0]


class Sleeps:
    """The injected sleep: records what the extractor would have waited, and waits for nothing."""

    def __init__(self) -> None:
        self.waited: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waited.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def make(running: tuple[LlmStandIn, str], sleeps: Sleeps) -> AsyncIterator[Callable[..., LlmExtractor]]:
    """A factory of extractors on the stand-in (settings overridable), all closed after the test."""
    made: list[LlmExtractor] = []

    def factory(*, metrics: ExtractionMetrics | None = None, **overrides: Any) -> LlmExtractor:
        settings = ExtractionSettings(
            **{"extractor": "llm", "url": running[1], "model": MODEL, "api_key": "sk-test", **overrides}
        )
        extractor = LlmExtractor(settings, sleep=sleeps, random=lambda: 1.0, metrics=metrics)
        made.append(extractor)
        return extractor

    yield factory
    for extractor in made:
        await extractor.close()


def _calls(registry: CollectorRegistry) -> dict[str, float | None]:
    return {
        outcome: registry.get_sample_value("ctxmem_extraction_llm_calls_total", {"outcome": outcome})
        for outcome in ("ok", "retried", "failed")
    }


# What is sent


async def test_is_an_extractor_versioned_by_model_and_prompt(make: Callable[..., LlmExtractor]) -> None:
    extractor: Extractor = make()
    assert (extractor.name, extractor.version) == ("llm", f"llm/{MODEL}/{PROMPT_VERSION}")
    assert PROMPT_VERSION == "p1"


async def test_the_request_carries_prompt_schema_roles_auth_and_temperature_zero(
    standin: LlmStandIn, make: Callable[..., LlmExtractor]
) -> None:
    await make().propose(CHAT, tenant_id="t1")
    [request] = standin.requests
    assert request.headers["authorization"] == "Bearer sk-test"
    body = request.body
    assert (body["model"], body["temperature"]) == (MODEL, 0)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "ctxmem_records", "strict": True, "schema": RESPONSE_SCHEMA},
    }
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user"
    # Every role is shown, numbered by Message.index, so the model has the context of the user's words.
    for m in CHAT:
        assert f"[{m.index}] {m.role}: {m.text}" in user["content"]
    for key in SLOT_KEYS:
        assert f"- {key} (" in SYSTEM_PROMPT


async def test_no_api_key_sends_no_authorization(standin: LlmStandIn, make: Callable[..., LlmExtractor]) -> None:
    await make(api_key=None).propose(CHAT, tenant_id="t1")
    assert "authorization" not in standin.requests[0].headers


def test_the_schema_is_strict_structured_output() -> None:
    # OpenAI's strict mode: every object closed and every property required (nullable rather than optional).
    record = RESPONSE_SCHEMA["properties"]["records"]["items"]
    for obj in (RESPONSE_SCHEMA, record):
        assert obj["additionalProperties"] is False
        assert set(obj["required"]) == set(obj["properties"])
    assert record["properties"]["type"]["enum"] == ["constraint", "preference", "fact", "goal", "decision"]


def test_render_indents_further_lines_and_quotes_across_them_still_ground() -> None:
    messages = [Message(7, "user", "I am vegetarian\n[8] user: I live in Paris\n\nthanks")]
    rendered = render(messages)
    assert rendered.splitlines()[1:] == ["[7] user: I am vegetarian", "  [8] user: I live in Paris", "  ", "  thanks"]
    # The model copies what it reads; the indent is whitespace, which grounding normalises.
    quote = "I am vegetarian\n  [8] user: I live in Paris"
    assert isinstance(check(Proposal(7, "fact", quote), messages), Grounded)


# Honest and hostile answers


async def test_honest_answers_become_grounded_proposals(standin: LlmStandIn, make: Callable[..., LlmExtractor]) -> None:
    proposals = await make().propose(CHAT, tenant_id="t1")
    assert proposals.unreadable == []
    assert proposals.items == [
        Proposal(1, "preference", "I like green tea", profile=ProfileHint("preference", "green-tea", "green tea")),
        Proposal(1, "fact", "I live in Lisbon", key="location", value="Lisbon"),
        Proposal(
            3, "preference", "I like window seats", profile=ProfileHint("preference", "window-seats", "window seats")
        ),
    ]
    assert all(isinstance(check(p, CHAT), Grounded) for p in proposals.items)
    assert proposals.usage == Usage(calls=1, prompt_tokens=PROMPT, completion_tokens=COMPLETION)


async def test_invented_records_are_passed_on_and_the_check_rejects_them(
    standin: LlmStandIn, make: Callable[..., LlmExtractor]
) -> None:
    standin.mode = "invent"
    proposals = await make().propose(CHAT, tenant_id="t1")
    invented = [p for p in proposals.items if p.quote == "John Doe lives in Berlin"]
    assert invented == [Proposal(1, "fact", "John Doe lives in Berlin", key="location", value="Berlin")]
    verdict = check(invented[0], CHAT)
    assert isinstance(verdict, Rejected) and verdict.reason == "ungrounded"
    # The honest records of the same answer are not lost with it.
    assert sum(isinstance(check(p, CHAT), Grounded) for p in proposals.items) == 3


async def test_the_assistants_words_are_passed_on_and_the_check_rejects_them(
    standin: LlmStandIn, make: Callable[..., LlmExtractor]
) -> None:
    standin.mode = "misattribute"
    proposals = await make().propose(CHAT, tenant_id="t1")
    assert [(p.message_index, p.quote) for p in proposals.items] == [(2, "You live in Porto"), (1, "You live in Porto")]
    verdicts = [check(p, CHAT) for p in proposals.items]
    assert [v.reason for v in verdicts if isinstance(v, Rejected)] == ["not_user_message", "ungrounded"]


async def test_records_of_the_wrong_shape_are_unreadable_and_the_rest_kept(
    standin: LlmStandIn, make: Callable[..., LlmExtractor]
) -> None:
    standin.mode = "bad_records"
    proposals = await make().propose(CHAT, tenant_id="t1")
    assert len(standin.requests) == 1  # a readable answer with bad records is not tried again
    assert [p.quote for p in proposals.items] == ["I like green tea"]
    assert len(proposals.unreadable) == 6
    for reason, expected in zip(
        proposals.unreadable,
        [
            "not an object",
            "'message' is not an integer",
            "'type' is not one of",
            "'quote' is not a string",
            "'key' is not null nor one of",
            "'value' is not a string",
        ],
        strict=True,
    ):
        assert reason.startswith("messages 0..3, record ")
        assert expected in reason


async def test_a_refusal_is_unreadable_not_retried(standin: LlmStandIn, make: Callable[..., LlmExtractor]) -> None:
    standin.mode = "refuse"
    proposals = await make().propose(CHAT, tenant_id="t1")
    assert len(standin.requests) == 1
    assert proposals.items == []
    assert proposals.unreadable == ["messages 0..3: the model refused: I'm sorry, I can't help with that."]
    assert proposals.usage.prompt_tokens == PROMPT


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"message": True, "type": "fact", "quote": "x"}, "'message' is not an integer"),
        ({"message": 1.0, "type": "fact", "quote": "x"}, "'message' is not an integer"),
        ({"message": 1, "type": None, "quote": "x"}, "'type' is not one of"),
        ({"message": 1, "type": "fact", "quote": "x", "hard": "yes"}, "'hard' is not a boolean"),
        ({"message": 1, "type": "preference", "quote": "x", "polarity": "love"}, "'polarity' is not"),
        ({"message": 1, "type": "goal", "quote": "x", "topic": 5}, "'topic' is not a string"),
        ({"message": 1, "type": "fact", "quote": "x", "value": [1]}, "'value' is not"),
    ],
)
def test_field_types_are_checked(record: dict[str, Any], problem: str) -> None:
    reason = to_proposal(record)
    assert isinstance(reason, str) and problem in reason


def test_well_typed_records_are_not_fixed_but_left_to_the_check() -> None:
    # A hard fact, an empty quote, a message outside the batch: schema-shaped, so proposals; check refuses them.
    for record, reason in [
        ({"message": 1, "type": "fact", "quote": "I live in Lisbon", "hard": True}, "malformed"),
        ({"message": 1, "type": "fact", "quote": ""}, "malformed"),
        ({"message": 99, "type": "fact", "quote": "I live in Lisbon"}, "unknown_message"),
    ]:
        proposal = to_proposal(record)
        assert isinstance(proposal, Proposal)
        verdict = check(proposal, CHAT)
        assert isinstance(verdict, Rejected) and verdict.reason == reason


def test_preferences_and_goals_observe_the_profile() -> None:
    dislike = to_proposal({"message": 1, "type": "preference", "quote": "I hate red-eye flights", "polarity": "dislike",
                           "topic": "Red-eye flights"})  # fmt: skip
    assert isinstance(dislike, Proposal)
    assert dislike.profile == ProfileHint("preference", "red-eye-flights", "Red-eye flights", "dislike")
    goal = to_proposal({"message": 1, "type": "goal", "quote": "I want to learn Rust", "polarity": "dislike"})
    assert isinstance(goal, Proposal)
    assert goal.profile == ProfileHint("goal", "i-want-to-learn-rust", "I want to learn Rust", "like")
    fact = to_proposal({"message": 1, "type": "fact", "quote": "I am a nurse", "topic": "job"})
    assert isinstance(fact, Proposal) and fact.profile is None


def test_slug_folds_accents_and_hashes_words_with_no_ascii_form() -> None:
    assert slug("Café au lait!") == "cafe-au-lait"
    chinese = slug("绿茶")
    assert chinese.startswith("t-") and chinese == slug(" 绿茶 ") and chinese != slug("红茶")


# Chunking and usage


async def test_chunks_of_messages_per_call_with_their_own_numbers(
    standin: LlmStandIn, make: Callable[..., LlmExtractor]
) -> None:
    messages = [Message(10 + i, "user" if i % 2 == 0 else "assistant", f"I like thing {i}") for i in range(5)]
    proposals = await make(llm_messages_per_call=2).propose(messages, tenant_id="t1")
    shown = [
        [line.split("]")[0] for line in r.body["messages"][1]["content"].splitlines()[1:]] for r in standin.requests
    ]
    assert shown == [["[10", "[11"], ["[12", "[13"], ["[14"]]
    assert [(p.message_index, p.quote) for p in proposals.items] == [
        (10, "I like thing 0"),
        (12, "I like thing 2"),
        (14, "I like thing 4"),
    ]
    assert proposals.usage == Usage(calls=3, prompt_tokens=3 * PROMPT, completion_tokens=3 * COMPLETION)


async def test_a_chunk_without_user_messages_costs_no_call(
    standin: LlmStandIn, make: Callable[..., LlmExtractor]
) -> None:
    roles = ["user", "user", "assistant", "tool", "user"]
    messages = [Message(i, role, f"I like thing {i}") for i, role in enumerate(roles)]
    proposals = await make(llm_messages_per_call=2).propose(messages, tenant_id="t1")
    assert len(standin.requests) == 2
    assert proposals.usage.calls == 2
    assert await make().propose([], tenant_id="t1") == type(proposals)(items=[])


# A provider that fails


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        ("bad_json", "the answer is not valid JSON"),
        ("wrong_shape", 'the answer is not {"records": [...]}'),
        ("not_json_body", "the answer is not JSON"),
    ],
)
async def test_malformed_answers_are_retried_then_unavailable_with_their_usage(
    standin: LlmStandIn, make: Callable[..., LlmExtractor], sleeps: Sleeps, mode: str, problem: str
) -> None:
    standin.mode = mode
    registry = CollectorRegistry()
    with pytest.raises(ExtractorUnavailable) as caught:
        await make(max_retries=2, metrics=ExtractionMetrics(registry)).propose(CHAT, tenant_id="t1")
    assert len(standin.requests) == 3
    message = str(caught.value)
    assert problem in message and "gave up after 3 attempts" in message
    assert f"/v1/chat/completions (model '{MODEL}', messages 0..3)" in message
    reported = 0 if mode == "not_json_body" else 3  # the answers that were JSON reported what they cost
    assert caught.value.usage == Usage(
        calls=3, prompt_tokens=reported * PROMPT, completion_tokens=reported * COMPLETION
    )
    assert sleeps.waited == [1.0, 2.0]  # scoring.backoff's doubling; the injected random gives its upper end
    assert _calls(registry) == {"ok": 0.0, "retried": 2.0, "failed": 1.0}


async def test_500s_then_an_answer_succeeds_after_retries(
    standin: LlmStandIn, make: Callable[..., LlmExtractor], sleeps: Sleeps
) -> None:
    standin.script = ["500", "500"]
    registry = CollectorRegistry()
    proposals = await make(max_retries=3, metrics=ExtractionMetrics(registry)).propose(CHAT, tenant_id="t1")
    assert len(standin.requests) == 3
    assert len(proposals.items) == 3
    assert proposals.usage == Usage(calls=3, prompt_tokens=PROMPT, completion_tokens=COMPLETION)
    assert sleeps.waited == [1.0, 2.0]
    assert _calls(registry) == {"ok": 1.0, "retried": 2.0, "failed": 0.0}


async def test_backoff_has_jitter(standin: LlmStandIn, running: tuple[LlmStandIn, str], sleeps: Sleeps) -> None:
    standin.script = ["500"]
    settings = ExtractionSettings(extractor="llm", url=running[1], model=MODEL)
    extractor = LlmExtractor(settings, sleep=sleeps, random=lambda: 0.0)
    try:
        await extractor.propose(CHAT, tenant_id="t1")
    finally:
        await extractor.close()
    assert sleeps.waited == [0.5]  # half the delay is certain, the other half random


async def test_429_honours_retry_after(standin: LlmStandIn, make: Callable[..., LlmExtractor], sleeps: Sleeps) -> None:
    standin.script = ["429"]
    standin.retry_after = "7"
    proposals = await make().propose(CHAT, tenant_id="t1")
    assert sleeps.waited == [7.0]
    assert len(proposals.items) == 3


async def test_a_retry_after_longer_than_a_batch_may_wait_leaves_it_waiting(
    standin: LlmStandIn, make: Callable[..., LlmExtractor], sleeps: Sleeps
) -> None:
    standin.mode = "429"
    standin.retry_after = "3600"
    with pytest.raises(
        ExtractorUnavailable, match=r"HTTP 429: .*asks to wait 3600s, more than the 60s a call may wait"
    ):
        await make().propose(CHAT, tenant_id="t1")
    assert len(standin.requests) == 1
    assert sleeps.waited == []


async def test_a_hanging_provider_times_out_and_is_unavailable(
    standin: LlmStandIn, make: Callable[..., LlmExtractor], sleeps: Sleeps
) -> None:
    standin.mode = "hang"
    with pytest.raises(ExtractorUnavailable, match=r"timed out after 0.3s .*gave up after 2 attempts") as caught:
        await make(timeout_seconds=0.3, max_retries=1).propose(CHAT, tenant_id="t1")
    assert len(standin.requests) == 2
    assert caught.value.usage == Usage(calls=2)


async def test_401_is_unavailable_at_once_with_the_providers_message(
    standin: LlmStandIn, make: Callable[..., LlmExtractor], sleeps: Sleeps
) -> None:
    standin.mode = "401"
    registry = CollectorRegistry()
    with pytest.raises(ExtractorUnavailable, match=r"HTTP 401: .*Incorrect API key provided") as caught:
        await make(max_retries=3, metrics=ExtractionMetrics(registry)).propose(CHAT, tenant_id="t1")
    assert len(standin.requests) == 1
    assert sleeps.waited == []
    assert caught.value.usage == Usage(calls=1)
    assert _calls(registry) == {"ok": 0.0, "retried": 0.0, "failed": 1.0}


async def test_a_later_chunks_failure_keeps_the_earlier_chunks_usage(
    standin: LlmStandIn, make: Callable[..., LlmExtractor]
) -> None:
    standin.script = ["honest", "401"]
    with pytest.raises(ExtractorUnavailable, match=r"messages 2\.\.3") as caught:
        await make(llm_messages_per_call=2).propose(CHAT, tenant_id="t1")
    assert caught.value.usage == Usage(calls=2, prompt_tokens=PROMPT, completion_tokens=COMPLETION)


async def test_an_unreachable_provider_is_retried_then_unavailable(sleeps: Sleeps) -> None:
    with socket.socket() as s:  # a port nothing listens on once the socket is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = ExtractionSettings(extractor="llm", url=f"http://127.0.0.1:{port}/v1", model=MODEL, max_retries=2)
    extractor = LlmExtractor(settings, sleep=sleeps, random=lambda: 1.0)
    try:
        with pytest.raises(ExtractorUnavailable, match=r"ConnectError.*gave up after 3 attempts") as caught:
            await extractor.propose(CHAT, tenant_id="t1")
    finally:
        await extractor.close()
    assert caught.value.usage == Usage(calls=3)
    assert sleeps.waited == [1.0, 2.0]


def test_an_endpoint_and_model_are_required() -> None:
    with pytest.raises(ValueError, match="CTXMEM_EXTRACTOR_URL"):
        LlmExtractor(ExtractionSettings(extractor="rules", model=MODEL))


# Metrics


def test_observe_batch_counts_records_rejections_reinforcements_and_tokens() -> None:
    registry = CollectorRegistry()
    metrics = ExtractionMetrics(registry)
    assert registry.get_sample_value("ctxmem_extraction_rejected_total", {"reason": "ungrounded"}) == 0.0
    metrics.observe_batch(
        written={"fact": 2, "preference": 1},
        rejected={"ungrounded": 1, "malformed": 3},
        reinforced=4,
        usage=Usage(calls=2, prompt_tokens=100, completion_tokens=20),
    )
    metrics.observe_waiting(usage=Usage(calls=1, prompt_tokens=50))
    value = registry.get_sample_value
    assert value("ctxmem_extraction_records_total", {"type": "fact"}) == 2.0
    assert value("ctxmem_extraction_records_total", {"type": "goal"}) == 0.0
    assert value("ctxmem_extraction_rejected_total", {"reason": "malformed"}) == 3.0
    assert value("ctxmem_extraction_reinforced_total") == 4.0
    assert value("ctxmem_extraction_batches_total", {"outcome": "extracted"}) == 1.0
    assert value("ctxmem_extraction_batches_total", {"outcome": "waiting"}) == 1.0
    assert value("ctxmem_extraction_llm_tokens_total", {"kind": "prompt"}) == 150.0
    assert value("ctxmem_extraction_llm_tokens_total", {"kind": "completion"}) == 20.0


def test_observe_batch_refuses_unknown_labels() -> None:
    metrics = ExtractionMetrics(CollectorRegistry())
    with pytest.raises(ValueError, match="unknown rejection reason"):
        metrics.observe_batch(written={}, rejected={"rude": 1}, reinforced=0, usage=Usage())
    with pytest.raises(ValueError, match="unknown record type"):
        metrics.observe_batch(written={"opinion": 1}, rejected={}, reinforced=0, usage=Usage())


def test_the_schema_is_json() -> None:
    # It is sent as it is: nothing in it (tuples, Final wrappers) may fail to serialise or change on the way.
    assert json.loads(json.dumps(RESPONSE_SCHEMA)) == RESPONSE_SCHEMA


# The prompt as documented


def _documented(marker: str) -> str:
    """The fenced block after ``<!-- marker -->`` in the docs (wherever the section now lives)."""
    found = [
        m[1]
        for page in DOCS.glob("*.md")
        for m in re.finditer(rf"<!-- {marker} -->\n```\w*\n(.*?)\n```", page.read_text(encoding="utf-8"), re.DOTALL)
    ]
    assert len(found) == 1, f"expected one {marker!r} block in docs/, found {len(found)}"
    return found[0]


def test_the_docs_hold_the_prompt_and_schema_verbatim() -> None:
    assert _documented(f"llm-prompt {PROMPT_VERSION}") == SYSTEM_PROMPT
    assert json.loads(_documented(f"llm-schema {PROMPT_VERSION}")) == RESPONSE_SCHEMA


def test_both_extractors_know_the_same_slots() -> None:
    """A statement fills the same slot whichever extractor reads it (docs/extraction.md)."""
    from scoring.extract_rules import SLOTS as RULES_SLOTS

    assert set(SLOT_KEYS) == set(RULES_SLOTS)
