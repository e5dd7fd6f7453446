"""A real ``ctxmem serve`` with ``CTXMEM_LOG_FORMAT=json``: each access line is a JSON object naming the
request by the id the response carried."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from tests.proof.conftest import migrated_database
from tests.proof.live import start_server


async def test_json_access_lines_name_each_request(server_url: str, tmp_path: Path) -> None:
    async with migrated_database(server_url, "ctxmem_logs", tmp_path / "data") as proof:
        server = await asyncio.to_thread(
            start_server, proof.url, tmp_path / "live", CTXMEM_LOG_FORMAT="json", CTXMEM_LOG_LEVEL="info"
        )
        try:
            async with httpx.AsyncClient(base_url=server.base_url) as c:
                named = await c.get("/v1/users/u-logs/items", headers={"X-Request-Id": "live-7"})
                fresh = await c.get("/healthz")
        finally:
            await asyncio.to_thread(server.stop)
    assert named.status_code == 401 and named.headers["x-request-id"] == "live-7"
    lines = [json.loads(line) for line in server.log_path.read_text().splitlines() if line.startswith("{")]
    access = {line["request_id"]: line for line in lines if line["logger"] == "uvicorn.access"}
    assert access["live-7"]["status"] == 401 and access["live-7"]["path"] == "/v1/users/u-logs/items"
    assert access[fresh.headers["x-request-id"]]["path"] == "/healthz"
    assert all({"ts", "level", "logger", "message", "request_id"} <= line.keys() for line in lines)
