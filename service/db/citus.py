"""Distributing ctxmem's tables on a Citus cluster (``ctxmem citus distribute``; docs/citus.md).

The plan is data: which tables are reference tables, which are distributed by ``tenant_id`` co-located with
``end_user`` (in foreign-key order), whose keys are widened to lead with ``tenant_id`` first, and which SQL
functions the shards call. :func:`distribution_sql` renders all of it as one script (docs/citus.md shows it,
a test holds the two equal); :func:`pending` reads the catalogs and returns only the statements a database
still needs, so running the command again does nothing, and a table that does not exist yet (``item_vector``,
made by the pgvector index on its first start) is left for a later run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KEY = "tenant_id"
ANCHOR = "end_user"
# Small, read by id or by a hash before the tenant is known: one copy on every node.
REFERENCE_TABLES = ("tenant", "api_key", "console_session", "job_run")
# In the order they are distributed: the anchor, then each table after the ones its foreign keys point at.
DISTRIBUTED_TABLES = (
    "end_user",
    "context_item",
    "item_search",
    "profile_entry",
    "observation",
    "conversation_message",
    "idempotency_record",
    "extraction_usage",
    "vector_outbox",
    "item_vector",
    "event",
)
# Tables no migration makes: distributed once they exist, skipped (and reported) until then.
OPTIONAL_TABLES = {"item_vector": "the pgvector index's table, made when an API process first starts on it"}
# Citus distributes a table with triggers only with this on; event's trigger (event_append_only) rejects
# every UPDATE and reads no other table, so it is right on each shard.
TRIGGER_TABLES = ("event",)
UNSAFE_TRIGGERS = "SET LOCAL citus.enable_unsafe_triggers = on;"


@dataclass(frozen=True)
class WidenedKey:
    """A primary key that must lead with the distribution column: ``(tenant_id, column)``."""

    table: str
    name: str
    column: str


@dataclass(frozen=True)
class TenantForeignKey:
    """A foreign key between distributed tables, which must match ``tenant_id`` on both sides. Citus cannot
    distribute a table that a table not yet distributed points at, so these are dropped first and made again
    once every table is distributed."""

    table: str
    name: str
    column: str
    references: str
    referenced: str
    cascade: bool


WIDENED_KEYS = (
    WidenedKey("context_item", "pk_context_item", "id"),
    WidenedKey("profile_entry", "pk_profile_entry", "id"),
    WidenedKey("observation", "pk_observation", "id"),
    WidenedKey("event", "pk_event", "id"),
    WidenedKey("conversation_message", "pk_conversation_message", "id"),
    WidenedKey("vector_outbox", "pk_vector_outbox", "id"),
    WidenedKey("item_vector", "item_vector_pkey", "item_id"),
)
TENANT_FOREIGN_KEYS = (
    TenantForeignKey("context_item", "fk_context_item_end_user", "user_id", "end_user", "user_id", cascade=False),
    TenantForeignKey("profile_entry", "fk_profile_entry_end_user", "user_id", "end_user", "user_id", cascade=False),
    TenantForeignKey(
        "conversation_message", "fk_conversation_message_end_user", "user_id", "end_user", "user_id", cascade=False
    ),
    # These two pointed at the id alone: made again with tenant_id on both sides.
    TenantForeignKey("observation", "fk_observation_entry_id_profile_entry", "entry_id", "profile_entry", "id", True),
    TenantForeignKey("item_search", "fk_item_search_item_id_context_item", "item_id", "context_item", "id", True),
)
# Statements pushed down to the shards call these, so the workers need them.
FUNCTIONS = ("ctxmem_uuid7()", "ctxmem_tsv(text)", "ctxmem_tsq(text)")


class CitusError(Exception):
    """Something the distribution step cannot do by itself; the message says what to do."""


def widen_key_sql(key: WidenedKey) -> str:
    return (
        f"ALTER TABLE {key.table} DROP CONSTRAINT {key.name}, "
        f"ADD CONSTRAINT {key.name} PRIMARY KEY ({KEY}, {key.column});"
    )


def drop_foreign_key_sql(fk: TenantForeignKey) -> str:
    return f"ALTER TABLE {fk.table} DROP CONSTRAINT {fk.name};"


def add_foreign_key_sql(fk: TenantForeignKey) -> str:
    cascade = " ON DELETE CASCADE" if fk.cascade else ""
    return (
        f"ALTER TABLE {fk.table} ADD CONSTRAINT {fk.name} FOREIGN KEY ({KEY}, {fk.column}) "
        f"REFERENCES {fk.references} ({KEY}, {fk.referenced}){cascade};"
    )


def function_sql(signature: str) -> str:
    return f"SELECT create_distributed_function('{signature}');"


def reference_sql(table: str) -> str:
    return f"SELECT create_reference_table('{table}');"


def distributed_sql(table: str) -> str:
    colocate = "" if table == ANCHOR else f", colocate_with => '{ANCHOR}'"
    return f"SELECT create_distributed_table('{table}', '{KEY}'{colocate});"


@dataclass
class State:
    """What the catalogs of a database say, as far as the plan cares."""

    tables: set[str]
    reference: set[str]
    distributed: set[str]
    primary_keys: dict[str, list[str]]  # table -> columns of its primary key
    foreign_keys: dict[str, list[str]]  # constraint name -> its columns
    functions: set[str]  # signatures already distributed


# One transaction: a failure leaves the database as it was, and the command can be run again.
BEGIN = ("BEGIN;", "SET LOCAL citus.multi_shard_modify_mode TO 'sequential';")
COMMIT = "COMMIT;"


@dataclass
class Plan:
    statements: list[str]  # run in one transaction, in this order
    skipped: dict[str, str]  # optional table -> why it is left for a later run


def plan(state: State) -> Plan:
    """The statements ``state`` still needs, in the order they must run: the foreign keys between distributed
    tables dropped (when a table of theirs is still to be distributed), the keys widened, the functions, the
    reference tables, the distributed ones, the foreign keys made again."""
    skipped = {t: why for t, why in OPTIONAL_TABLES.items() if t not in state.tables}
    fk_tables = {t for fk in TENANT_FOREIGN_KEYS for t in (fk.table, fk.references)}
    redo = any(t not in state.distributed for t in fk_tables) or any(
        state.foreign_keys.get(fk.name, [])[:1] != [KEY] for fk in TENANT_FOREIGN_KEYS
    )
    out = [drop_foreign_key_sql(fk) for fk in TENANT_FOREIGN_KEYS if redo and fk.name in state.foreign_keys]
    out += [
        widen_key_sql(k)
        for k in WIDENED_KEYS
        if k.table not in skipped and state.primary_keys.get(k.table, [])[:1] != [KEY]
    ]
    out += [function_sql(f) for f in FUNCTIONS if f not in state.functions]
    out += [reference_sql(t) for t in REFERENCE_TABLES if t not in state.reference]
    for table in DISTRIBUTED_TABLES:
        if table in skipped or table in state.distributed:
            continue
        if table in TRIGGER_TABLES:
            out.append(UNSAFE_TRIGGERS)
        out.append(distributed_sql(table))
    out += [add_foreign_key_sql(fk) for fk in TENANT_FOREIGN_KEYS if redo]
    return Plan(out, skipped)


def distribution_sql() -> str:
    """The whole distribution of a database at the schema's head with every table present (the pgvector
    table too), as one script: what docs/citus.md shows, and what :func:`distribute` runs on such a database
    where none of it is done yet."""
    names = set(DISTRIBUTED_TABLES) | set(REFERENCE_TABLES)
    full = plan(State(names, set(), set(), {}, {fk.name: [fk.column] for fk in TENANT_FOREIGN_KEYS}, set()))
    return "\n".join([*BEGIN, *full.statements, COMMIT]) + "\n"


_STATE_SQL = {
    "tables": "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p') "
    "AND relnamespace = 'public'::regnamespace AND relname = ANY($1::text[])",
    "partitions": "SELECT logicalrelid::regclass::text AS name, partmethod::text FROM pg_dist_partition",
    "primary_keys": "SELECT c.conrelid::regclass::text AS name, "
    "array_agg(a.attname::text ORDER BY k.n) AS columns FROM pg_constraint c "
    "CROSS JOIN unnest(c.conkey) WITH ORDINALITY AS k(attnum, n) "
    "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum "
    "WHERE c.contype = 'p' AND c.conrelid::regclass::text = ANY($1::text[]) GROUP BY c.conrelid",
    "foreign_keys": "SELECT c.conname::text AS name, array_agg(a.attname::text ORDER BY k.n) AS columns "
    "FROM pg_constraint c CROSS JOIN unnest(c.conkey) WITH ORDINALITY AS k(attnum, n) "
    "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum "
    "WHERE c.contype = 'f' AND c.conname = ANY($1::text[]) GROUP BY c.conname",
    "functions": "SELECT p.oid::regprocedure::text AS signature FROM pg_dist_object o "
    "JOIN pg_proc p ON o.classid = 'pg_proc'::regclass AND o.objid = p.oid",
}


async def read_state(conn: Any) -> State:
    """The catalogs' view of the plan, on an asyncpg connection to the coordinator."""
    names = [*REFERENCE_TABLES, *DISTRIBUTED_TABLES]
    partitions = await conn.fetch(_STATE_SQL["partitions"])
    return State(
        tables={r["relname"] for r in await conn.fetch(_STATE_SQL["tables"], names)},
        reference={r["name"] for r in partitions if r["partmethod"] == "n"},
        distributed={r["name"] for r in partitions if r["partmethod"] == "h"},
        primary_keys={r["name"]: list(r["columns"]) for r in await conn.fetch(_STATE_SQL["primary_keys"], names)},
        foreign_keys={
            r["name"]: list(r["columns"])
            for r in await conn.fetch(_STATE_SQL["foreign_keys"], [fk.name for fk in TENANT_FOREIGN_KEYS])
        },
        functions={r["signature"] for r in await conn.fetch(_STATE_SQL["functions"])},
    )


