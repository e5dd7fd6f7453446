"""The retry rules without a server: httpx's MockTransport answers, an injected sleep records the waits.
(The same rules against a real server: tests/sdk/test_retries.py in the ctxmem repository.)"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from ctxmem_client import (
    AsyncClient,
    Client,
    Conflict,
    ConnectionFailed,
    ExtractionCapReached,
    ExtractionOff,
    ExtractorUnavailable,
    NotFound,
    RateLimited,
    RetryPolicy,
    Unavailable,
)
from ctxmem_client._retry import parse_retry_after

PROBLEM = {"title": "t", "detail": "d"}


def _problem(status: int, slug: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"type": f"urn:ctxmem:problem:{slug}", "status": status, **PROBLEM}
    return httpx.Response(status, json=body, headers=headers)


ITEM = {
    "id": "0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00",
    "user_id": "alice",
    "type": "fact",
    "content": "x",
    "key": None,
    "value": None,
    "domain": None,
    "source": "model",
    "authority": "inferred",
    "scope": "user",
    "session_id": None,
    "task_id": None,
    "stage_id": None,
    "step_id": None,
    "hard": False,
    "kind": "fact",
    "status": "available",
    "status_reason": None,
    "confidence": 0.5,
    "observed_at": "2026-12-01T00:00:00Z",
    "created_at": "2026-12-01T00:00:00Z",
    "updated_at": "2026-12-01T00:00:00Z",
    "expires_at": None,
    "valid_to": None,
    "deleted_at": None,
    "superseded_by": None,
    "token_cost": 1,
    "token_model": "o200k_base",
    "variants": None,
    "related_ids": [],
    "support_count": 1,
    "corrects": None,
    "a_field_of_a_newer_server": True,
}


class Script:
    """Answers in turn, recording each request."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _client(script: Callable[[httpx.Request], httpx.Response], waits: list[float], **kw: object) -> Client:
    return Client("http://ctxmem.test", "k", transport=httpx.MockTransport(script), sleep=waits.append, **kw)  # type: ignore[arg-type]


def test_a_write_keeps_its_key_across_retries_and_a_new_call_gets_a_new_one() -> None:
    script = Script(
        httpx.ConnectError("refused"),
        _problem(503, "unavailable", {"Retry-After": "2"}),
        httpx.Response(201, json=ITEM),
        httpx.Response(201, json=ITEM),
    )
    waits: list[float] = []
    with _client(script, waits, retry=RetryPolicy(rng=random.Random(7))) as client:
        item = client.user("alice").add_item(type="fact", content="x")
        client.user("alice").add_item(type="fact", content="x")
    keys = [r.headers["Idempotency-Key"] for r in script.requests]
    assert keys[0] == keys[1] == keys[2] != keys[3]
    assert {r.content for r in script.requests} == {b'{"type":"fact","content":"x"}'}
    assert len(waits) == 2 and 0.25 <= waits[0] <= 0.5 and 2.0 <= waits[1] <= 2.5
    assert item.model_extra == {"a_field_of_a_newer_server": True}


def test_reads_carry_no_key_and_other_4xx_are_not_retried() -> None:
    script = Script(_problem(404, "item-not-found"))
    waits: list[float] = []
    with _client(script, waits) as client, pytest.raises(NotFound):
        client.user("alice").get_item("0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00")
    assert len(script.requests) == 1 and waits == []
    assert "Idempotency-Key" not in script.requests[0].headers
    assert script.requests[0].headers["Authorization"] == "Bearer k"


def test_in_progress_is_retried_other_conflicts_are_not() -> None:
    script = Script(_problem(409, "idempotency-in-progress"), httpx.Response(200, json=ITEM), _problem(409, "conflict"))
    waits: list[float] = []
    with _client(script, waits) as client:
        client.user("alice").delete_item(ITEM["id"])  # type: ignore[arg-type]
        with pytest.raises(Conflict):
            client.user("alice").delete_item(ITEM["id"])  # type: ignore[arg-type]
    assert len(waits) == 1 and len(script.requests) == 3


def test_retries_run_out() -> None:
    script = Script(*[_problem(503, "unavailable", {"Retry-After": "1"})] * 3)
    waits: list[float] = []
    with _client(script, waits, max_retries=2) as client, pytest.raises(Unavailable) as caught:
        client.user("alice").list_items()
    assert len(script.requests) == 3 and len(waits) == 2 and caught.value.retry_after == 1.0


def test_not_ready_is_an_answer() -> None:
    script = Script(httpx.Response(503, json={"status": "not-ready", "checks": {"database": {"ok": False}}}))
    with _client(script, []) as client:
        assert not client.ready().ready
    assert len(script.requests) == 1


def test_the_async_client_follows_the_same_rules() -> None:
    script = Script(
        httpx.ReadTimeout("slow"), _problem(429, "rate-limited", {"Retry-After": "0"}), httpx.Response(201, json=ITEM)
    )
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def main() -> None:
        transport = httpx.MockTransport(script)
        async with AsyncClient("http://ctxmem.test", "k", transport=transport, sleep=sleep) as client:
            await client.user("alice").add_item(type="fact", content="x")

    asyncio.run(main())
    assert len({r.headers["Idempotency-Key"] for r in script.requests}) == 1 and len(waits) == 2


