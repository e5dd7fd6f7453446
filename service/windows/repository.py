"""The window's reads: one query for the user's applicable items, one for their profile entries, and one
that tells whether either set changed since it was read (for the window cache)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncSession

from service.caches import Memo, ProcessCaches
from service.db.engine import READS, driver_connection, generic_plans_sql
from service.db.models import SCOPED_ITEM, STANDING_ITEM
from service.db.selection import (
    ACTIVE,
    EVERYWHERE_SQL,
    ROW_VERSION,
    Selection,
    applies,
    in_domains,
    in_instance,
    retrievable,
)
from service.recall.repository import Checked, LexicalTerms, applicable_count, lexical_terms_sql


class Row(asyncpg.Record):
    """An asyncpg record whose columns also read as attributes (``row.id``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


# The window is the hot path: rows come straight from asyncpg (C-decoded records) on the session's own
# connection, skipping SQLAlchemy's per-row result processing. JSON columns
# (value, variants) are only needed for rows written before levels were precomputed: fetched separately.
# The window's rows: the standing candidates of every window — the user's (and global) items of the types
# and statuses that are or may be pinned (ix_context_item_standing), and everything of this session, task,
# stage or step (ix_context_item_scoped) — and the newest $8 other applicable items
# (ix_context_item_user_id_order, read backwards). Both partial indexes have these very predicates
# (service.db.models builds them from scoring.window_policy), so a user's thousands of episodes and facts
# are never scanned; everything else reaches a window only through retrieval (``retrieved_items``).
_COLUMNS = """id, type, content, key, domain, source, authority, scope, scope_ref, session_id, task_id, stage_id,
       step_id, hard, status, confidence, observed_at, expires_at, updated_at, token_cost, level_texts,
       level_tokens, related_ids"""
_ROWS = f"""
(SELECT {{cols}} FROM context_item
 WHERE tenant_id = $1 AND user_id = $2 AND {STANDING_ITEM} AND {in_domains("$7")})
UNION ALL
(SELECT {{cols}} FROM context_item
 WHERE tenant_id = $1 AND user_id = $2 AND {SCOPED_ITEM} AND scope_ref IN ($3, $4, $5, $6)
   AND ({in_instance(3)}) AND {in_domains("$7")})
UNION ALL
(SELECT {{cols}} FROM context_item
 WHERE tenant_id = $1 AND user_id = $2 AND {ACTIVE} AND {EVERYWHERE_SQL} AND NOT ({STANDING_ITEM})
   AND {in_domains("$7")}
 ORDER BY id DESC LIMIT $8)
"""
_ITEMS_SQL = f"SELECT * FROM ({_ROWS.format(cols=_COLUMNS + ', ' + ROW_VERSION + ' AS version')}) AS w ORDER BY id"


# Items retrieved for a query that the window's rows do not hold, re-checked here: active, unexpired, in the
# request's domains; ``applicable`` says whether they apply to this window's scopes (else they can only be
# recalled). Whatever the index still holds of a superseded or deleted item stops here. Best first.
# The window itself sends the variant below, which skips the columns of rows it holds; this full read of
# the same rows is what bench.window's raw-fetch baseline runs.
_RETRIEVED_SQL = f"""
SELECT {_COLUMNS}, {ROW_VERSION} AS version,
       {applies(6)} AS applicable
FROM context_item
WHERE tenant_id = $1 AND user_id = $2 AND id = ANY($3::uuid[]) AND {retrievable(now="$4", domains="$5")}
ORDER BY array_position($3::uuid[], id)
"""
# The same, reading the columns only of rows whose version this process does not hold already: a window
# retrieves mostly the same items turn after turn, and sending and decoding their columns again (texts,
# timestamps) costs more than the rest of the statement. ``$10`` holds, beside each id of ``$3``, the
# version of the row this process holds (NULL: none); ``held`` is the place (from 1) in ``$3`` of a row
# sent without its columns. The versions travel beside the ids rather than as a second list to join: a
# join of the two lists runs as a nested loop that hashes each row's version once per held row. The rows
# are materialised so that each row's version is computed once, not once for each column that tests it,
# and put in order here (``n``: they come in that order, so the sort has nothing to move; an ORDER BY
# makes PostgreSQL sort the wide rows).
# The arrays go as array literals (``_literal``): asyncpg checks every element of a list it encodes
# against abstract base classes, which costs more than PostgreSQL's parsing of the literal.


def _held_columns(alias: str, held: str) -> str:
    return ", ".join(
        f"{alias}.id" if col == "id" else f"CASE WHEN {held} IS NULL THEN {alias}.{col} END AS {col}"
        for col in (c.strip() for c in _COLUMNS.split(","))
    )


_RETRIEVED_HELD_SQL = f"""
WITH c AS MATERIALIZED (
    SELECT r.*, CASE WHEN r.version = o.held_version THEN o.n END AS held, o.n
    FROM unnest($3::text::uuid[], $10::text::bigint[]) WITH ORDINALITY AS o(id, held_version, n)
    CROSS JOIN LATERAL (
        SELECT {_COLUMNS}, {ROW_VERSION} AS version FROM context_item
        WHERE tenant_id = $1 AND user_id = $2 AND id = o.id AND {retrievable(now="$4", domains="$5")}) AS r
)
SELECT {_held_columns("c", "c.held")}, c.version, c.held, {applies(6, "c")} AS applicable, c.n
FROM c
"""
# The window's rows the same way ($9, $10: ids and versions held): a window after a write reads the same
# rows as the one before it but the new one, and their columns are most of the cost of reading them.
_ITEMS_HELD_SQL = f"""
SELECT {_held_columns("w", "h.held_at")}, w.version, h.held_at AS held
FROM ({_ROWS.format(cols=_COLUMNS + ", " + ROW_VERSION + " AS version")}) AS w
LEFT JOIN unnest($9::text::uuid[], $10::text::bigint[]) WITH ORDINALITY AS h(held_id, held_version, held_at)
  ON h.held_id = w.id AND h.held_version = w.version
ORDER BY w.id
"""
# (The order comes from the ids' own places: an ORDER BY array_position($3::text::uuid[], …) casts the
# whole literal again for every row under a generic plan.)
_JSON_SQL = "SELECT id, value, variants FROM context_item WHERE tenant_id = $1 AND id = ANY($2::uuid[])"
_ENTRIES_SQL = f"""
SELECT id, domain, dimension, key, value, polarity, tier, status, score, explicit, confirmed_at,
       current_session_id, last_evidence_at, updated_at, {ROW_VERSION} AS version
FROM profile_entry WHERE tenant_id = $1 AND user_id = $2 ORDER BY id
"""
# One statement, so both counts come from one snapshot. ``clean`` is false once this transaction has
# written anything: rows it wrote carry its own xid, and a second write of the same row in the same
# transaction would keep that xmin, so such a transaction neither reads nor fills the cache.
_VERSION_SQL = f"""
SELECT i.n AS items, i.x AS items_version, e.n AS entries, e.x AS entries_version,
       pg_current_xact_id_if_assigned() IS NULL AS clean
FROM (SELECT count(*) AS n, coalesce(bit_xor(version), 0) AS x
      FROM ({_ROWS.format(cols=ROW_VERSION + " AS version, id")}) AS w) AS i,
     (SELECT count(*) AS n, coalesce(bit_xor({ROW_VERSION}), 0) AS x
      FROM profile_entry WHERE tenant_id = $1 AND user_id = $2) AS e
"""


_GENERIC_PLANS = generic_plans_sql(local=True)


async def prefer_generic_plans(session: AsyncSession) -> None:
    """For the rest of this transaction, run prepared statements on their generic plan (but on Citus:
    :func:`service.db.engine.generic_plans_sql`). The window's
    statements are the same every request and served by the same indexes whatever their parameters (the
    partial indexes' predicates hold no parameter), yet PostgreSQL would plan them anew each time (custom
    plans), which costs more than executing them.

    The window reads on the driver connection, which SQLAlchemy has not begun a transaction on unless
    something ran through it first (the API key's lookup does): then the setting goes through SQLAlchemy,
    which begins one (else a local setting would hold for nothing), and the session's commit or rollback ends it.

    A session of the reads pool (``Database.reads``) needs none of it: its connections run on generic plans
    from the start, outside a transaction."""
    if session.info.get(READS):
        return
    driver = await driver_connection(session)
    if driver.is_in_transaction():
        await driver.execute(_GENERIC_PLANS)
    else:
        await (await session.connection()).exec_driver_sql(_GENERIC_PLANS)


async def window_items(
    session: AsyncSession, *, caches: ProcessCaches, selection: Selection, recent: int, held: Sequence[str] = ()
) -> tuple[list[Any], int]:
    """The window's rows, in id order: the standing ones and the ``recent`` newest other applicable ones
    (active; expired ones too: the service reports stale tool results), of the user and global scopes and
    of the selection's session/task/stage/step instances, in its domains or none; and how many active items
    apply to the selection in all. Rows among ``held`` (ids: those of the state this read replaces) that
    this process read before in the same version (``caches.held``) are not read again."""
    driver = await driver_connection(session)
    args = selection.args()
    tenant_id = selection.tenant_id
    records_held, counts = caches.held, caches.counts
    if not held:
        rows = await driver.fetch(_ITEMS_SQL, *args, recent, record_class=Row)
        return _hold(records_held, tenant_id, await _with_levels(driver, tenant_id, rows)), await applicable_count(
            driver, args, counts=counts
        )
    records = [r for r in (records_held.get((tenant_id, i)) for i in held) if r is not None]
    rows = await driver.fetch(
        _ITEMS_HELD_SQL,
        *args,
        recent,
        _literal([str(r["id"]) for r in records]),
        _literal([str(r["version"]) for r in records]),
        record_class=Row,
    )
    return _merge_held(
        records_held, tenant_id, rows, records, await _with_levels(driver, tenant_id, _unheld(rows))
    ), await applicable_count(driver, args, counts=counts)


# The next newest applicable items older than the window's newest few: what a window with room to spare
# shows next (service.windows.service: only when every candidate fitted whole). Active and unexpired.
_OLDER_SQL = f"""
SELECT {_COLUMNS} FROM context_item
WHERE tenant_id = $1 AND user_id = $2 AND {ACTIVE} AND {EVERYWHERE_SQL} AND NOT ({STANDING_ITEM})
  AND {in_domains("$6")} AND id < $3 AND (expires_at IS NULL OR expires_at > $4)
ORDER BY id DESC LIMIT $5
"""


async def older_items(session: AsyncSession, *, selection: Selection, before: Any, now: Any, limit: int) -> list[Any]:
    """Up to ``limit`` of the user's non-standing items of the user and global scopes in the selection's
    domains, older than ``before`` (an id), newest first, active and unexpired now."""
    driver = await driver_connection(session)
    tenant_id, user_id, *_, domains = selection.args()
    rows = await driver.fetch(_OLDER_SQL, tenant_id, user_id, before, now, limit, domains, record_class=Row)
    return await _with_levels(driver, tenant_id, rows)


def _literal(values: Sequence[str]) -> str:
    """A PostgreSQL array literal of ids or integers (no element needs quoting)."""
    return "{" + ",".join(values) + "}"


# Item rows this process has read in full (retrieved ones and the window's own) are held in
# ``ProcessCaches.held`` by (tenant, id): the record of the version last read (a row version never changes:
# an update writes a new one).


async def retrieved_items(
    session: AsyncSession,
    *,
    caches: ProcessCaches,
    selection: Selection,
    ids: Sequence[str],
    now: Any,
    checked: Mapping[str, Checked | None] | None = None,
) -> list[tuple[Any, bool]]:
    """The given items (best first) that are active and unexpired now and in the selection's domains, in
    the given order, each with whether it applies to the selection's scope instances. Rows held from an
    earlier read in the same version are not read again. ``checked``: what the conversation context read
    of some of them for the same selection and time (``Conversations.checked``): those it found unusable
    are left out, those this process holds in the version it read are taken as held, and only the others
    are read here (no round trip when none is left)."""
    if not checked:
        return await _read_retrieved(session, caches.held, selection=selection, ids=ids, now=now)
    tenant_id = selection.tenant_id
    known: dict[str, tuple[Any, bool]] = {}
    ask: list[str] = []
    for i in ids:
        if i not in checked:
            ask.append(i)
            continue
        seen = checked[i]
        if seen is None:
            continue
        record = caches.held.get((tenant_id, i))
        if record is not None and record["version"] == seen[0]:
            known[i] = (record, seen[1])
        else:
            ask.append(i)
    if ask:
        for record, applies in await _read_retrieved(session, caches.held, selection=selection, ids=ask, now=now):
            known[str(record["id"])] = (record, applies)
    return [known[i] for i in ids if i in known]


async def _read_retrieved(
    session: AsyncSession, records_held: Memo[Any], *, selection: Selection, ids: Sequence[str], now: Any
) -> list[tuple[Any, bool]]:
    if not ids:
        return []
    driver = await driver_connection(session)
    tenant_id, user_id, session_ref, task_ref, stage_ref, step_ref, domains = selection.args()
    held = [records_held.get((tenant_id, i)) for i in ids]
    rows = await driver.fetch(
        _RETRIEVED_HELD_SQL,
        tenant_id,
        user_id,
        _literal(ids),
        now,
        domains,
        session_ref,
        task_ref,
        stage_ref,
        step_ref,
        _literal(["NULL" if r is None else str(r["version"]) for r in held]),
        record_class=Row,
    )
    rows.sort(key=_place)
    records = _merge_held(records_held, tenant_id, rows, held, await _with_levels(driver, tenant_id, _unheld(rows)))
    return [(record, r["applicable"]) for record, r in zip(records, rows, strict=True)]


def _place(row: Any) -> int:
    return int(row["n"])


def _unheld(rows: Sequence[Any]) -> list[Any]:
    return [r for r in rows if r["held"] is None]


def _hold(records_held: Memo[Any], tenant_id: str, records: list[Any]) -> list[Any]:
    """The records, each held (``records_held``) as the version of its row read last."""
    for record in records:
        records_held[tenant_id, str(record["id"])] = record
    return records


def _merge_held(
    records_held: Memo[Any], tenant_id: str, rows: Sequence[Any], held: Sequence[Any | None], fresh: Sequence[Any]
) -> list[Any]:
    """A read of held rows made whole: each row sent without its columns (``held``: its place in ``held``,
    from 1) as the record held, the others as read (``fresh``, in order), which are held from now on."""
    read = iter(_hold(records_held, tenant_id, list(fresh)))
    return [held[r["held"] - 1] if r["held"] is not None else next(read) for r in rows]


async def _with_levels(driver: Any, tenant_id: str, rows: Sequence[Any]) -> list[Any]:
    """The rows, those written before levels were precomputed with their JSON columns attached."""
    legacy = [r["id"] for r in rows if r["level_texts"] is None]
    if not legacy:
        return list(rows)
    extra = {r["id"]: r for r in await driver.fetch(_JSON_SQL, tenant_id, legacy)}
    return [_with_json(r, extra.get(r["id"])) for r in rows]


class _Legacy:
    """A row written before levels were precomputed, with its JSON columns attached."""

    def __init__(self, row: Any, extra: Any) -> None:
        self._row = row
        self.value = extra["value"] if extra is not None else None
        self.variants = extra["variants"] if extra is not None else None

    def __getattr__(self, name: str) -> Any:
        return self._row[name]

    def __getitem__(self, name: str) -> Any:
        if name in ("value", "variants"):
            return getattr(self, name)
        return self._row[name]


def _with_json(row: Any, extra: Any) -> Any:
    return _Legacy(row, extra) if row["level_texts"] is None else row


async def window_version(
    session: AsyncSession, *, selection: Selection, recent: int, terms: LexicalTerms | None = None
) -> tuple[tuple[int, int, int, int], bool, LexicalTerms | None]:
    """What the window's rows are now: (items, their versions, entries, their versions) as
    :func:`version_of` computes them from fetched rows, and whether this transaction has written nothing;
    given ``terms``, read in the same statement, the lexical ranking's first rows (``terms`` with them)."""
    driver = await driver_connection(session)
    if terms is None:
        r = await driver.fetchrow(_VERSION_SQL, *selection.args(), recent)
        return (r["items"], r["items_version"], r["entries"], r["entries_version"]), r["clean"], None
    rows = list(await driver.fetch(_VERSION_AND_TERMS_SQL, *selection.args(), recent, *terms.args))
    r = rows[0]
    read = LexicalTerms(terms.args, terms.base, rows)
    return (r["items"], r["items_version"], r["entries"], r["entries_version"]), r["clean"], read


def version_of(rows: Sequence[Any]) -> tuple[int, int]:
    """(count, bit_xor of ``version``) of fetched rows: equal to what ``_VERSION_SQL`` computes over the
    same row versions (Python's ``^`` on negative ints is the two's-complement XOR of the int8 values)."""
    mix = 0
    for r in rows:
        mix ^= r["version"]
    return len(rows), mix


async def window_entries(session: AsyncSession, *, tenant_id: str, user_id: str) -> list[Any]:
    driver = await driver_connection(session)
    return list(await driver.fetch(_ENTRIES_SQL, tenant_id, user_id, record_class=Row))


# The cache check and the lexical ranking's first statement in one round trip, when the window knows
# before its state what the ranking will ask (``LexicalTerms``): tenant and user are $1 and $2 of both, the
# ranking's own parameters follow the cache check's ($9-$11). The window searches the vector index while
# PostgreSQL runs it (service.windows.service): the index search, Python holding the interpreter lock,
# hides the statement's time.
_VERSION_AND_TERMS_SQL = (
    f"SELECT v.*, l.* FROM ({_VERSION_SQL}) AS v CROSS JOIN ("
    f"{lexical_terms_sql(query='$9', cap='$10', top='$11')}) AS l"
)
