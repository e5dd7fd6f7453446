"""Every query the service sends carries Citus's distribution key (docs/citus.md), checked against the
real query log of a PostgreSQL server of the test's own.

The server logs every statement (``log_statement = 'all'`` on the test's database, JSON log lines with
the bound parameters); a workload calls every API route of ``MATRIX`` (the route matrix), the console's
pages, the outbox worker and every job — once for one tenant through the API, once over all tenants as
the scheduler runs them. Each logged statement that names a distributed table is parsed
(tests/db/distribution.py) and must pin every distributed table to one ``tenant_id``; the exceptions
are ``ALLOWED`` below, each with its reason, and an exception no statement needs any more fails too.
"""

from __future__ import annotations

import re
import secrets
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pglast import ast, parse_sql
from pglast.ast import FuncCall, SelectStmt

from jobs.runner import run_job
from schemas.jobs import JOB_NAMES
from service.app import create_app
from service.clock import Clock
from service.db import migrate
from service.db.engine import create_database
from service.db.models import metadata
from service.settings import Settings
from service.vectors.recall import build_recall
from tests.conftest import TenantKeys, make_tenant
from tests.db.distribution import Checker, bind, parameters
from tests.proof.conftest import fresh_database
from tests.proof.pgserver import PgServer
from tests.proof.querylog import log_statements, logged, logging_server
from tests.proof.test_route_matrix import MATRIX, seed_user, url_of
from tests.service.console.conftest import csrf_of, signed_in
from tests.service.extraction.llm_standin import LlmStandIn, serve

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "docs" / "citus.md"
# The phase marker: statements logged after it are the global job runs (the scheduler's sweeps).
SWEEPS = "ctxmem-citus-check: global sweeps"

# Statements that do not pin every distributed table to one tenant, each with why and what it costs on
# Citus. Key: a piece of the statement's text (whitespace collapsed). docs/citus.md lists the changes the
# ones marked "to change" need before a Citus deployment; none of them is wrong on one PostgreSQL.
_WORKER = "the outbox worker applies a batch of changes of any tenants"
_BATCH = (
    f"{_WORKER}, several tenants' in one batch: a multi-shard statement that Citus sends to the batch's tenants' "
    "shards only, without row locks, by design"
)
ALLOWED: dict[str, str] = {
    "SELECT tenant_id FROM (SELECT tenant_id, id FROM vector_outbox": f"{_WORKER}: which tenants the oldest due "
    "changes belong to, before it claims from each with the tenant pinned (FOR UPDATE SKIP LOCKED on one shard): "
    "a plain multi-shard read without row locks, by design",
    # A batch of one tenant's changes pins it (tenant_id = $1); one of several tenants' changes is applied
    # with one statement per step for the batch, kept to its tenants (tenant_id = ANY(…)).
    "DELETE FROM vector_outbox WHERE tenant_id = ANY(": f"{_BATCH}: the applied changes retired",
    "FROM context_item WHERE tenant_id = ANY(": f"{_BATCH}: the items read for the vector index",
    "INSERT INTO item_search (item_id, tenant_id, user_id, tsv, expires_at) SELECT": f"{_BATCH}: the lexical "
    "index's upsert, a co-located INSERT … SELECT (tenant_id into tenant_id) whose conflict target is the key "
    "(item_id, tenant_id)",
    "DELETE FROM item_search s WHERE s.tenant_id = ANY(": f"{_BATCH}: the lexical index's delete, its NOT EXISTS "
    "joined on tenant_id (co-located)",
    "count(*) FILTER (WHERE dead_at IS NULL) AS pending": "the outbox's lag over every tenant (/readyz, /metrics, "
    "the worker's gauge, a degraded window's warning): a multi-shard count, by design",
    "UPDATE vector_outbox SET dead_at = NULL": "the reindex job revives every tenant's dead letters and applies the "
    "whole outbox, also when an admin runs it for one tenant: multi-shard, by design",
}
# pgvector's table (service/vectors/pgvector.py), written by the outbox worker and read by searches.
PGVECTOR_ALLOWED: dict[str, str] = {
    "DELETE FROM item_vector WHERE item_id = ANY(": f"{_WORKER}: its points are removed on every shard",
    "SELECT count(*) FROM item_vector": "/readyz counts every tenant's points: a multi-shard count, by design",
    "SELECT tenant_id, user_id, id, 'sync', now(), now() FROM context_item WHERE status = ANY(": "the pgvector "
    "index's first start queues every tenant's active items for it: one multi-shard statement, once",
    "INSERT INTO item_vector (item_id, tenant_id, user_id, type, status, domain, embedding) SELECT": "pgvector's "
    "upsert: its conflict target (item_id) is a key without tenant_id, which Citus does not allow — to change "
    "(service/vectors/pgvector.py): key and target (item_id, tenant_id), as item_search's (migration 0014)",
}
# Tables made at run time rather than by a migration, and what makes them.
RUNTIME_TABLES = {"item_vector": "the pgvector index creates it on its first start (service/vectors/pgvector.py)"}
# The same jobs run by the scheduler (no tenant) sweep every tenant; their tenant-scoped twins (POST
# /v1/jobs/{name}/run, above) are checked like any request.
_SWEEP = "a global job run sweeps every tenant"
SWEEP_ALLOWED: dict[str, str] = {
    # A global run reads its per-tenant counts once (the progress total and the tenants it sweeps), then
    # sweeps tenant by tenant with the tenant-scoped statements, which pass the check.
    "SELECT i.tenant_id, count(*) FROM context_item i WHERE i.status IN": f"{_SWEEP}: the expire job's items per "
    "tenant, a multi-shard count",
    "SELECT e.tenant_id, count(*) FROM profile_entry e WHERE e.status <> 'expired'": f"{_SWEEP}: the expire job's "
    "entries per tenant",
    "SELECT e.tenant_id, count(*) FROM profile_entry e WHERE e.status IN": f"{_SWEEP}: the decay job's entries per "
    "tenant",
    "SELECT e.tenant_id, count(*) FROM profile_entry e WHERE e.tier = 'candidate'": f"{_SWEEP}: the promote job's "
    "candidates per tenant",
    "SELECT i.tenant_id, count(*) FROM context_item i WHERE i.status = 'deleted'": f"{_SWEEP}: the purge job's "
    "tombstones per tenant",
    "SELECT r.tenant_id, count(*) FROM idempotency_record r": f"{_SWEEP}: the purge job's stored responses per tenant",
    "SELECT tenant_id, user_id, session_id, count(*) AS waiting FROM conversation_message": f"{_SWEEP}: the "
    "extract job's sessions due, grouped by tenant (pushed down to each shard); each is then extracted with "
    "tenant-scoped statements",
    # The reindex job is the outbox worker's drain: the entries of ALLOWED above.
}


