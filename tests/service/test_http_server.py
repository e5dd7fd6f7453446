"""service/http_server.py: the HTTP/1.1 protocol's limits come from settings, and what it answers itself is
problem+json. (Slow and oversized clients against a live server: test_slow_clients.py.)"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from service.http_server import GuardedH11Protocol, protocol_class, uvicorn_options
from service.settings import Settings


def test_the_protocol_takes_its_limits_from_settings() -> None:
    settings = Settings(
        database_url="postgresql://unused/unused",
        header_timeout_seconds=3,
        body_timeout_seconds=7,
        max_header_bytes=8192,
    )
    cls = protocol_class(settings)
    assert issubclass(cls, GuardedH11Protocol)
    assert (cls.header_timeout, cls.body_timeout, cls.max_head_bytes) == (3, 7, 8192)
    assert (GuardedH11Protocol.header_timeout, GuardedH11Protocol.max_head_bytes) == (10.0, 64 * 1024)  # untouched
    options = uvicorn_options(settings)
    assert options["h11_max_incomplete_event_size"] == 8192  # h11 sees the same limit as the protocol
    assert options["server_header"] is False
    assert issubclass(options["http"], GuardedH11Protocol)


class Transport(asyncio.Transport):
    """Collects what the protocol writes (a stand-in for the socket)."""

    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = False
        self.eof = False

    def write(self, data: Any) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def never_called(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the app must not see a refused request")


def protocol(max_head: int = 1024) -> tuple[GuardedH11Protocol, Transport]:
    config = Config(app=never_called, h11_max_incomplete_event_size=max_head, log_level="critical")
    config.load()
    cls = type("P", (GuardedH11Protocol,), {"max_head_bytes": max_head})
    proto = cls(config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop())
    transport = Transport()
    proto.connection_made(transport)
    return proto, transport


def response(written: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
    head, _, body = written.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, json.loads(body)


async def test_a_head_over_the_limit_is_431_problem_json_and_the_connection_lingers() -> None:
    proto, transport = protocol(max_head=1024)
    proto.data_received(b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 4096)
    status, headers, body = response(transport.written)
    assert status == 431
    assert headers["content-type"] == "application/problem+json" and headers["connection"] == "close"
    assert body["type"] == "urn:ctxmem:problem:headers-too-large"
    assert "limited to 1024 bytes" in body["detail"]
    assert transport.eof and not transport.closed  # our side shut for writing; the rest is read and dropped
    proto.data_received(b"more of the header the client is still sending")
    assert not transport.closed
    proto.connection_lost(None)


async def test_a_request_that_is_not_http_is_400_problem_json() -> None:
    proto, transport = protocol()
    proto.data_received(b"\x16\x03\x01 this is TLS, not HTTP\r\n\r\n")
    status, _, body = response(transport.written)
    assert status == 400
    assert body["type"] == "urn:ctxmem:problem:bad-request"
    proto.connection_lost(None)
