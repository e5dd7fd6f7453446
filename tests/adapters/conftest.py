"""A real ``ctxmem serve`` for the adapter tests (tests/sdk/conftest.py's server), and a fresh tenant per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.sdk.conftest import UNLIMITED, Keys, Live, live_server


@pytest.fixture(scope="session")
async def live(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Live]:
    async with live_server(server_url, tmp_path_factory.mktemp("adapters-live"), UNLIMITED) as found:
        yield found


@pytest.fixture
async def keys(live: Live) -> Keys:
    return await live.tenant()
