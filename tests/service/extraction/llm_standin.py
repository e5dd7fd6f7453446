"""A stand-in for an OpenAI-compatible chat-completions provider, over real HTTP: ``POST /v1/chat/completions``
answered as a provider would, in the mode a test sets — honest, hostile (inventing records, attributing the
assistant's words to the user), broken (malformed answers, 500s, 429 with Retry-After, hanging, 401).

The honest mode is a tiny deterministic model: it reads the numbered conversation of the request's last
message and, for each user message, proposes a preference for every "I like X" and a location fact for
every "I live in X", each quoting the words verbatim.

It records every request (``requests``), so a test can check what the extractor sent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.helpers import serve_in_thread

MODES = (
    "honest",
    "invent",  # honest records plus a fact no message states
    "misattribute",  # the assistant's words as records, under its own number and under a user message's
    "bad_json",  # content that is not JSON
    "wrong_shape",  # JSON, but not {"records": [...]}
    "bad_records",  # {"records": [...]} whose records have fields missing or of the wrong type, and one good one
    "not_json_body",  # a 200 whose body is not JSON at all
    "refuse",  # the model's refusal instead of content
    "500",
    "429",  # with Retry-After: retry_after
    "hang",  # no answer until the client gives up
    "401",
)

_HEADER = re.compile(r"^\[(-?\d+)\] (\w+): (.*)$")
_LIKE = re.compile(r"I like ([^.!?\n]+)")
_LIVE = re.compile(r"I live in ([A-Z][\w]*(?: [A-Z][\w]*)*)")


@dataclass
class Recorded:
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class LlmStandIn:
    mode: str = "honest"
    # Modes of the next requests, in order; once it is empty, ``mode`` answers.
    script: list[str] = field(default_factory=list)
    retry_after: str = "7"
    prompt_tokens: int = 120
    completion_tokens: int = 30
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.complete, methods=["POST"])])

    def reset(self) -> None:
        self.mode, self.script, self.retry_after = "honest", [], "7"
        self.requests.clear()

    async def complete(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(Recorded(dict(request.headers), body))
        mode = self.script.pop(0) if self.script else self.mode
        if mode == "500":
            return _error(500, "The server had an error while processing your request.", "server_error")
        if mode == "429":
            return _error(
                429, "Rate limit reached for requests", "rate_limit_exceeded", {"Retry-After": self.retry_after}
            )
        if mode == "401":
            return _error(401, "Incorrect API key provided: sk-wrong.", "invalid_api_key")
        if mode == "hang":
            # With the body read, the next ASGI message is the client's disconnect: wait for it (bounded, so a
            # client that never gives up cannot hold the server's shutdown).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(request.receive(), timeout=10)
            return _error(504, "too late", "timeout")
        if mode == "not_json_body":
            return PlainTextResponse("<html><body>502 Bad Gateway</body></html>", status_code=200)
        messages = conversation(body["messages"][-1]["content"])
        if mode == "refuse":
            return self._answer(body, None, refusal="I'm sorry, I can't help with that.")
        content = {
            "bad_json": '{"records": [{"message": 1, "type": "fact", "quo',
            "wrong_shape": json.dumps({"items": honest(messages)}),
        }.get(mode)
        if content is None:
            content = json.dumps({"records": records(mode, messages)})
        return self._answer(body, content)

    def _answer(self, body: dict[str, Any], content: str | None, *, refusal: str | None = None) -> JSONResponse:
        return JSONResponse(
            {
                "id": f"chatcmpl-standin-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content, "refusal": refusal},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens,
                    "total_tokens": self.prompt_tokens + self.completion_tokens,
                },
            }
        )


def _error(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}},
        status_code=status,
        headers=headers,
    )


def conversation(text: str) -> list[tuple[int, str, str]]:
    """The ``(number, role, text)`` of each message of a rendered conversation (further lines indented)."""
    out: list[tuple[int, str, str]] = []
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            out.append((int(header[1]), header[2], header[3]))
        elif line.startswith("  ") and out:
            n, role, said = out[-1]
            out[-1] = (n, role, said + "\n" + line[2:])
    return out


def _record(n: int, kind: str, quote: str, **fields: Any) -> dict[str, Any]:
    return {"message": n, "type": kind, "quote": quote, "key": None, "value": None, "hard": False,
            "polarity": None, "topic": None, **fields}  # fmt: skip


def honest(messages: list[tuple[int, str, str]]) -> list[dict[str, Any]]:
    out = []
    for n, role, text in messages:
        if role != "user":
            continue
        for m in _LIKE.finditer(text):
            out.append(_record(n, "preference", m[0], polarity="like", topic=m[1]))
        for m in _LIVE.finditer(text):
            out.append(_record(n, "fact", m[0], key="location", value=m[1]))
    return out


def records(mode: str, messages: list[tuple[int, str, str]]) -> list[Any]:
    users = [n for n, role, _ in messages if role == "user"]
    if mode == "invent":
        invented = _record(users[0], "fact", "John Doe lives in Berlin", key="location", value="Berlin")
        return [*honest(messages), invented]
    if mode == "misattribute":
        n, _, said = next(m for m in messages if m[1] == "assistant")
        claim = said.split(".")[0]
        return [_record(n, "fact", claim), _record(users[0], "fact", claim)]
    if mode == "bad_records":
        good = honest(messages)
        return [
            "I like tea",  # not an object
            {**good[0], "message": "0"},  # a string, not an integer
            {**good[0], "type": "opinion"},  # not a record type
            {k: v for k, v in good[0].items() if k != "quote"},  # no quote
            {**good[0], "key": "favourite_colour"},  # not a known slot
            {**good[0], "value": {"amount": 5}},  # a structure
            good[0],
        ]
    return honest(messages)


@contextlib.contextmanager
def serve(standin: LlmStandIn) -> Iterator[str]:
    """The stand-in on a free loopback port, in a thread of its own; yields its base URL (``…/v1``)."""
    with serve_in_thread(standin.app, what="the chat-completions stand-in") as port:
        yield f"http://127.0.0.1:{port}/v1"
