"""``ctxmem mcp --transport http`` (the real CLI) on a free port, reached by the official ``mcp``
client over streamable HTTP, against a real ``ctxmem serve``."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from ctxmem_client import Client
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.conftest import mcp_env
from tests.proof.live import ROOT, free_port
from tests.sdk.conftest import Keys, Live

CTXMEM = str(Path(sys.executable).parent / "ctxmem")


@contextlib.contextmanager
def http_server(live: Live, key: str, user: str, log: Path, *extra: str) -> Iterator[str]:
    port = free_port()
    cmd = [CTXMEM, "mcp", "--transport", "http", "--port", str(port), "--url", live.url, "--api-key", key, *extra]
    with log.open("wb") as out:
        proc = subprocess.Popen([*cmd, "--user", user], env=mcp_env(), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:  # poll the port until it answers
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(httpx.TransportError):
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


async def test_streamable_http_lists_tools_and_remembers(mcp_live: Live, mcp_keys: Keys, tmp_path: Path) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    with http_server(mcp_live, mcp_keys.agent, user, tmp_path / "mcp.log") as url:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert names == {
                "remember",
                "observe",
                "search",
                "expand",
                "window",
                "confirm",
                "reject",
                "extract",
                "extract_session",
            }
            content = "The team standup moved to 09:15 on Tuesdays."
            written = await session.call_tool("remember", {"content": content, "type": "decision"})
            assert not written.is_error and written.structured_content is not None
            found = await session.call_tool("search", {"query": "when is the standup", "limit": 3})
            assert not found.is_error and found.structured_content is not None
            hits = found.structured_content["hits"]
            assert hits[0]["id"] == written.structured_content["id"] and hits[0]["content"] == content
    with Client(mcp_live.url, mcp_keys.agent, max_retries=0) as client:
        assert [i.content for i in client.user(user).list_items().items] == [content]


async def test_with_a_token_only_clients_that_send_it_get_in(mcp_live: Live, mcp_keys: Keys, tmp_path: Path) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    token = uuid.uuid4().hex
    with http_server(mcp_live, mcp_keys.agent, user, tmp_path / "mcp.log", "--http-token", token) as url:
        async with httpx.AsyncClient(timeout=10) as plain:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
                r = await plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)
                assert r.status_code == 401 and "--http-token" in r.text, (headers, r.text)
        authed = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        async with (
            authed,
            streamable_http_client(url, http_client=authed) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert len((await session.list_tools()).tools) == 9


def test_binding_beyond_loopback_needs_a_token(mcp_live: Live, mcp_keys: Keys) -> None:
    everywhere = "0.0.0.0"  # noqa: S104 - the address the CLI must refuse without a token
    cmd = [CTXMEM, "mcp", "--transport", "http", "--host", everywhere, "--user", "u", "--api-key", mcp_keys.agent]
    done = subprocess.run(cmd, env=mcp_env(), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "set --http-token" in done.stderr, done.stderr


@pytest.mark.parametrize("flags", [["--user", ".."], ["--user", "u", "--session", "."]])
def test_a_dot_segment_id_is_a_usage_error(mcp_keys: Keys, flags: list[str]) -> None:
    """ctxmem refuses to store anything under `.` or `..`: the CLI says so and exits 2, no traceback."""
    cmd = [CTXMEM, "mcp", *flags, "--api-key", mcp_keys.agent]
    done = subprocess.run(cmd, env=mcp_env(), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "URL dot-segment" in done.stderr and "Traceback" not in done.stderr, done.stderr


async def test_extract_over_http_learns_the_users_words(mcp_live: Live, mcp_keys: Keys, tmp_path: Path) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    said = "We have a small ops team, so don't recommend Redis Cluster."
    with http_server(mcp_live, mcp_keys.agent, user, tmp_path / "mcp.log", "--session", "chat-1") as url:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            messages = [{"role": "user", "content": said}, {"role": "assistant", "content": "Noted."}]
            learned = await session.call_tool("extract", {"messages": messages})
            assert not learned.is_error and learned.structured_content is not None, learned.content
            (record,) = [r for r in learned.structured_content["records"] if r["type"] == "constraint"]
            assert record["hard"] and record["outcome"] == "new" and record["content"] in said
    with Client(mcp_live.url, mcp_keys.agent, max_retries=0) as client:
        (item,) = client.user(user).list_items(extracted_by="any", type=["constraint"]).items
    assert str(item.id) == record["item_id"] and item.evidence is not None and item.evidence.session_id == "chat-1"
