"""The request limits every domain shares: the body size (a pure ASGI middleware that refuses bodies over
``CTXMEM_MAX_BODY_BYTES`` with 413) and the batch size (``check_batch``, ``CTXMEM_MAX_BATCH_ITEMS``).

The middleware checks Content-Length up front and also counts streamed (chunked) bodies, so a client
cannot get around the limit by omitting the header.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.errors import PROBLEM_JSON, BatchTooLarge, problem_type


def check_batch(size: int, *, limit: int, of: str) -> None:
    """A batch of ``size`` ``of`` (items, observations) within ``limit``, else ``413 batch-too-large``."""
    if size > limit:
        raise BatchTooLarge(
            f"a batch holds at most {limit:,} {of} (setting CTXMEM_MAX_BATCH_ITEMS), got {size:,}: split it"
        )


def too_large(max_bytes: int) -> str:
    return (
        f"request bodies are limited to {max_bytes:,} bytes (setting CTXMEM_MAX_BODY_BYTES): send less per "
        "request (split a batch), or raise the setting"
    )


class BodyTooLarge(HTTPException):
    """An HTTPException so that FastAPI's body parsing re-raises it as is (it turns other errors into 400)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, too_large(max_bytes))


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _reject(self, scope: Scope, send: Send) -> None:
        body = json.dumps(
            {
                "type": problem_type("payload-too-large"),
                "title": "The request body is too large",
                "status": 413,
                "detail": too_large(self.max_bytes),
                "instance": scope.get("path"),
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", PROBLEM_JSON.encode()),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await self._reject(scope, send)
                    return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._reject(scope, send)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"BodySizeLimit(max_bytes={self.max_bytes})"


__all__: list[Any] = ["BodySizeLimit"]
