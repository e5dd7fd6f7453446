"""Fixtures of the MCP server's tests: one real ``ctxmem serve`` (the SDK tests' fixture approach, on a migrated
database of its own), and the environment a ``ctxmem mcp`` child process runs in."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.proof.live import ROOT
from tests.sdk.conftest import UNLIMITED, Keys, Live, live_server


@pytest.fixture(scope="session")
async def mcp_live(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Live]:
    async with live_server(server_url, tmp_path_factory.mktemp("mcp-live"), UNLIMITED) as found:
        yield found


@pytest.fixture
async def mcp_keys(mcp_live: Live) -> Keys:
    return await mcp_live.tenant()


def mcp_env(**settings: str) -> dict[str, str]:
    """The parent's environment without its CTXMEM_* settings, plus ``settings`` (CTXMEM_URL, CTXMEM_API_KEY…)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXMEM_")}
    # The checkout's SDK, not an installed one: the child runs the code under test.
    paths = (settings.pop("PYTHONPATH", ""), str(ROOT / "sdk" / "python"), str(ROOT))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.update(settings)
    return env


def errlog(tmp_path: Path) -> Path:
    return tmp_path / "mcp.stderr"
