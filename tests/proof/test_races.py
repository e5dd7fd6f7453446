"""Races with real concurrency (issue #12, part 4): two ``ctxmem serve`` processes on one database, many
requests in flight at once, the servers' own outbox workers running.

- 100 writers on one slot: one active winner, the one the authority-then-recency rule picks, and all 100
  writes kept as history (one ``item.created`` event each).
- 20 replays of one Idempotency-Key at once: one item, one event, the same response to every replay.
- erasure racing writes and the outbox worker: every erasure answers 200 or 404, never a 5xx, no deadlock
  in either server's log; a final erasure leaves no row naming the user and the outbox drains.
- observations racing a decay run: every acknowledged observation is stored and counted in its entry
  (no lost update between the job's batches and the writes).
"""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import pytest

from tests.conftest import TenantKeys
from tests.helpers import USER_TABLES
from tests.proof.conftest import LIVE_ENV, ProofDatabase
from tests.proof.live import LiveServer, start_server

AUTHORITY_RANK = {"system": 5, "user": 4, "tool": 3, "summary": 2, "inferred": 1}
SOURCE_AUTHORITY = {"user": "user", "tool": "tool", "summary": "summary", "model": "inferred"}
BASE = datetime(2025, 6, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
async def second_live(
    proof_db: ProofDatabase, live: LiveServer, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LiveServer]:
    """A second server process on the same database (its own embedded vector index directory)."""
    server = await asyncio.to_thread(start_server, proof_db.url, tmp_path_factory.mktemp("live-b"), **LIVE_ENV)
    yield server
    await asyncio.to_thread(server.stop)


@pytest.fixture
async def clients(live: LiveServer, second_live: LiveServer) -> AsyncIterator[list[httpx.AsyncClient]]:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with (
        httpx.AsyncClient(base_url=live.base_url, timeout=120, limits=limits) as a,
        httpx.AsyncClient(base_url=second_live.base_url, timeout=120, limits=limits) as b,
    ):
        yield [a, b]


async def sql(proof_db: ProofDatabase, query: str, *args: Any) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(proof_db.url)
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()


def iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


async def test_100_writers_on_one_slot(
    clients: list[httpx.AsyncClient], live_tenant: TenantKeys, proof_db: ProofDatabase
) -> None:
    rng = random.Random(12)
    minutes = rng.sample(range(100_000), 100)  # distinct observed_at: recency decides within an authority
    writes = [
        {
            "type": "fact",
            "key": "home_city",
            "content": f"The user lives in city number {i}.",
            "source": rng.choice(["user", "tool", "model", "summary"]),
            "observed_at": iso(BASE + timedelta(minutes=minutes[i])),
        }
        for i in range(100)
    ]
    gate = asyncio.Event()

    async def write(i: int) -> httpx.Response:
        await gate.wait()
        return await clients[i % 2].post("/v1/users/slot-user/items", json=writes[i], headers=live_tenant.agent)

    tasks = [asyncio.create_task(write(i)) for i in range(100)]
    gate.set()
    responses = await asyncio.gather(*tasks)
    assert [r.status_code for r in responses] == [201] * 100, [r.text for r in responses if r.status_code != 201]

    winner = max(writes, key=lambda w: (AUTHORITY_RANK[SOURCE_AUTHORITY[w["source"]]], w["observed_at"]))
    r = await clients[0].get(
        "/v1/users/slot-user/items",
        params={"key": "home_city", "include_superseded": "true", "limit": 500},
        headers=live_tenant.agent,
    )
    history = r.json()["items"]
    assert len(history) == 100  # no lost history: every write is kept
    assert {i["content"] for i in history} == {w["content"] for w in writes}
    active = [i for i in history if i["status"] != "superseded"]
    assert [a["content"] for a in active] == [winner["content"]]
    by_id = {i["id"]: i for i in history}
    for item in history:  # every loser points along a chain of supersessions that ends at the winner
        seen = set()
        while item["status"] == "superseded":
            assert item["superseded_by"] in by_id, item
            assert item["id"] not in seen
            seen.add(item["id"])
            item = by_id[item["superseded_by"]]
        assert item["id"] == active[0]["id"]
    created = await sql(
        proof_db,
        "SELECT count(*) AS n FROM event WHERE tenant_id = $1 AND user_id = 'slot-user' AND action = 'item.created'",
        live_tenant.tenant_id,
    )
    assert created[0]["n"] == 100


async def test_20_replays_of_one_idempotency_key(
    clients: list[httpx.AsyncClient], live_tenant: TenantKeys, proof_db: ProofDatabase
) -> None:
    body = {"type": "fact", "content": "replayed write", "source": "user"}
    headers = {**live_tenant.agent, "Idempotency-Key": f"replay-{secrets.token_hex(4)}"}
    gate = asyncio.Event()

    async def replay(i: int) -> httpx.Response:
        await gate.wait()
        for _ in range(200):  # a replay that finds the first still running is told to retry (409)
            r = await clients[i % 2].post("/v1/users/replay-user/items", json=body, headers=headers)
            if r.status_code != 409:
                return r
            assert r.json()["type"] == "urn:ctxmem:problem:idempotency-in-progress"
            await asyncio.sleep(0.01)
        raise AssertionError("the first request with this key never finished")

    tasks = [asyncio.create_task(replay(i)) for i in range(20)]
    gate.set()
    responses = await asyncio.gather(*tasks)
    assert [r.status_code for r in responses] == [201] * 20
    assert len({r.content for r in responses}) == 1  # byte for byte the first response
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in responses) == 19
    rows = await sql(
        proof_db,
        "SELECT (SELECT count(*) FROM context_item WHERE tenant_id = $1 AND user_id = 'replay-user') AS items,"
        " (SELECT count(*) FROM event WHERE tenant_id = $1 AND user_id = 'replay-user') AS events",
        live_tenant.tenant_id,
    )
    assert (rows[0]["items"], rows[0]["events"]) == (1, 1)