def distribution_plan() -> tuple[dict[str, str], set[str]]:
    """The plan of docs/citus.md: {distributed table: colocate_with} and the reference tables, read from
    its SQL (``create_distributed_table`` / ``create_reference_table`` calls)."""
    text = PLAN.read_text()
    blocks = re.findall(r"```sql\n(.*?)```", text, flags=re.S)
    distributed: dict[str, str] = {}
    reference: set[str] = set()
    for block in blocks:
        for raw in parse_sql(block):
            stmt = raw.stmt
            if not isinstance(stmt, SelectStmt) or not stmt.targetList:
                continue
            for target in stmt.targetList:
                call = target.val
                if not isinstance(call, FuncCall):
                    continue
                name = call.funcname[-1].sval
                args = [a for a in call.args or () if not hasattr(a, "argnumber")]
                values = [getattr(getattr(a, "val", None), "sval", None) for a in args]
                named = {a.name: a.arg.val.sval for a in call.args or () if hasattr(a, "argnumber")}
                if name == "create_distributed_table":
                    distributed[values[0]] = named.get("colocate_with", "")
                    assert values[1] == "tenant_id", f"{values[0]} is distributed by {values[1]}"
                elif name == "create_reference_table":
                    reference.add(values[0])
    return distributed, reference


def test_the_plan_places_every_table() -> None:
    distributed, reference = distribution_plan()
    tables = set(metadata.tables) | set(RUNTIME_TABLES)
    assert distributed.keys() | reference == tables, "docs/citus.md must place every table of the schema"
    assert not distributed.keys() & reference
    # One co-location group: every distributed table co-located with end_user, so joins on tenant_id stay
    # on one shard.
    anchor = [t for t, colocate in distributed.items() if colocate in ("", "default")]
    assert anchor == ["end_user"], anchor
    assert all(c == "end_user" for t, c in distributed.items() if t != "end_user")
    # Every distributed table has the column; every unique constraint and primary key of a distributed
    # table must include it once the migration path is applied (docs/citus.md lists the ones to widen).
    for name in distributed.keys() - RUNTIME_TABLES.keys():
        assert "tenant_id" in metadata.tables[name].c, name


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("SELECT * FROM context_item WHERE id = $1", "context_item not pinned"),
        ("SELECT * FROM context_item c JOIN item_search s ON s.item_id = c.id WHERE c.tenant_id = 'a'", "item_search"),
        ("DELETE FROM event WHERE tenant_id = ANY('{a,b}')", "event not pinned"),
        ("INSERT INTO event (id, user_id) VALUES (1, 'u')", "INSERT INTO event without tenant_id"),
        ("UPDATE context_item c SET x = 1 WHERE (CAST(NULL AS text) IS NULL OR c.tenant_id = CAST(NULL AS text))", "c"),
        (
            "SELECT 1 FROM profile_entry e WHERE e.tenant_id = 'a' AND EXISTS (SELECT 1 FROM observation o "
            "WHERE o.entry_id = e.id)",
            "observation (as o) not pinned",
        ),
        ("SELECT * FROM end_user WHERE (tenant_id, user_id) IN (('a', 'u'), ('b', 'v'))", "end_user not pinned"),
    ],
)
def test_the_check_finds_a_statement_without_the_key(sql: str, problem: str) -> None:
    distributed, _ = distribution_plan()
    problems = Checker(set(distributed)).problems(sql)
    assert problems and any(problem in p for p in problems), problems


