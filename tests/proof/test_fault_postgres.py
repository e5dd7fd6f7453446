"""PostgreSQL killed under a write load (issue #12, part 4).

The test starts its own PostgreSQL server process, a ``ctxmem serve`` on it, and writers that each send
item writes with an ``Idempotency-Key`` and retry a failed write with the same key until it is
acknowledged, as a careful client does. Three times, the postmaster and every backend get SIGKILL at
once, mid-load, and the server is started again on the same data directory. ``ctxmem serve`` is never
restarted: it must recover by itself. Afterwards every acknowledged id is reconciled against the
database: each is there with its content, once (0 acknowledged writes lost, no duplicate from a retry),
and an outage was answered ``503`` problem+json with ``Retry-After``, never a success that was not stored.
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx
import pytest

from service.db import migrate
from service.db.embedded import ensure_database
from service.db.engine import create_database
from service.settings import Settings
from tests.conftest import TenantKeys, make_tenant
from tests.proof.conftest import LIVE_ENV
from tests.proof.live import LiveServer, start_server
from tests.proof.pgserver import PgServer, new_server

FAULTS = 3
WRITERS = 8
ACKS_BETWEEN_FAULTS = 120
FAILURES_PER_OUTAGE = 8  # each outage must be seen by the writers before the database comes back


@dataclass
class Load:
    acked: dict[str, tuple[str, str]] = field(default_factory=dict)  # idempotency key -> (id, content)
    outage: Counter[str] = field(default_factory=Counter)  # how failed attempts were answered
    failures: int = 0
    unexpected: list[str] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)


@pytest.fixture
async def pg() -> AsyncIterator[PgServer]:
    server = new_server()
    await asyncio.to_thread(server.init)
    server.start()
    await server.wait_ready()
    yield server
    await asyncio.to_thread(server.cleanup)


async def writer(client: httpx.AsyncClient, keys: TenantKeys, load: Load, w: int) -> None:
    n = 0
    while not load.stop.is_set():
        n += 1
        key = f"fault-{w}-{n}-{secrets.token_hex(4)}"
        content = f"writer {w} write {n} {uuid.uuid4()}"
        body = {"type": "fact", "content": content, "source": "user"}
        while True:  # the same request with the same key until it is acknowledged
            try:
                r = await client.post(
                    f"/v1/users/fault-{w % 3}/items", json=body, headers={**keys.agent, "Idempotency-Key": key}
                )
            except httpx.TransportError as exc:  # ctxmem serve stays up: every request gets an answer
                load.failures += 1
                load.outage[f"transport error {type(exc).__name__}"] += 1
                load.unexpected.append(f"transport error {exc!r}")
                await asyncio.sleep(0.05)
                continue
            if r.status_code == 201:
                load.acked[key] = (r.json()["id"], content)
                break
            load.failures += 1
            problem = r.headers.get("content-type") == "application/problem+json"
            load.outage[f"{r.status_code} {r.json().get('type') if problem else r.text[:80]}"] += 1
            if r.status_code != 503 or not problem or "retry-after" not in r.headers:
                load.unexpected.append(f"{r.status_code} {dict(r.headers)} {r.text[:300]}")
            await asyncio.sleep(0.05)


async def wait_for(predicate, what: str, attempts: int = 1200) -> None:  # type: ignore[no-untyped-def]
    for _ in range(attempts):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_kill_postgres_under_write_load_loses_no_acknowledged_write(
    pg: PgServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    await ensure_database(pg.url(), "ctxmem")
    url = pg.url("ctxmem")
    db = create_database(url, Settings(database_url=url, tokenizer="estimate"))
    await migrate.upgrade(db.engine)
    keys = await make_tenant(db)
    await db.dispose()
    data_dir: Path = tmp_path_factory.mktemp("fault-live")
    live: LiveServer = await asyncio.to_thread(start_server, url, data_dir, **LIVE_ENV)
    load = Load()
    try:
        async with httpx.AsyncClient(base_url=live.base_url, timeout=60) as client:
            tasks = [asyncio.create_task(writer(client, keys, load, w)) for w in range(WRITERS)]
            for _ in range(FAULTS):
                target = len(load.acked) + ACKS_BETWEEN_FAULTS
                await wait_for(lambda t=target: len(load.acked) >= t, "writes to be acknowledged")
                failures = load.failures
                pg.kill9()
                await wait_for(lambda f=failures: load.failures >= f + FAILURES_PER_OUTAGE, "the outage to show")
                pg.start()
                await pg.wait_ready()
            # Recovered by itself: writes are acknowledged again without restarting ctxmem serve.
            target = len(load.acked) + ACKS_BETWEEN_FAULTS
            await wait_for(lambda: len(load.acked) >= target, "writes to succeed after the last restart")
            load.stop.set()
            await asyncio.gather(*tasks)
            ready = await client.get("/readyz")
            assert ready.status_code == 200, ready.text
    finally:
        load.stop.set()
        await asyncio.to_thread(live.stop)

    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT id::text AS id, content FROM context_item WHERE tenant_id = $1", keys.tenant_id)
    finally:
        await conn.close()
    stored = {r["id"]: r["content"] for r in rows}
    lost = [(key, ack) for key, ack in load.acked.items() if stored.get(ack[0]) != ack[1]]
    print(
        f"\nfaults survived: {pg.kills}; writes acknowledged: {len(load.acked)}; acknowledged writes lost: "
        f"{len(lost)}; failed attempts retried: {load.failures} {dict(load.outage)}"
    )
    assert pg.kills == FAULTS
    assert lost == []
    # Every stored item is one acknowledged write: no duplicate from a retried key, nothing unacknowledged.
    assert len(stored) == len(load.acked)
    assert Counter(stored.values()).most_common(1)[0][1] == 1
    assert load.unexpected == [], f"{load.unexpected[:5]}\nserver log:\n{unhandled(live)}"


def unhandled(live: LiveServer) -> str:
    """The server log's tracebacks of unhandled errors (what a 500 was)."""
    text = live.log_path.read_text(errors="replace")
    start = text.find("unhandled error")
    return text[start : start + 6000] if start >= 0 else live.log_tail()