async def test_erase_races_writes_and_the_outbox_worker(
    clients: list[httpx.AsyncClient],
    live_tenant: TenantKeys,
    proof_db: ProofDatabase,
    live: LiveServer,
    second_live: LiveServer,
) -> None:
    user = "victim.erase@example.com"
    statuses: list[int] = []
    bad: list[str] = []

    async def writer(w: int) -> None:
        for n in range(25):
            c = clients[(w + n) % 2]
            r = await c.post(
                f"/v1/users/{user}/items",
                json={"type": "fact", "content": f"writer {w} fact {n}"},
                headers={**live_tenant.agent, "Idempotency-Key": f"w{w}-{n}-{secrets.token_hex(2)}"},
            )
            statuses.append(r.status_code)
            if r.status_code == 201 and n % 3 == 0:  # deletes give the worker tombstones to apply
                d = await c.delete(f"/v1/users/{user}/items/{r.json()['id']}", headers=live_tenant.agent)
                statuses.append(d.status_code)
                if d.status_code not in (200, 404):
                    bad.append(d.text)
            elif r.status_code != 201:
                bad.append(r.text)

    async def eraser(e: int) -> None:
        for n in range(15):
            r = await clients[(e + n) % 2].delete(
                f"/v1/users/{user}",
                headers={**live_tenant.admin, "Idempotency-Key": f"erase-{e}-{n}-{secrets.token_hex(2)}"},
            )
            statuses.append(r.status_code)
            if r.status_code not in (200, 404):
                bad.append(r.text)
            await asyncio.sleep(0)

    await asyncio.gather(*(writer(w) for w in range(8)), *(eraser(e) for e in range(3)))
    assert not bad, bad[:5]
    assert all(s < 500 for s in statuses)
    final = await clients[0].delete(f"/v1/users/{user}", headers=live_tenant.admin)
    assert final.status_code in (200, 404), final.text

    for table in USER_TABLES:
        n = await sql(
            proof_db,
            f"SELECT count(*) AS n FROM {table} WHERE tenant_id = $1 AND user_id = $2",
            live_tenant.tenant_id,
            user,
        )
        assert n[0]["n"] == 0, table
    leftovers = await sql(
        proof_db,
        "SELECT count(*) AS n FROM idempotency_record WHERE tenant_id = $1 AND path LIKE '%' || $2 || '%'",
        live_tenant.tenant_id,
        user,
    )
    assert leftovers[0]["n"] == 0  # no request path naming the erased user survives
    await wait_outbox_drained(proof_db, live_tenant.tenant_id)
    for server in (live, second_live):
        log = server.log_path.read_text(errors="replace")
        assert "Deadlock" not in log and "deadlock" not in log, server.log_tail()


