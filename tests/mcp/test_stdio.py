"""``ctxmem mcp`` over stdio, spawned through the real CLI by the official ``mcp`` client, against a real
``ctxmem serve``: the tools and their schemas, a remember → search → expand → window → observe → profile →
confirm round trip, ctxmem's errors as tool errors, and the binding to the configured user."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ctxmem_client import AsyncClient
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent, TextResourceContents

from tests.mcp.conftest import mcp_env
from tests.proof.live import ROOT
from tests.sdk.conftest import Keys, Live

CTXMEM = str(Path(sys.executable).parent / "ctxmem")
TOOLS = {"remember", "observe", "search", "expand", "window", "confirm", "reject", "extract", "extract_session"}


@contextlib.asynccontextmanager
async def stdio_session(env: dict[str, str], log: Path, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=CTXMEM, args=["mcp", *args], env=env, cwd=ROOT)
    with log.open("w") as errors:
        async with stdio_client(params, errlog=errors) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


async def test_tools_and_a_round_trip(mcp_live: Live, mcp_keys: Keys, tmp_path: Path) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    # the key from the environment, the URL and the user from flags
    env = mcp_env(CTXMEM_API_KEY=mcp_keys.agent, CTXMEM_MCP_SESSION="s1")
    async with stdio_session(env, tmp_path / "err", "--url", mcp_live.url, "--user", user) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            props = tool.input_schema["properties"]
            assert not {"user_id", "user", "api_key", "key_id"} & set(props), tool.name
            assert tool.description and tool.output_schema is not None, tool.name
            assert all(p.get("description") for p in props.values()), tool.name
        assert tools["remember"].input_schema["required"] == ["content"]
        assert {"content", "type", "key", "value", "scope", "session_id", "hard", "source"} <= set(
            tools["remember"].input_schema["properties"]
        )
        assert tools["search"].input_schema["required"] == ["query"]
        assert {"limit", "types", "budget"} <= set(tools["search"].input_schema["properties"])
        assert set(tools["expand"].input_schema["required"]) == {"item_id"}
        level = tools["expand"].input_schema["properties"]["level"]
        assert (level["minimum"], level["maximum"]) == (0, 4)
        assert {"input", "max_tokens", "query", "format"} <= set(tools["window"].input_schema["properties"])
        assert set(tools["observe"].input_schema["required"]) == {"dimension", "key", "value"}
        assert tools["confirm"].input_schema["required"] == ["entry_id"]
        assert tools["extract"].input_schema["required"] == ["messages"]
        assert {"messages", "dry_run", "session_id"} == set(tools["extract"].input_schema["properties"])
        assert {"session_id", "reextract"} == set(tools["extract_session"].input_schema["properties"])

        content = "The Lisbon hotel booking reference is ZX-4417."
        written = structured(await session.call_tool("remember", {"content": content, "key": "hotel_ref"}))
        assert written["type"] == "fact" and written["session_id"] == "s1"
        assert written["resolution"]["outcome"] == "new"
        item_id = written["id"]
        hard = structured(
            await session.call_tool(
                "remember", {"content": "Never book flights landing after 22:00.", "type": "constraint", "hard": True}
            )
        )
        assert hard["hard"] is True

        found = structured(await session.call_tool("search", {"query": "Lisbon hotel booking reference", "limit": 5}))
        assert found["hits"][0]["id"] == item_id
        assert found["hits"][0]["content"] == content and found["hits"][0]["why"]

        original = structured(await session.call_tool("expand", {"item_id": item_id, "level": 0}))
        assert original["text"] == content and original["level"] == 0
        index = structured(await session.call_tool("expand", {"item_id": item_id, "level": 4}))
        by_handle = structured(await session.call_tool("expand", {"item_id": item_id[-8:], "level": 0}))
        assert by_handle["text"] == content and by_handle["id"] == item_id
        assert index["level"] == 4 and index["text"] and index["tokens"] <= original["tokens"]

        window = structured(
            await session.call_tool(
                "window", {"input": "What is my hotel booking reference?", "max_tokens": 1500, "format": "openai"}
            )
        )
        assert "ZX-4417" in window["text"] and "Never book flights landing after 22:00." in window["text"]
        assert window["prompt"]["messages"][-1] == {"role": "user", "content": "What is my hotel booking reference?"}

        entry = structured(
            await session.call_tool(
                "observe", {"dimension": "preference", "key": "seat", "value": "aisle", "domain": "travel"}
            )
        )
        assert entry["value"] == "aisle"

        read = await session.read_resource("ctxmem://profile")
        block = read.contents[0]
        assert isinstance(block, TextResourceContents) and block.mime_type == "application/json"
        profile = json.loads(block.text)
        listed = [e["id"] for by_domain in profile["tiers"].values() for es in by_domain.values() for e in es]
        assert entry["id"] in listed

        confirmed = structured(await session.call_tool("confirm", {"entry_id": entry["id"], "note": "yes, aisle"}))
        assert (confirmed["tier"], confirmed["status"]) == ("long_term", "active")
        rejected = structured(await session.call_tool("reject", {"entry_id": entry["id"]}))
        assert rejected["status"] == "rejected"

        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["ctxmem://items/{item_id}"]
        one = (await session.read_resource(f"ctxmem://items/{item_id}")).contents[0]
        assert isinstance(one, TextResourceContents) and json.loads(one.text)["content"] == content


SAID = "We have a small ops team, so don't recommend Redis Cluster."


async def test_extract_learns_from_given_messages_and_from_a_stored_session(
    mcp_live: Live, mcp_keys: Keys, tmp_path: Path
) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    env = mcp_env(CTXMEM_API_KEY=mcp_keys.agent, CTXMEM_MCP_SESSION="s1")
    async with stdio_session(env, tmp_path / "err", "--url", mcp_live.url, "--user", user) as session:
        messages = [
            {"role": "user", "content": SAID},
            {"role": "assistant", "content": "I love Redis Cluster, and I live in Paris."},
        ]
        dry = structured(await session.call_tool("extract", {"messages": messages, "dry_run": True}))
        assert dry["dry_run"] is True and dry["extracted_by"] == "rules/1" and dry["messages"] == 2
        (record,) = [r for r in dry["records"] if r["type"] == "constraint"]
        assert record["hard"] and record["outcome"] == "would_write" and record["item_id"] is None
        assert record["content"] in SAID and record["message_index"] == 0
        assert not any("Paris" in r["content"] for r in dry["records"])
        async with AsyncClient(mcp_live.url, mcp_keys.agent, max_retries=0) as client:
            assert (await client.user(user).list_items()).items == []  # a dry run writes nothing

        learned = structured(await session.call_tool("extract", {"messages": messages}))
        (record,) = [r for r in learned["records"] if r["type"] == "constraint"]
        assert record["outcome"] == "new" and record["item_id"]
        window = structured(await session.call_tool("window", {"input": "Which cache should we use?"}))
        assert record["content"] in window["text"]

        # a stored conversation (the host app appends it), extracted on demand in the configured session
        async with AsyncClient(mcp_live.url, mcp_keys.agent, max_retries=0) as client:
            await client.user(user).append_messages("s1", [{"role": "user", "content": "I love Thai food."}])
        stored = structured(await session.call_tool("extract_session", {}))
        assert (stored["messages"], stored["waiting"]) == (1, 0)
        assert [r["type"] for r in stored["records"]] == ["preference"]
        assert [e["dimension"] for e in stored["profile"]] == ["preference"]
        assert structured(await session.call_tool("extract_session", {"session_id": "s1"}))["messages"] == 0


async def test_ctxmem_errors_are_tool_errors(mcp_live: Live, mcp_keys: Keys, tmp_path: Path) -> None:
    env = mcp_env(CTXMEM_URL=mcp_live.url, CTXMEM_API_KEY=mcp_keys.agent, CTXMEM_MCP_USER="erin")
    async with stdio_session(env, tmp_path / "err") as session:
        unknown = uuid.uuid4()
        text = error_text(await session.call_tool("expand", {"item_id": str(unknown), "level": 0}))
        assert "404 item-not-found" in text and str(unknown) in text, text
        # no session configured: observe says what to pass
        text = error_text(await session.call_tool("observe", {"dimension": "goal", "key": "k", "value": "v"}))
        assert "session_id" in text
        text = error_text(await session.call_tool("extract_session", {}))
        assert "session_id" in text
        # the server's validation problem, with its location
        text = error_text(await session.call_tool("remember", {"content": "x", "scope": "session"}))
        assert "422" in text and "session_id" in text, text
        # still serving after the errors
        assert structured(await session.call_tool("search", {"query": "anything"}))["hits"] == []
    # a key the server refuses: the tool error says so
    env = mcp_env(CTXMEM_URL=mcp_live.url, CTXMEM_API_KEY="cmk_wrong", CTXMEM_MCP_USER="erin")
    async with stdio_session(env, tmp_path / "err2") as session:
        text = error_text(await session.call_tool("search", {"query": "anything"}))
        assert "401 unauthorized" in text and "unknown or revoked API key" in text, text


async def test_the_server_acts_for_its_configured_user_only(mcp_live: Live, mcp_keys: Keys, tmp_path: Path) -> None:
    env = mcp_env(CTXMEM_URL=mcp_live.url, CTXMEM_API_KEY=mcp_keys.agent, CTXMEM_MCP_USER="alice")
    async with stdio_session(env, tmp_path / "err") as session:
        refused = await session.call_tool("remember", {"content": "Mallory's note.", "user_id": "mallory"})
        text = error_text(refused)
        assert "user_id" in text and "no tool takes a user id" in text
        refused = await session.call_tool("search", {"query": "note", "api_key": mcp_keys.admin})
        assert "api_key" in error_text(refused)
        structured(await session.call_tool("remember", {"content": "Alice's note."}))
    async with AsyncClient(mcp_live.url, mcp_keys.agent, max_retries=0) as client:
        alice = [i.content for i in (await client.user("alice").list_items()).items]
        mallory = (await client.user("mallory").list_items()).items
    assert alice == ["Alice's note."] and mallory == []


def test_a_missing_extra_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # an `mcp` that cannot be imported, as where the extra is not installed
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = mcp_env(PYTHONPATH=str(tmp_path), CTXMEM_MCP_USER="alice")
    done = subprocess.run(
        [sys.executable, "-m", "service.cli", "mcp"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: ctxmem mcp needs the MCP extra: pip install './sdk/python[mcp]' (ctxmem-client[mcp])"
    ]


def test_the_user_is_required(tmp_path: Path) -> None:
    done = subprocess.run(
        [CTXMEM, "mcp"], env=mcp_env(), cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 2 and "--user (or CTXMEM_MCP_USER) is required" in done.stderr


def test_both_entry_points_take_the_same_options() -> None:
    def usage(*cmd: str) -> str:
        done = subprocess.run([*cmd, "--help"], env=mcp_env(), cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.split("options:", 1)[1]

    sdk = usage(str(Path(sys.executable).parent / "ctxmem-mcp"))
    assert sdk == usage(CTXMEM, "mcp")
    for flag in ("--url", "--api-key", "--user", "--session", "--transport", "--host", "--port"):
        assert flag in sdk
