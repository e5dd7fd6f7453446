"""The request-body limit (service/limits.py), driven as an ASGI server drives it: a body over the limit is a
413 problem whether it declares its length or streams in chunks, and the app behind never sees it whole."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from service.errors import PROBLEM_JSON, BatchTooLarge, problem_type
from service.limits import BodySizeLimit, check_batch

LIMIT = 10


class Echo:
    """Reads the whole body, then answers 200 with its length."""

    def __init__(self) -> None:
        self.calls = 0
        self.read = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls += 1
        more = True
        while more:
            message = await receive()
            self.read += len(message.get("body", b""))
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(self.read).encode()})


async def serve(app: Any, chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> list[Message]:
    scope: Scope = {"type": "http", "method": "POST", "path": "/v1/x", "headers": headers}
    queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)] or [
        {"type": "http.request", "body": b"", "more_body": False}
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return queue.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    await BodySizeLimit(app, LIMIT)(scope, receive, send)
    return sent


def assert_413(sent: list[Message]) -> None:
    start, body = sent
    assert start["status"] == 413
    assert dict(start["headers"])[b"content-type"] == PROBLEM_JSON.encode()
    problem = json.loads(body["body"])
    assert int(dict(start["headers"])[b"content-length"]) == len(body["body"])
    assert problem["type"] == problem_type("payload-too-large") and problem["status"] == 413
    assert problem["instance"] == "/v1/x"
    assert "10 bytes" in problem["detail"] and "CTXMEM_MAX_BODY_BYTES" in problem["detail"]


async def test_a_declared_length_over_the_limit_is_refused_before_the_app_runs() -> None:
    app = Echo()
    sent = await serve(app, [b"x" * 11], [(b"content-length", b"11")])
    assert_413(sent)
    assert app.calls == 0


async def test_a_body_of_exactly_the_limit_passes() -> None:
    app = Echo()
    sent = await serve(app, [b"x" * 6, b"x" * 4], [(b"content-length", b"10")])
    assert sent[0]["status"] == 200 and sent[1]["body"] == b"10"


async def test_a_streamed_body_is_counted_without_a_declared_length() -> None:
    app = Echo()
    sent = await serve(app, [b"x" * 6, b"x" * 5, b"x" * 100], [(b"transfer-encoding", b"chunked")])
    assert_413(sent)
    assert app.read == 6  # the chunk that crossed the limit never reached the app


async def test_a_nonsense_length_falls_back_to_counting() -> None:
    assert (await serve(Echo(), [b"x" * 3], [(b"content-length", b"abc")]))[0]["status"] == 200
    assert_413(await serve(Echo(), [b"x" * 11], [(b"content-length", b"abc")]))


async def test_once_the_app_has_answered_no_second_response_is_sent() -> None:
    async def answers_first(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        while (await receive()).get("more_body"):
            pass

    sent = await serve(answers_first, [b"x" * 8, b"x" * 8], [])
    assert [m["type"] for m in sent] == ["http.response.start"] and sent[0]["status"] == 202


async def test_other_scopes_pass_through() -> None:
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])

    async def nothing() -> Message:
        return {}

    async def ignore(message: Message) -> None:
        return None

    await BodySizeLimit(app, 0)({"type": "lifespan"}, nothing, ignore)
    assert seen == ["lifespan"]


def test_a_batch_within_the_limit_passes_and_one_over_it_says_how_to_fix_it() -> None:
    check_batch(3, limit=3, of="items")
    with pytest.raises(BatchTooLarge) as caught:
        check_batch(4, limit=3, of="observations")
    assert caught.value.status == 413 and caught.value.slug == "batch-too-large"
    expected = "a batch holds at most 3 observations (setting CTXMEM_MAX_BATCH_ITEMS), got 4: split it"
    assert caught.value.detail == expected