async def wait_outbox_drained(proof_db: ProofDatabase, tenant_id: str) -> None:
    """The servers' workers apply every change of the tenant (polled; bounded by a count, not a clock)."""
    for _ in range(600):
        rows = await sql(
            proof_db,
            "SELECT count(*) AS n FROM vector_outbox WHERE tenant_id = $1 AND dead_at IS NULL",
            tenant_id,
        )
        if rows[0]["n"] == 0:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{rows[0]['n']} outbox changes still pending")


async def test_observations_race_a_decay_run(
    clients: list[httpx.AsyncClient], live_tenant: TenantKeys, proof_db: ProofDatabase
) -> None:
    users = [f"decay-{i}" for i in range(4)]
    keys = [f"k{i}" for i in range(10)]
    # Old evidence first, so that a run as of 2027 finds every entry silent for its whole period.
    seed_obs = [
        {
            "dimension": "preference",
            "key": k,
            "value": "yes",
            "session_id": f"s{s}",
            "context": f"c{s}",
            "observed_at": iso(BASE + timedelta(days=s)),
        }
        for k in keys
        for s in range(3)
    ]
    for u in users:
        r = await clients[0].post(
            f"/v1/users/{u}/observations/batch", json={"observations": seed_obs}, headers=live_tenant.agent
        )
        assert r.status_code == 201, r.text
    acked: list[tuple[str, str]] = []

    async def observer(w: int) -> None:
        rng = random.Random(w)
        for n in range(30):
            u, k = rng.choice(users), rng.choice(keys)
            obs = {
                "dimension": "preference",
                "key": k,
                "value": "yes",
                "session_id": f"live-{w}-{n}",
                "stance": rng.choice(["supports", "contradicts"]),
                "observed_at": iso(BASE + timedelta(days=30, minutes=w * 100 + n)),
            }
            r = await clients[n % 2].post(f"/v1/users/{u}/observations", json=obs, headers=live_tenant.agent)
            assert r.status_code == 201, r.text
            acked.append((u, k))

    async def decay() -> list[dict[str, Any]]:
        runs = []
        for n in range(6):
            r = await clients[n % 2].post(
                "/v1/jobs/decay/run", json={"now": "2027-06-01T00:00:00Z"}, headers=live_tenant.admin
            )
            assert r.status_code in (200, 409), r.text  # 409: the other process holds this job's lock
            if r.status_code == 200:
                runs.append(r.json())
        return runs

    *_, runs = await asyncio.gather(*(observer(w) for w in range(6)), decay())
    assert runs and all(run["status"] == "succeeded" for run in runs), runs
    # Every entry was silent for its whole period as of 2027: the runs decayed each of them (once at least).
    assert sum(sum(run["rows"].values()) for run in runs) >= len(users) * len(keys), runs
    rows = await sql(
        proof_db,
        """
        SELECT e.user_id, e.key, e.evidence_count, e.last_evidence_at,
               count(o.id) AS observations, max(o.observed_at) AS newest
        FROM profile_entry e JOIN observation o ON o.entry_id = e.id
        WHERE e.tenant_id = $1
        GROUP BY e.id
        """,
        live_tenant.tenant_id,
    )
    assert len(rows) == len(users) * len(keys)
    expected = {(u, k): 3 for u in users for k in keys}
    for pair in acked:
        expected[pair] += 1
    for row in rows:
        # No lost update: the entry counts every observation stored for it, as many as were acknowledged.
        assert row["observations"] == expected[(row["user_id"], row["key"])], dict(row)
        assert row["evidence_count"] == row["observations"], dict(row)
        assert row["last_evidence_at"] == row["newest"], dict(row)
