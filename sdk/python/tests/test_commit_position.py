"""Read-your-writes across server processes: the client sends back the latest X-Ctxmem-Commit-Lsn it was
answered with (the server reads from replicas only where that commit is visible). Without a server:
httpx's MockTransport answers. (Against a real primary and replica: tests/service/db/test_replicas.py.)"""

from __future__ import annotations

import asyncio

import httpx
from ctxmem_client import AsyncClient, Client

HEADER = "X-Ctxmem-Commit-Lsn"


class Answers:
    def __init__(self, *positions: str | None) -> None:
        self.positions = list(positions)
        self.sent: list[str | None] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request.headers.get(HEADER))
        position = self.positions.pop(0)
        return httpx.Response(200, json={"status": "ok"}, headers={HEADER: position} if position else {})


def test_the_latest_position_is_sent_back_and_never_an_older_or_malformed_one() -> None:
    answers = Answers("0/16B3748", None, "0/100", "zz; x", "1/0", None)
    with Client("http://ctxmem.test", "k", transport=httpx.MockTransport(answers)) as client:
        for _ in range(6):
            client.health()
    assert answers.sent == [None, "0/16B3748", "0/16B3748", "0/16B3748", "0/16B3748", "1/0"]


def test_the_async_client_does_the_same() -> None:
    answers = Answers(None, "A/FF", "A/FE", None)

    async def run() -> None:
        async with AsyncClient("http://ctxmem.test", "k", transport=httpx.MockTransport(answers)) as client:
            for _ in range(4):
                await client.health()

    asyncio.run(run())
    assert answers.sent == [None, None, "A/FF", "A/FF"]