def conflict_problems(sql: str, distributed: set[str]) -> list[str]:
    """An ``INSERT … ON CONFLICT (columns)`` into a distributed table whose target lacks ``tenant_id``: Citus
    requires every unique key of a distributed table to include its distribution column, so no key can
    match such a target there (the statement check above reads conditions, not conflict targets)."""
    out: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, list | tuple):
            for n in node:
                walk(n)
        elif isinstance(node, ast.Node):
            if isinstance(node, ast.InsertStmt) and node.relation.relname in distributed:
                infer = node.onConflictClause.infer if node.onConflictClause is not None else None
                columns = [e.name for e in (infer.indexElems or ()) if e.name] if infer is not None else []
                if columns and "tenant_id" not in columns:
                    out.append(f"ON CONFLICT ({', '.join(columns)}) on {node.relation.relname} without tenant_id")
            for slot in node:
                walk(getattr(node, slot))

    for raw in parse_sql(sql):
        walk(raw.stmt)
    return out


@pytest.mark.parametrize(
    ("sql", "found"),
    [
        ("INSERT INTO item_search (item_id, tenant_id) VALUES ($1, $2) ON CONFLICT (item_id) DO NOTHING", True),
        ("WITH x AS (INSERT INTO event (id, tenant_id) VALUES (1, 'a') ON CONFLICT (id) DO NOTHING) SELECT 1", True),
        (
            "INSERT INTO item_search (item_id, tenant_id) VALUES ($1, $2) ON CONFLICT (item_id, tenant_id) DO NOTHING",
            False,
        ),
        ("INSERT INTO end_user (tenant_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", False),
        ("INSERT INTO job_run (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", False),  # a reference table
    ],
)
def test_the_check_finds_a_conflict_target_without_the_key(sql: str, found: bool) -> None:
    distributed, _ = distribution_plan()
    assert bool(conflict_problems(sql, set(distributed))) is found


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM context_item WHERE tenant_id = $1 AND id = $2",
        "SELECT * FROM context_item c JOIN item_search s ON s.item_id = c.id AND s.tenant_id = c.tenant_id "
        "WHERE c.tenant_id = 'a'",
        "UPDATE context_item c SET x = 1 WHERE (CAST('a' AS text) IS NULL OR c.tenant_id = CAST('a' AS text))",
        "WITH x AS (UPDATE context_item SET a = 1 WHERE tenant_id = 'a' RETURNING *) "
        "INSERT INTO event (tenant_id) SELECT tenant_id FROM x",
        "SELECT 1 FROM profile_entry e WHERE e.tenant_id = 'a' AND EXISTS (SELECT 1 FROM observation o "
        "WHERE o.entry_id = e.id AND o.tenant_id = e.tenant_id)",
        "SELECT * FROM end_user WHERE (tenant_id, user_id) = ('a', 'u')",
        "SELECT * FROM api_key WHERE secret_hash = 'h'",  # a reference table
    ],
)
def test_the_check_passes_a_statement_with_the_key(sql: str) -> None:
    distributed, _ = distribution_plan()
    assert Checker(set(distributed)).problems(sql) == []