async def check(conn: Any) -> list[tuple[str, int]]:
    """Raise :class:`CitusError` unless ``conn`` is a Citus coordinator with active workers that answer and a
    migrated ctxmem schema; returns the workers (host, port)."""
    version = await conn.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'citus'")
    if version is None:
        raise CitusError(
            "Citus is not installed in this database: add citus to shared_preload_libraries and run "
            "CREATE EXTENSION citus in this database on the coordinator and on every worker"
        )
    if not await conn.fetchval("SELECT citus_is_coordinator()"):
        raise CitusError(
            "this database is not a Citus coordinator (no coordinator in pg_dist_node): "
            "run SELECT citus_set_coordinator_host('<host>', <port>) here, then citus_add_node for each worker"
        )
    workers = [
        (r["nodename"], r["nodeport"])
        for r in await conn.fetch(
            "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' "
            "AND isactive ORDER BY nodeid"
        )
    ]
    if not workers:
        raise CitusError(
            "no worker is registered: create this database and CREATE EXTENSION citus on each worker, then "
            "run SELECT citus_add_node('<host>', <port>) here for each"
        )
    failed = await conn.fetch(
        "SELECT nodename, nodeport, result FROM run_command_on_workers("
        "$$SELECT extversion FROM pg_extension WHERE extname = 'citus'$$) WHERE NOT success OR result = ''"
    )
    if failed:
        where = ", ".join(f"{r['nodename']}:{r['nodeport']} ({r['result'] or 'no citus extension'})" for r in failed)
        raise CitusError(f"workers that do not answer or lack Citus: {where}")
    missing = [t for t in (*REFERENCE_TABLES, *DISTRIBUTED_TABLES) if t not in OPTIONAL_TABLES]
    present = {r["relname"] for r in await conn.fetch(_STATE_SQL["tables"], missing)}
    if set(missing) - present:
        raise CitusError(
            f"the schema is not migrated (no {', '.join(sorted(set(missing) - present))}): run ctxmem migrate first"
        )
    return workers


async def distribute(conn: Any, *, dry_run: bool = False) -> Plan:
    """Distribute ctxmem's tables on the Citus coordinator ``conn`` (asyncpg) as far as they are not yet.
    Returns the plan it ran (or, with ``dry_run``, would run). Idempotent: a second run finds nothing to do."""
    await check(conn)
    todo = plan(await read_state(conn))
    if dry_run or not todo.statements:
        return todo
    async with conn.transaction():
        for sql in BEGIN[1:]:
            await conn.execute(sql)
        for sql in todo.statements:
            await _run(conn, sql)
    return todo


async def _run(conn: Any, sql: str) -> None:
    try:
        await conn.execute(sql)
    except Exception as exc:  # asyncpg's errors: the statement and the server's word go to the operator
        detail = getattr(exc, "detail", None)
        raise CitusError(f"{sql} failed: {exc}" + (f" ({detail})" if detail else "")) from exc
