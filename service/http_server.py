"""uvicorn's HTTP/1.1 protocol (h11) with what a service facing slow or hostile clients needs:

- a request head (request line and headers) must arrive within ``header_timeout`` seconds of its first
  byte, or of the connection opening, however slowly it trickles in (uvicorn has no such limit: 40
  clients sending a byte now and then held 40 connections for as long as they liked) → ``408``;
- a request body must arrive within ``body_timeout`` seconds of its head → ``408``;
- a head larger than ``max_head_bytes`` → ``431`` (h11 knows it; uvicorn answered 400 and closed with the
  rest of the head unread, which the client saw as a connection reset).

Errors answered here are problem+json like the app's, and the connection is closed gracefully: the
response is written, our side is shut for writing, and what the client still sends is read and dropped for
up to ``LINGER_SECONDS`` (closing with unread data would make the kernel reset the connection and the
client lose the response).
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.supervisors.multiprocess import Multiprocess

from service.errors import PROBLEM_JSON, problem_type
from service.settings import Settings

LINGER_SECONDS = 2.0
LINGER_MAX_BYTES = 16 * 1024 * 1024

_PROBLEMS = {
    400: ("bad-request", "Bad request", "the request is not valid HTTP/1.1"),
    408: ("request-timeout", "Request timeout", "{what} did not arrive within {seconds:g} s: send it at once"),
    431: (
        "headers-too-large",
        "Request header fields too large",
        "the request line and headers are limited to {limit} bytes: send fewer or shorter headers",
    ),
}


class GuardedH11Protocol(H11Protocol):
    header_timeout: float = 10.0
    body_timeout: float = 60.0
    max_head_bytes: int = 64 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._lingering = False
        self._lingered = 0

    # --- the timers -------------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout, self._head_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            self._lingered += len(data)
            if self._lingered > LINGER_MAX_BYTES:
                self.transport.close()
            return
        waiting_for_head = self.conn.their_state is h11.IDLE
        if waiting_for_head:
            self._head_bytes += len(data)
            if self._deadline is None:
                self._arm(self.header_timeout, self._head_too_slow)
        super().data_received(data)
        if self._lingering or self.transport.is_closing():
            return
        if waiting_for_head and self.conn.their_state is h11.SEND_BODY:
            self._arm(self.body_timeout, self._body_too_slow)
        elif self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._head_bytes = 0
        self._disarm()  # the next head's clock starts with its first byte (idle: uvicorn's keep-alive timeout)

    def _arm(self, seconds: float, callback: Any) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _head_too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a response is being written; the next head has not begun
        if self._head_bytes == 0:
            self.transport.close()  # nothing was asked: nothing to answer
            return
        self._answer(408, what="the request line and headers", seconds=self.header_timeout)

    def _body_too_slow(self) -> None:
        self._deadline = None
        cycle = self.cycle
        if cycle is None or self.transport.is_closing() or self.conn.their_state is not h11.SEND_BODY:
            return
        if cycle.response_started:
            self.transport.close()
            return
        # The app is waiting for the body: it sees a disconnect, and what it might still send is dropped.
        cycle.response_started = True
        cycle.disconnected = True
        cycle.message_event.set()
        self._answer(408, what="the request body", seconds=self.body_timeout)

    # --- errors of the request head ---------------------------------------------------------------------
    def send_400_response(self, msg: str) -> None:
        status = 431 if self._head_bytes > self.max_head_bytes else 400
        self._answer(status, limit=self.max_head_bytes)

    def _answer(self, status: int, **facts: Any) -> None:
        slug, title, detail = _PROBLEMS[status]
        body = json.dumps(
            {"type": problem_type(slug), "title": title, "status": status, "detail": detail.format(**facts)}
        ).encode()
        headers = [
            (b"content-type", PROBLEM_JSON.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        try:
            out = self.conn.send(h11.Response(status_code=status, headers=headers))
            out += self.conn.send(h11.Data(data=body))
            out += self.conn.send(h11.EndOfMessage())
        except h11.LocalProtocolError:  # h11 will not write a response now: the raw bytes, then
            out = (
                f"HTTP/1.1 {status} {title}\r\n".encode()
                + b"".join(k + b": " + v + b"\r\n" for k, v in headers)
                + b"\r\n"
                + body
            )
        self.transport.write(out or b"")
        self._linger()

    def _linger(self) -> None:
        self._disarm()
        self._lingering = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def eof_received(self) -> bool | None:
        if self._lingering:
            self.transport.close()
            return None
        return super().eof_received()  # type: ignore[func-returns-value]


def protocol_class(settings: Settings) -> type[GuardedH11Protocol]:
    """The protocol with the settings' limits, for ``uvicorn.run(http=...)``."""
    return type(
        "CtxmemH11Protocol",
        (GuardedH11Protocol,),
        {
            "header_timeout": settings.server.header_timeout_seconds,
            "body_timeout": settings.server.body_timeout_seconds,
            "max_head_bytes": settings.server.max_header_bytes,
        },
    )


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """What ``ctxmem serve`` hands uvicorn besides the app, host and port."""
    return {
        "http": protocol_class(settings),
        "h11_max_incomplete_event_size": settings.server.max_header_bytes,
        "server_header": False,
    }


class Supervisor(Multiprocess):
    """uvicorn's supervisor of ``ctxmem serve --workers N``, where SIGHUP stops the server as SIGTERM and
    SIGINT do (uvicorn's would replace the workers), as it stops a server of one process; and which knows
    the signal that stopped it (``None``: it stopped because a worker could not start)."""

    stopped_by: int | None = None

    def handle_int(self) -> None:
        self.stopped_by = self.stopped_by or signal.SIGINT
        super().handle_int()

    def handle_term(self) -> None:
        self.stopped_by = self.stopped_by or signal.SIGTERM
        super().handle_term()

    def handle_hup(self) -> None:
        self.stopped_by = self.stopped_by or signal.SIGHUP
        logging.getLogger("uvicorn.error").info("Received SIGHUP, exiting.")
        self.should_exit.set()