# -- the workload against a logging server -------------------------------------------------------------


@pytest.fixture(scope="module")
async def server() -> AsyncIterator[PgServer]:
    async with logging_server() as pg:
        yield pg


async def _workload(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    """Every API route (the route matrix's rows, as an admin: allowed everywhere), and the console's pages
    before the user is erased."""
    seed = await seed_user(client, tenant)
    h = tenant.admin
    # More of what a real session sends: turns of a conversation, a window of that session, a replayed
    # idempotent write, a batch of observations in another session (so an entry has sessions to count).
    turns = {"messages": [{"role": "user", "content": f"turn {i} about emacs"} for i in range(4)]}
    assert (await client.post(f"/v1/users/{seed.user}/sessions/s2/messages", json=turns, headers=h)).status_code == 201
    window = {"input": "what editor?", "max_tokens": 400, "session_id": "s2"}
    assert (await client.post(f"/v1/users/{seed.user}/window", json=window, headers=h)).status_code == 200
    idem = {**h, "Idempotency-Key": secrets.token_hex(8)}
    for _ in range(2):
        r = await client.post(f"/v1/users/{seed.user}/items", json={"type": "fact", "content": "again"}, headers=idem)
        assert r.status_code == 201, r.text
    obs = {"dimension": "preference", "key": "editor", "value": "emacs", "session_id": "s3", "explicit": True}
    assert (await client.post(f"/v1/users/{seed.user}/observations", json=obs, headers=h)).status_code == 201
    expiring = {"type": "fact", "content": "short-lived", "expires_at": "2000-01-01T00:00:00Z"}
    assert (await client.post(f"/v1/users/{seed.user}/items", json=expiring, headers=h)).status_code == 201

    rows = sorted(MATRIX.items(), key=lambda kv: (kv[0][0] == "DELETE", kv[0][1] == "/v1/users/{user_id}", kv[0]))
    for (method, path), row in rows:
        if path == "/v1/jobs/{name}/run":
            for name in JOB_NAMES:  # every job, for this tenant
                r = await client.post(f"/v1/jobs/{name}/run", json={}, headers=h)
                assert r.status_code == row.ok, (name, r.text)
            continue
        if path == "/v1/users/{user_id}":
            await _console(client, tenant, seed.user, seed.entry_id)
        body = row.body(seed) if row.body else None
        r = await client.request(method, url_of(path, seed), json=body, headers=h)
        assert r.status_code == row.ok, (method, path, r.status_code, r.text[:300])


async def _llm_extraction(settings: Settings, db: Any, recall: Any, tenant: TenantKeys) -> None:
    """Extraction with the ``llm`` extractor (against the chat-completions stand-in): what a language model
    spent is counted per tenant and day (``extraction_usage``), which the rules never touch."""
    with serve(LlmStandIn()) as url:
        app = create_app(
            settings.replace(extractor="llm", extractor_url=url, extractor_model="m"), database=db, vectors=recall
        )
        try:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test") as c:
                body = {"messages": [{"role": "user", "content": "I like green tea."}], "session_id": "s4"}
                r = await c.post("/v1/users/llm-user/extract", json=body, headers=tenant.admin)
                assert r.status_code == 200, r.text
                assert r.json()["records"], r.text
        finally:
            await app.state.extractor.close()


async def _console(client: httpx.AsyncClient, tenant: TenantKeys, user: str, entry_id: str) -> None:
    csrf = await signed_in(client, tenant.admin)
    for page in (
        "/console/",
        f"/console/users/{user}",
        f"/console/users/{user}/entries/{entry_id}",
        f"/console/users/{user}/window?input=editor&budget_a=300&budget_b=1200",
        f"/console/users/{user}/timeline",
        "/console/jobs",
        f"/console/users/{user}/erase",
    ):
        r = await client.get(page)
        assert r.status_code == 200, (page, r.text[:300])
    r = await client.post(f"/console/users/{user}/entries/{entry_id}/confirm", data={"csrf_token": csrf})
    assert r.status_code == 303, r.text[:300]
    r = await client.post("/console/jobs/expire/run", data={"csrf_token": await csrf_of(client, "/console/jobs")})
    assert r.status_code == 303, r.text[:300]
    r = await client.post("/console/sign-out", data={"csrf_token": await csrf_of(client, "/console/")})
    assert r.status_code == 303, r.text[:300]


@pytest.mark.parametrize("backend", ["edge", "pgvector"])
async def test_every_statement_carries_the_distribution_key(server: PgServer, tmp_path: Path, backend: str) -> None:
    """With each vector index that keeps its state where ctxmem does: the embedded one (edge: no SQL of its
    own) and pgvector (a table in the service's PostgreSQL: the default with several workers)."""
    distributed, _ = distribution_plan()
    checker = Checker(set(distributed))
    url = await fresh_database(server.url(), "ctxmem_citus")
    settings = Settings(
        database_url=url,
        data_dir=tmp_path,
        tokenizer="estimate",
        vector_backend=backend,
        vector_build_threshold=0,
        rate_limit_per_second=0,
    )
    db = create_database(url, settings)
    await migrate.upgrade(db.engine)  # not logged: the migration path is DDL, docs/citus.md
    await db.dispose()
    await log_statements(server, url)

    recall = await build_recall(db, settings)
    assert recall is not None
    try:
        app = create_app(settings, database=db, vectors=recall)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.test") as client:
            tenant = await make_tenant(db)
            await _workload(client, tenant)
            await _llm_extraction(settings, db, recall, tenant)
            # Changes of two tenants due together: the worker's statements for a batch of several tenants.
            other = await make_tenant(db)
            for keys in (other, tenant):
                item = {"type": "fact", "content": "applied in one batch"}
                r = await client.post("/v1/users/batch-mate/items", json=item, headers=keys.admin)
                assert r.status_code == 201, r.text
            while await recall.worker.drain_once() > 0:  # the outbox worker, as the API process runs it
                pass
            async with db.engine.connect() as conn:
                await conn.exec_driver_sql(f"SELECT '{SWEEPS}'")
            for job in JOB_NAMES:  # as the scheduler runs them: every tenant
                result = await run_job(
                    job, db=db, settings=settings, clock=Clock(), trigger="scheduler", vectors=recall
                )
                assert result.status == "succeeded", (job, result.error)
    finally:
        await recall.index.close()
        await recall.embedder.close()
        await db.dispose()
    found = await logged(server, url)
    marks = [i for i, entry in enumerate(found) if SWEEPS in entry.sql]
    assert len(marks) == 1, "the phase marker was not logged once"

    touched: set[str] = set()
    offenders: dict[str, set[str]] = defaultdict(set)  # statement (collapsed) -> problems
    sweeps: dict[str, set[str]] = defaultdict(set)
    checked = 0
    for i, entry in enumerate(found):
        if i == marks[0]:
            continue
        tables = checker.touches(entry.sql)
        if not tables:
            continue
        checked += 1
        touched |= tables
        problems = checker.problems(bind(entry.sql, parameters(entry.detail)))
        problems += conflict_problems(entry.sql, checker.distributed_tables)
        if problems:
            (sweeps if i > marks[0] else offenders)[" ".join(entry.sql.split())].update(problems)

    assert checked > 100, checked
    expected = set(distributed) - (set() if backend == "pgvector" else set(RUNTIME_TABLES))
    assert touched == expected, f"the workload never touched {expected - touched}"
    allowed_here = {**ALLOWED, **(PGVECTOR_ALLOWED if backend == "pgvector" else {})}
    for phase, found, allowed in (
        ("requests", offenders, allowed_here),
        ("global job runs", sweeps, {**allowed_here, **SWEEP_ALLOWED}),
    ):
        unexplained = {sql: p for sql, p in found.items() if not any(key in sql for key in allowed)}
        assert not unexplained, f"{phase}: statements without the distribution key:\n" + "\n".join(
            f"- {sorted(p)}: {sql}" for sql, p in sorted(unexplained.items())
        )
    stale = [key for key in allowed_here if not any(key in sql for sql in offenders)]
    stale += [key for key in SWEEP_ALLOWED if not any(key in sql for sql in sweeps)]
    assert not stale, f"allowed exceptions no statement needs any more: {stale}"
    print(f"{checked} statements checked; {len(offenders)} + {len(sweeps)} allowed multi-shard statements")