def test_backoff_doubles_up_to_its_cap_with_equal_jitter() -> None:
    policy = RetryPolicy(max_retries=6, backoff_base=0.5, backoff_max=4.0, rng=random.Random(1))
    for attempt, step in enumerate([0.5, 1.0, 2.0, 4.0, 4.0, 4.0]):
        delay = policy.delay(attempt)
        assert delay is not None and step / 2 <= delay <= step
    assert policy.delay(6) is None
    assert policy.delay(0, retry_after=120.0) is None  # longer than max_retry_after (60 s): not waited


def test_retry_after_seconds_or_http_date() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    later = (now + timedelta(seconds=30)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(later, now=now.timestamp()) == 30.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_configuration_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXMEM_URL", "http://memory.internal:9000/")
    monkeypatch.setenv("CTXMEM_API_KEY", "cmk_env")
    with Client() as client:
        assert client.config.base_url == "http://memory.internal:9000"
        assert client.config.headers()["Authorization"] == "Bearer cmk_env"
    with Client("http://other", api_key="cmk_arg") as client:
        assert client.config.api_key == "cmk_arg" and client.config.base_url == "http://other"


def test_a_job_run_is_resent_only_when_it_cannot_have_arrived() -> None:
    """The jobs route takes no Idempotency-Key: a lost answer is not retried, a refused connection is."""
    run = {
        "id": "0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00",
        "name": "decay",
        "tenant_id": "t",
        "trigger": "api",
        "tick": None,
        "as_of": "2026-12-01T00:00:00Z",
        "started_at": "2026-12-01T00:00:00Z",
        "finished_at": "2026-12-01T00:00:01Z",
        "status": "succeeded",
        "rows": {},
        "error": None,
    }
    script = Script(httpx.ConnectError("refused"), httpx.Response(200, json=run), httpx.ReadTimeout("lost"))
    waits: list[float] = []
    with _client(script, waits) as client:
        assert client.run_job("decay").status == "succeeded"
        with pytest.raises(ConnectionFailed) as caught:
            client.run_job("decay")
    assert len(script.requests) == 3 and len(waits) == 1 and "1 attempt(s)" in caught.value.detail
    assert "Idempotency-Key" not in script.requests[0].headers


EXTRACTED = {
    "extracted_by": "rules/1",
    "dry_run": False,
    "messages": 1,
    "waiting": 0,
    "records": [],
    "profile": [],
    "rejected": [],
}


def test_an_extractor_outage_is_retried_with_the_same_key() -> None:
    """503 extractor-unavailable is retried after its Retry-After like any 503: the server stores only
    successful answers under the key, so the retry extracts for real, once."""
    script = Script(_problem(503, "extractor-unavailable", {"Retry-After": "60"}), httpx.Response(200, json=EXTRACTED))
    waits: list[float] = []
    with _client(script, waits, retry=RetryPolicy(rng=random.Random(3))) as client:
        found = client.user("alice").extract([{"role": "user", "content": "I hate olives."}], session_id="s1")
    assert found.extracted_by == "rules/1" and len(waits) == 1 and 60.0 <= waits[0] <= 60.5
    assert len({r.headers["Idempotency-Key"] for r in script.requests}) == 1
    assert script.requests[0].url.path == "/v1/users/alice/extract"
    assert script.requests[0].content == b'{"messages":[{"role":"user","content":"I hate olives."}],"session_id":"s1"}'


def test_an_outage_that_outlasts_the_retries_raises_extractor_unavailable() -> None:
    script = Script(*[_problem(503, "extractor-unavailable", {"Retry-After": "60"})] * 2)
    with _client(script, [], max_retries=1) as client, pytest.raises(ExtractorUnavailable) as caught:
        client.user("alice").extract_session("s1")
    assert isinstance(caught.value, Unavailable) and caught.value.retry_after == 60.0
    assert script.requests[0].url.path == "/v1/users/alice/sessions/s1/extract" and script.requests[0].content == b""


def test_a_spent_token_cap_is_raised_at_once_and_extraction_off_is_not_retried() -> None:
    """The cap's Retry-After runs to 00:00 UTC, longer than max_retry_after: no wait, the error at once."""
    script = Script(_problem(429, "extraction-cap-reached", {"Retry-After": "30000"}), _problem(409, "extraction-off"))
    waits: list[float] = []
    with _client(script, waits) as client:
        with pytest.raises(ExtractionCapReached) as caught:
            client.user("alice").extract_session("s1", reextract=True)
        assert isinstance(caught.value, RateLimited) and caught.value.retry_after == 30000.0
        with pytest.raises(ExtractionOff) as off:
            client.user("alice").extract([{"role": "user", "content": "x"}], dry_run=True)
        assert isinstance(off.value, Conflict)
    assert waits == [] and len(script.requests) == 2
    assert script.requests[0].content == b'{"reextract":true}'
    assert script.requests[1].content == b'{"messages":[{"role":"user","content":"x"}],"dry_run":true}'
    assert all("Idempotency-Key" in r.headers for r in script.requests)
