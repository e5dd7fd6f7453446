"""A real ``ctxmem serve`` caches checked keys, and a key revoked by another process (``ctxmem keys
revoke``) is refused by the server at once, not after the cache's TTL."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import httpx

from service.auth.service import authenticate
from tests.conftest import make_tenant
from tests.proof.conftest import migrated_database
from tests.proof.live import ROOT, child_env, start_server


async def test_a_key_revoked_elsewhere_is_refused_at_once(server_url: str, tmp_path: Path) -> None:
    async with migrated_database(server_url, "ctxmem_revoke", tmp_path / "data") as proof:
        keys = await make_tenant(proof.db)
        async with proof.db.sessionmaker() as s:
            agent = await authenticate(s, keys.agent["Authorization"])
        # A TTL far longer than the test: only the revocation notice can end the cached entry.
        server = await asyncio.to_thread(start_server, proof.url, tmp_path / "live", CTXMEM_KEY_CACHE_SECONDS="3600")
        try:
            async with httpx.AsyncClient(base_url=server.base_url, headers=keys.agent) as c:
                for _ in range(3):
                    assert (await c.get("/v1/users/u-revoke/items")).status_code == 200
                revoke = ["keys", "revoke", "--tenant", keys.tenant_id, "--id", str(agent.key_id)]
                done = await asyncio.to_thread(
                    subprocess.run,
                    [sys.executable, "-m", "service.cli", *revoke],
                    cwd=ROOT,
                    env=child_env(proof.url, tmp_path / "cli"),
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert done.returncode == 0, done.stderr
                revoked_at = time.monotonic()
                while (r := await c.get("/v1/users/u-revoke/items")).status_code == 200:
                    assert time.monotonic() - revoked_at < 2.0, "the revoked key was still accepted after 2 s"
                    await asyncio.sleep(0.02)
                assert r.status_code == 401
                other = await c.get("/v1/users/u-revoke/items", headers=keys.operator)
                assert other.status_code == 200  # the other keys of the tenant are untouched
        finally:
            await asyncio.to_thread(server.stop)
