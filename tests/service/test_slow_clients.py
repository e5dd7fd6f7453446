"""Slow and oversized requests against a real uvicorn server on loopback with the service's protocol
(issue #12, F): heads and bodies that take too long get 408, a 1 MB header 431, and slow clients do not
keep their connections."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from service.http_server import uvicorn_options
from service.settings import Settings
from tests.conftest import TenantKeys

HEADER_TIMEOUT = 0.3
BODY_TIMEOUT = 0.5


@pytest.fixture
async def live(app: FastAPI, settings: Settings) -> AsyncIterator[tuple[str, int]]:
    tight = settings.replace(header_timeout_seconds=HEADER_TIMEOUT, body_timeout_seconds=BODY_TIMEOUT)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="off", log_level="warning", **uvicorn_options(tight)
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.01)
    assert server.started
    port = server.servers[0].sockets[0].getsockname()[1]
    yield "127.0.0.1", port
    server.should_exit = True
    await task


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    raw = await asyncio.wait_for(reader.read(), 5)  # until the server closes
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


async def test_a_head_that_trickles_in_is_408_and_closed(live: tuple[str, int]) -> None:
    reader, writer = await asyncio.open_connection(*live)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    # keep sending a header byte at a time: activity does not extend the head's deadline
    for _ in range(3):
        await asyncio.sleep(HEADER_TIMEOUT / 4)
        with contextlib.suppress(ConnectionError):
            writer.write(b"X")
    status, headers, body = await read_response(reader)
    assert status == 408
    assert headers["content-type"] == "application/problem+json" and headers["connection"] == "close"
    assert json.loads(body)["type"] == "urn:ctxmem:problem:request-timeout"
    writer.close()


async def test_a_body_that_does_not_arrive_is_408(live: tuple[str, int], tenant: TenantKeys) -> None:
    reader, writer = await asyncio.open_connection(*live)
    auth = tenant.agent["Authorization"].encode()
    writer.write(
        b"POST /v1/users/slow/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: " + auth + b"\r\nContent-Length: 100\r\n\r\n" + b'{"type": "fact", '
    )
    status, _, body = await read_response(reader)
    assert status == 408 and "request body" in json.loads(body)["detail"]
    writer.close()
    async with httpx.AsyncClient(base_url=f"http://{live[0]}:{live[1]}") as client:
        r = await client.get("/v1/users/slow/items", headers=tenant.agent)
        assert r.status_code in (200, 404) and not r.json().get("items")  # nothing was written


async def test_a_1mb_header_is_431_not_a_reset(live: tuple[str, int]) -> None:
    async with httpx.AsyncClient(base_url=f"http://{live[0]}:{live[1]}") as client:
        r = await client.get("/healthz", headers={"X-Big": "a" * 1_000_000})
        assert r.status_code == 431
        assert r.headers["content-type"] == "application/problem+json"
        assert "headers are limited to 65536 bytes" in r.json()["detail"]
        # the server is fine
        assert (await client.get("/healthz")).status_code == 200


async def test_forty_slow_clients_lose_their_connections(live: tuple[str, int]) -> None:
    conns = [await asyncio.open_connection(*live) for _ in range(40)]
    for _, writer in conns:
        writer.write(b"GET /healthz HTTP/1.1\r\n")
    statuses = await asyncio.gather(*(read_response(reader) for reader, _ in conns))
    assert [s for s, _, _ in statuses] == [408] * 40
    # a silent connection is closed too, without an answer
    reader, writer = await asyncio.open_connection(*live)
    assert await asyncio.wait_for(reader.read(), 5) == b""
    for _, w in [*conns, (reader, writer)]:
        w.close()
    async with httpx.AsyncClient(base_url=f"http://{live[0]}:{live[1]}") as client:
        assert (await client.get("/healthz")).status_code == 200
