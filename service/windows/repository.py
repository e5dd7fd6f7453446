"""The window's reads: one query for the user's applicable items, one for their profile entries, and one
that tells whether either set changed since it was read (for the window cache)."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg
import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession

from scoring import lexical
from scoring.scopes import EVERYWHERE, INSTANCE_SCOPES
from service.db.engine import READS, driver_connection
from service.db.models import SCOPED_ITEM, STANDING_ITEM, active_sql
from service.windows import lexicon


class Row(asyncpg.Record):
    """An asyncpg record whose columns also read as attributes (``row.id``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True)
class Selection:
    """Which of a user's items a window reads: the user's and global scopes, the given session / task /
    stage / step instances (``None``: that scope's items do not apply) and, when given, only these domains
    (or none). Every window read takes one, and the window cache keys on it."""

    tenant_id: str
    user_id: str
    session_id: str | None = None
    task_id: str | None = None
    stage_id: str | None = None
    step_id: str | None = None
    domains: tuple[str, ...] | None = None

    def args(self) -> tuple[Any, ...]:
        """The parameters $1..$7 of the window's statements (instance ids in INSTANCE_SCOPES order; "" matches
        no item, whose scope_ref is never empty)."""
        return (
            self.tenant_id,
            self.user_id,
            self.session_id or "",
            self.task_id or "",
            self.stage_id or "",
            self.step_id or "",
            list(self.domains) if self.domains else None,
        )


# The window is the hot path: rows come straight from asyncpg (C-decoded records) on the session's own
# connection, skipping SQLAlchemy's per-row result processing (~10 ms for 1,000 rows). JSON columns
# (value, variants) are only needed for rows written before levels were precomputed: fetched separately.
#
# ``version`` identifies a row version: a hash of the id seeded with ``xmin``, the transaction that wrote
# this version of the row. Any UPDATE writes a new version with a new xmin, whatever columns it sets and
# whether or not it touches ``updated_at``, so (count, bit_xor of version) over a set of rows changes
# whenever a row of the set is inserted, updated or deleted, or enters or leaves the set. The service's
# window cache keeps the pair computed from the rows it fetched and compares it with ``_VERSION_SQL``.
# That query finds the rows through ix_context_item_window and ix_profile_entry_user_tier and reads each
# row's xmin from the table (~0.5 ms for 1,200 rows); bit_xor needs PostgreSQL 14. A transaction id is
# reused only after 2^32 transactions, and then only an unchanged count and a 64-bit hash collision
# would hide a change.
_ACTIVE = active_sql()
_EVERYWHERE = f"scope IN ({', '.join(repr(s) for s in EVERYWHERE)})"


def _in_instance(first: int, alias: str = "") -> str:
    """scoring.scopes.applies for the instance scopes, the instance ids bound from ``$first`` on (in
    INSTANCE_SCOPES order: session, task, stage, step)."""
    a = f"{alias}." if alias else ""
    return " OR ".join(f"({a}scope = '{s}' AND {a}scope_ref = ${first + i})" for i, s in enumerate(INSTANCE_SCOPES))


def _applies(first: int, alias: str = "") -> str:
    """scoring.scopes.applies as SQL: everywhere-scopes, or the item's own instance."""
    a = f"{alias}." if alias else ""
    return f"({a}{_EVERYWHERE} OR {_in_instance(first, alias)})"


_ITEMS_WHERE = f"""
WHERE tenant_id = $1 AND user_id = $2 AND {_ACTIVE}
  AND {_applies(3)}
  AND ($7::text[] IS NULL OR domain IS NULL OR domain = ANY($7::text[]))
"""


def _version_of(alias: str = "") -> str:
    """``version`` (the note on row versions above) of the rows of the table aliased ``alias``."""
    a = f"{alias}." if alias else ""
    return f"uuid_hash_extended({a}id, {a}xmin::text::bigint)"


_VERSION = _version_of()
# The window's rows: the standing candidates of every window — the user's (and global) items of the types
# and statuses that are or may be pinned (ix_context_item_standing), and everything of this session, task,
# stage or step (ix_context_item_scoped) — and the newest $8 other applicable items
# (ix_context_item_user_id_order, read backwards). Both partial indexes have these very predicates
# (service.db.models builds them from scoring.window_policy), so a user's thousands of episodes and facts
# are never scanned; everything else reaches a window only through retrieval (``retrieved_items``).
_COLUMNS = """id, type, content, key, domain, source, authority, scope, scope_ref, session_id, task_id, stage_id,
       step_id, hard, status, confidence, observed_at, expires_at, updated_at, token_cost, level_texts,
       level_tokens, related_ids"""
_DOMAINS = "($7::text[] IS NULL OR domain IS NULL OR domain = ANY($7::text[]))"
_ROWS = f"""
(SELECT {{cols}} FROM context_item
 WHERE tenant_id = $1 AND user_id = $2 AND {STANDING_ITEM} AND {_DOMAINS})
UNION ALL
(SELECT {{cols}} FROM context_item
 WHERE tenant_id = $1 AND user_id = $2 AND {SCOPED_ITEM} AND scope_ref IN ($3, $4, $5, $6)
   AND ({_in_instance(3)}) AND {_DOMAINS})
UNION ALL
(SELECT {{cols}} FROM context_item
 WHERE tenant_id = $1 AND user_id = $2 AND {_ACTIVE} AND {_EVERYWHERE} AND NOT ({STANDING_ITEM})
   AND {_DOMAINS}
 ORDER BY id DESC LIMIT $8)
"""
_ITEMS_SQL = f"SELECT * FROM ({_ROWS.format(cols=_COLUMNS + ', ' + _VERSION + ' AS version')}) AS w ORDER BY id"
_APPLICABLE_COUNT_SQL = f"SELECT count(*) FROM context_item {_ITEMS_WHERE}"


def _retrievable(alias: str = "", *, now: str, domains: str) -> str:
    """The SQL predicate "this item may be shown in a window now": in force, unexpired at ``now``, in the
    ``domains`` (a text[] parameter; NULL: any) or in none. What ``retrieved_items`` checks of a row."""
    a = f"{alias}." if alias else ""
    return (
        f"{active_sql(alias or None)} AND ({a}expires_at IS NULL OR {a}expires_at > {now})"
        f" AND ({domains}::text[] IS NULL OR {a}domain IS NULL OR {a}domain = ANY({domains}::text[]))"
    )


# Items retrieved for a query that the window's rows do not hold, re-checked here: active, unexpired, in the
# request's domains; ``applicable`` says whether they apply to this window's scopes (else they can only be
# recalled). Whatever the index still holds of a superseded or deleted item stops here. Best first.
# The window itself sends the variant below, which skips the columns of rows it holds; this full read of
# the same rows is what bench.window's raw-fetch baseline runs.
_RETRIEVED_SQL = f"""
SELECT {_COLUMNS}, {_VERSION} AS version,
       {_applies(6)} AS applicable
FROM context_item
WHERE tenant_id = $1 AND user_id = $2 AND id = ANY($3::uuid[]) AND {_retrievable(now="$4", domains="$5")}
ORDER BY array_position($3::uuid[], id)
"""
# The same, reading the columns only of rows whose version this process does not hold already: a window
# retrieves mostly the same items turn after turn, and sending and decoding their columns again (texts,
# timestamps) costs more than the rest of the statement (~2.0 against 0.4 ms for 100 rows). ``$10`` holds,
# beside each id of ``$3``, the version of the row this process holds (NULL: none); ``held`` is the place
# (from 1) in ``$3`` of a row sent without its columns. The versions travel beside the ids rather than as
# a second list to join: a join of the two lists ran as a nested loop that hashed each row's version once
# per held row, 162 rows x 98 held: 3.8 against 1.7 ms with every row held, measured alone). The rows are
# materialised so that each row's version is computed once, not once for each column that tests it, and
# put in order here (``n``: they come in that order, so the sort has nothing to move; an ORDER BY made
# PostgreSQL sort the wide rows, ~0.25 ms).
# The arrays go as array literals (``_literal``): asyncpg checks every element of a list it encodes
# against abstract base classes, ~0.6 us each, more than PostgreSQL takes to parse them.


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
        SELECT {_COLUMNS}, {_VERSION} AS version FROM context_item
        WHERE tenant_id = $1 AND user_id = $2 AND id = o.id AND {_retrievable(now="$4", domains="$5")}) AS r
)
SELECT {_held_columns("c", "c.held")}, c.version, c.held, {_applies(6, "c")} AS applicable, c.n
FROM c
"""
# The window's rows the same way ($9, $10: ids and versions held): a window after a write reads the same
# rows as the one before it but the new one, and their columns cost ~3 of the ~4 ms of reading ~170 rows.
_ITEMS_HELD_SQL = f"""
SELECT {_held_columns("w", "h.held_at")}, w.version, h.held_at AS held
FROM ({_ROWS.format(cols=_COLUMNS + ", " + _VERSION + " AS version")}) AS w
LEFT JOIN unnest($9::text::uuid[], $10::text::bigint[]) WITH ORDINALITY AS h(held_id, held_version, held_at)
  ON h.held_id = w.id AND h.held_version = w.version
ORDER BY w.id
"""
# (The order comes from the ids' own places: an ORDER BY array_position($3::text::uuid[], …) cast the whole
# literal again for every row under a generic plan — 195 ms a window for 450 ids.)
_JSON_SQL = "SELECT id, value, variants FROM context_item WHERE tenant_id = $1 AND id = ANY($2::uuid[])"
_ENTRIES_SQL = f"""
SELECT id, domain, dimension, key, value, polarity, tier, status, score, explicit, confirmed_at,
       current_session_id, last_evidence_at, updated_at, {_VERSION} AS version
FROM profile_entry WHERE tenant_id = $1 AND user_id = $2 ORDER BY id
"""
# One statement, so both counts come from one snapshot. ``clean`` is false once this transaction has
# written anything: rows it wrote carry its own xid, and a second write of the same row in the same
# transaction would keep that xmin, so such a transaction neither reads nor fills the cache.
_VERSION_SQL = f"""
SELECT i.n AS items, i.x AS items_version, e.n AS entries, e.x AS entries_version,
       pg_current_xact_id_if_assigned() IS NULL AS clean
FROM (SELECT count(*) AS n, coalesce(bit_xor(version), 0) AS x
      FROM ({_ROWS.format(cols=_VERSION + " AS version, id")}) AS w) AS i,
     (SELECT count(*) AS n, coalesce(bit_xor({_VERSION}), 0) AS x
      FROM profile_entry WHERE tenant_id = $1 AND user_id = $2) AS e
"""


_GENERIC_PLANS = "SET LOCAL plan_cache_mode = force_generic_plan"


async def prefer_generic_plans(session: AsyncSession) -> None:
    """For the rest of this transaction, run prepared statements on their generic plan. The window's
    statements are the same every request and served by the same indexes whatever their parameters (the
    partial indexes' predicates hold no parameter), yet PostgreSQL kept planning them anew each time
    (custom plans): ~1.5 ms a statement, more than executing it (the cache check: 1.95 → 0.44 ms).

    The window reads on the driver connection, which SQLAlchemy has not begun a transaction on unless
    something ran through it first (the API key's lookup does): then the setting goes through SQLAlchemy,
    which begins one (else SET LOCAL would hold for nothing), and the session's commit or rollback ends it.

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
    session: AsyncSession, *, selection: Selection, recent: int, held: Sequence[str] = ()
) -> tuple[list[Any], int]:
    """The window's rows, in id order: the standing ones and the ``recent`` newest other applicable ones
    (active; expired ones too: the service reports stale tool results), of the user and global scopes and
    of the selection's session/task/stage/step instances, in its domains or none; and how many active items
    apply to the selection in all. Rows among ``held`` (ids: those of the state this read replaces) that
    this process read before in the same version are not read again."""
    driver = await driver_connection(session)
    args = selection.args()
    tenant_id = selection.tenant_id
    if not held:
        rows = await driver.fetch(_ITEMS_SQL, *args, recent, record_class=Row)
        return _hold(tenant_id, await _with_levels(driver, tenant_id, rows)), await applicable_count(driver, args)
    records = [r for r in (_HELD.get((tenant_id, i)) for i in held) if r is not None]
    rows = await driver.fetch(
        _ITEMS_HELD_SQL,
        *args,
        recent,
        _literal([str(r["id"]) for r in records]),
        _literal([str(r["version"]) for r in records]),
        record_class=Row,
    )
    return _merge_held(tenant_id, rows, records, await _with_levels(driver, tenant_id, _unheld(rows))), (
        await applicable_count(driver, args)
    )


# How many items apply to a selection is counted at most once a minute per process: the count reads every
# one of the user's items (~50 ms at 100,000), it only sizes the response's ``not_retrieved`` and the
# lexical ranking's estimate of how common a term is among the user's texts, and neither needs it to the
# item. Keyed by the selection; bounded, cleared when full.
COUNT_TTL_SECONDS = 60.0
_COUNTS: dict[tuple[Any, ...], tuple[float, int]] = {}


async def applicable_count(driver: Any, args: tuple[Any, ...]) -> int:
    key = (*args[:6], tuple(args[6]) if args[6] else None)
    now = time.monotonic()
    hit = _COUNTS.get(key)
    if hit is not None and now - hit[0] <= COUNT_TTL_SECONDS:
        return hit[1]
    n = int(await driver.fetchval(_APPLICABLE_COUNT_SQL, *args))
    if len(_COUNTS) >= 100_000:
        _COUNTS.clear()
    _COUNTS[key] = (now, n)
    return n


# The next newest applicable items older than the window's newest few: what a window with room to spare
# shows next (service.windows.service: only when every candidate fitted whole). Active and unexpired.
_OLDER_SQL = f"""
SELECT {_COLUMNS} FROM context_item
WHERE tenant_id = $1 AND user_id = $2 AND {_ACTIVE} AND {_EVERYWHERE} AND NOT ({STANDING_ITEM})
  AND {_DOMAINS.replace("$7", "$6")} AND id < $3 AND (expires_at IS NULL OR expires_at > $4)
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


# Item rows this process has read in full (retrieved ones and the window's own), by (tenant, id): the record
# of the version last read (a row version never changes: an update writes a new one). Bounded; cleared when
# full: a record weighs ~3.7 KB with 350 characters of content and its levels (tracemalloc), so ~75 MB.
_HELD: dict[tuple[str, str], Any] = {}
_HELD_MAX = 20_000


async def retrieved_items(
    session: AsyncSession,
    *,
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
        return await _read_retrieved(session, selection=selection, ids=ids, now=now)
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
        record = _HELD.get((tenant_id, i))
        if record is not None and record["version"] == seen[0]:
            known[i] = (record, seen[1])
        else:
            ask.append(i)
    if ask:
        for record, applies in await _read_retrieved(session, selection=selection, ids=ask, now=now):
            known[str(record["id"])] = (record, applies)
    return [known[i] for i in ids if i in known]


async def _read_retrieved(
    session: AsyncSession, *, selection: Selection, ids: Sequence[str], now: Any
) -> list[tuple[Any, bool]]:
    if not ids:
        return []
    driver = await driver_connection(session)
    tenant_id, user_id, session_ref, task_ref, stage_ref, step_ref, domains = selection.args()
    held = [_HELD.get((tenant_id, i)) for i in ids]
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
    records = _merge_held(tenant_id, rows, held, await _with_levels(driver, tenant_id, _unheld(rows)))
    return [(record, r["applicable"]) for record, r in zip(records, rows, strict=True)]


def _place(row: Any) -> int:
    return int(row["n"])


def _unheld(rows: Sequence[Any]) -> list[Any]:
    return [r for r in rows if r["held"] is None]


def _hold(tenant_id: str, records: list[Any]) -> list[Any]:
    """The records, each held (``_HELD``) as the version of its row read last."""
    if len(_HELD) + len(records) > _HELD_MAX:
        _HELD.clear()
    for record in records:
        _HELD[tenant_id, str(record["id"])] = record
    return records


def _merge_held(tenant_id: str, rows: Sequence[Any], held: Sequence[Any | None], fresh: Sequence[Any]) -> list[Any]:
    """A read of held rows made whole: each row sent without its columns (``held``: its place in ``held``,
    from 1) as the record held, the others as read (``fresh``, in order), which are held from now on."""
    read = iter(_hold(tenant_id, list(fresh)))
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


# The lexical ranking's inputs, in two round trips (the ranking itself is scoring.lexical's): first the
# query's terms (analysed as the index analyses texts: ctxmem_tsv) and the age of the oldest change of this
# user's that the outbox worker has not applied (a probe of ix_vector_outbox_user): whether the vector
# index can be trusted for this user's items. Another user's backlog does not make it wrong for this one,
# and the probe stays on one shard on Citus (docs/citus.md).
# With them, when $4 > 0, the version of the user's texts (lexicon.py: their count and sum of seq, read
# from ix_item_search_user_seq alone) for a user with fewer than $4 of them: whether this process's copy of
# them is current.
# And, when $5 is not NULL (the greatest seq of the process's copy), the rows written since, one per
# result row (the first also carries the rest; none: one row with NULL there): after a turn is stored
# the copy is brought up to date from the same snapshot as the version, without a round trip of its own.
# At most lexicon.DELTA_ROWS of them, in seq order (more: the copy is reconciled instead, lexicon.py):
# the order and the limit keep the generic plan on the index over (tenant, user, seq). Without them,
# where one user holds most of the table, the planner's guess for "seq > $5" (a third of the user's
# rows) made it scan the whole table for every window, $5 NULL or not: 36 ms at 100,000 texts. The
# count is read in seq order too, for the same reason (there the plan was a scan of the table that
# stops at $4 of the user's rows).
_LEXICAL_TERMS = f"""
SELECT t.lexemes, t.lag, t.texts, t.seqs, d.id, d.text_lexemes, d.expires_at, d.seq
FROM (SELECT tsvector_to_array(ctxmem_tsv($3)) AS lexemes,
             (SELECT EXTRACT(EPOCH FROM now() - created_at)::float8 FROM vector_outbox
              WHERE tenant_id = $1 AND user_id = $2 AND dead_at IS NULL ORDER BY id LIMIT 1) AS lag,
             v.texts, v.seqs::bigint AS seqs
      FROM (SELECT count(*) AS texts, sum(seq) AS seqs
            FROM (SELECT seq FROM item_search
                  WHERE tenant_id = $1 AND user_id = $2 AND $4::int > 0 ORDER BY seq LIMIT $4) AS u) AS v) AS t
LEFT JOIN LATERAL (
    SELECT item_id::text AS id, tsvector_to_array(tsv) AS text_lexemes, expires_at, seq FROM item_search
    WHERE tenant_id = $1 AND user_id = $2 AND seq > $5::bigint
    ORDER BY seq LIMIT {lexicon.DELTA_ROWS}
) AS d ON true
"""
# The cache check and the lexical ranking's first statement in one round trip, when the window knows
# before its state what the ranking will ask (``LexicalTerms``): the parameters of the second renumbered
# from $9 (tenant and user are $1 and $2 of both). The window searches the vector index while
# PostgreSQL runs it (service.windows.service): the index search, Python holding the interpreter lock,
# hides the statement's time, which it did for the lexical statement alone before.
_VERSION_AND_TERMS_SQL = (
    "SELECT v.*, l.* FROM (" + _VERSION_SQL + ") AS v CROSS JOIN ("
    + _LEXICAL_TERMS.replace("$3", "$9").replace("$4", "$10").replace("$5", "$11")
    + ") AS l"
)  # fmt: skip


@dataclass(frozen=True)
class LexicalTerms:
    """What the lexical ranking's first statement asks (``terms_args``) and, once read, its rows."""

    args: tuple[str, int, int | None]  # the query, the most texts a copy may hold + 1 (0: no copy), its top
    base: lexicon.Lexicon | None  # the copy whose top it is
    rows: list[Any] | None = None


def terms_args(
    *, tenant_id: str, user_id: str, query: str, documents: int, lexicon_texts: int, lexicon_postings: int
) -> LexicalTerms:
    """What the lexical ranking's first statement asks of a user with ``documents`` items."""
    copy = lexicon_texts > 0 and lexicon_postings > 0 and documents <= lexicon_texts
    base = lexicon.held(tenant_id, user_id) if copy else None
    return LexicalTerms((query, lexicon_texts + 1 if copy else 0, base.top if base is not None else None), base)


# Then, for each kept term ($3), the user's texts holding it and their lengths (distinct lexemes): the
# indexed ones through item_search's per-user GIN index (one probe per term), unexpired ($4: item_search
# keeps its item's expires_at; it holds active items only, the worker removes the others), plus the
# user's newest $5 changes the worker has not applied yet — their item_search rows (if any) are
# skipped and their text analysed here from the item, if still in force: normally a few rows; capped so
# that a user's bulk import does not make every window analyse thousands of texts (older ones are
# searchable once the worker reaches them). Ids go as uuid[]: decoding them costs half what text does.
# For a large user the statement names the tenant and the user as constants, unlike the window's other
# statements: which index serves it depends on how many texts this user has, and a generic plan, made
# without the values, follows the database's average user — where most users are small it read the
# user's rows through ix_item_search_user_seq and tested each against the query, right for a user of 200
# texts, a scan of 100,000 for a large one, who is the one ranked here (smaller users are ranked from the
# process's copy of their texts). With the user a constant, the plan (generic for the remaining
# parameters, the terms and the time) is made for this user's share of the table, and, a statement of its
# own, it is prepared and planned once per connection (asyncpg's statement cache) rather than planned
# again on every call. That replaced running the shared statement on a custom plan, which took two
# statements around it to switch the connection's plan mode and back, and planned it every time: the
# postings of the benchmark's 100,000-item user took 0.91-0.94 ms that way, against 0.28 ms now (alone,
# in turn, 400 each). For a user with at most LARGE_USER_TEXTS items either plan reads a few thousand
# rows at most: such a user (ranked here before the copy is built, or while the worker catches up)
# shares the one statement.
LARGE_USER_TEXTS = 5_000


def _postings_sql(*, t: str, u: str, terms: str, now: str, pending: str) -> str:
    return f"""
WITH kept AS (
    SELECT lexeme, quote_literal(lexeme)::tsquery AS q FROM unnest({terms}::text[]) AS k(lexeme)
),
pending AS MATERIALIZED (
    SELECT DISTINCT c.id,
           CASE WHEN {active_sql("c")} AND (c.expires_at IS NULL OR c.expires_at > {now})
                THEN ctxmem_tsv(c.content) END AS tsv
    FROM (SELECT item_id FROM vector_outbox
          WHERE tenant_id = {t} AND user_id = {u} AND dead_at IS NULL ORDER BY id DESC LIMIT {pending}) o
    JOIN context_item c ON c.id = o.item_id
    WHERE c.tenant_id = {t}
),
pairs AS (
    SELECT k.lexeme, s.item_id AS id, length(s.tsv) AS len
    FROM kept k JOIN item_search s ON s.tenant_id = {t} AND s.user_id = {u} AND s.tsv @@ k.q
    WHERE (s.expires_at IS NULL OR s.expires_at > {now}) AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.id = s.item_id)
    UNION ALL
    SELECT k.lexeme, p.id, length(p.tsv) FROM kept k JOIN pending p ON p.tsv @@ k.q
)
SELECT lexeme, array_agg(id) AS ids, array_agg(len) AS lens FROM pairs GROUP BY lexeme
"""


_POSTINGS = _postings_sql(t="$1", u="$2", terms="$3", now="$4", pending="$5")


def sql_literal(value: str) -> str:
    """``value`` as a PostgreSQL string constant (as ``quote_literal`` writes it: right whatever
    ``standard_conforming_strings`` says)."""
    if "\x00" in value:
        raise ValueError("a PostgreSQL text value cannot hold NUL")
    quoted = value.replace("'", "''")
    return f"E'{quoted.replace(chr(92), chr(92) * 2)}'" if "\\" in value else f"'{quoted}'"


@functools.lru_cache(maxsize=1024)
def user_postings_sql(tenant_id: str, user_id: str) -> str:
    """The postings statement of one (large) user: tenant and user constants, then the kept terms ($1),
    the time ($2) and the pending limit ($3)."""
    return _postings_sql(t=sql_literal(tenant_id), u=sql_literal(user_id), terms="$1", now="$2", pending="$3")


# A window's conversation context, in one round trip: when each of the given items ($6) was observed and,
# for a conversation turn, its session and whether its text matches $7 (it asks a question:
# scoring.relevance.QUESTION_END; NULL asks nothing); and the turns just before and after each of the given
# sources ($3) in its conversation (same user and session, episodes in observed order; only live ones count),
# up to $4 on each side, with their distance and side: primary-key and ix_context_item_conversation probes,
# never a read of a session. The given items are found one primary-key probe each: with "id = ANY(…)" the
# generic plan (made for the database's average user) found the sources in ix_context_item_conversation
# by tenant and user, reading every conversation turn of the user to pick out the ids; OFFSET 0 keeps each
# probe a subquery of its own (else the planner joins the ids with a read of the user's rows again).
# With each row, what ``retrieved_items`` would check of it for a window ($8: its domains, $9-$12: its
# scope instances): the row's version, whether it may be shown now (``usable``: in force, unexpired, in the
# domains: ``_retrievable``) and whether it applies to the window's scopes. A window's retrieved items are
# mostly these rows, read already, so for those this process holds in the same version the window needs
# no read of its own (one round trip and ~100 primary-key probes fewer).
_NEIGHBOUR_COLUMNS = (
    f"c.id, c.observed_at, c.status, c.expires_at, c.domain, c.scope, c.scope_ref, {_version_of('c')} AS version"
)
_CONVERSATION = f"""
SELECT s.id::text AS source, NULL::text AS neighbour, 0::bigint AS distance,
       CASE WHEN s.type = 'episode' THEN s.session_id END AS session_id, s.observed_at,
       CASE WHEN s.type = 'episode' AND s.session_id IS NOT NULL THEN s.content ~ $7::text END AS asks,
       NULL::boolean AS after, s.version, {_retrievable("s", now="$5", domains="$8")} AS usable,
       {_applies(9, "s")} AS applicable
FROM unnest($6::uuid[]) AS o(id)
CROSS JOIN LATERAL (
    SELECT *, {_VERSION} AS version FROM context_item WHERE id = o.id AND tenant_id = $1 AND user_id = $2 OFFSET 0
) AS s
UNION ALL
SELECT s.id::text AS source, n.id::text AS neighbour, n.d AS distance, s.session_id, n.observed_at,
       NULL::boolean AS asks, n.after, n.version,
       {_retrievable("n", now="$5", domains="$8")} AS usable,
       {_applies(9, "n")} AS applicable
FROM unnest($3::uuid[]) AS o(id)
CROSS JOIN LATERAL (SELECT * FROM context_item WHERE id = o.id AND tenant_id = $1 AND user_id = $2 OFFSET 0) AS s
CROSS JOIN LATERAL (
    (SELECT {_NEIGHBOUR_COLUMNS},
            row_number() OVER (ORDER BY c.observed_at DESC, c.id DESC) AS d, false AS after
     FROM context_item c
     WHERE c.tenant_id = s.tenant_id AND c.user_id = s.user_id AND c.session_id = s.session_id
       AND c.type = 'episode' AND (c.observed_at, c.id) < (s.observed_at, s.id)
       AND {active_sql("c")} AND (c.expires_at IS NULL OR c.expires_at > $5)
     ORDER BY c.observed_at DESC, c.id DESC LIMIT $4)
    UNION ALL
    (SELECT {_NEIGHBOUR_COLUMNS},
            row_number() OVER (ORDER BY c.observed_at, c.id) AS d, true AS after
     FROM context_item c
     WHERE c.tenant_id = s.tenant_id AND c.user_id = s.user_id AND c.session_id = s.session_id
       AND c.type = 'episode' AND (c.observed_at, c.id) > (s.observed_at, s.id)
       AND {active_sql("c")} AND (c.expires_at IS NULL OR c.expires_at > $5)
     ORDER BY c.observed_at, c.id LIMIT $4)
) AS n
WHERE s.type = 'episode' AND s.session_id IS NOT NULL
"""


@dataclass(frozen=True)
class Conversations:
    """Where the scored items sit in the user's conversations (``conversation_context``)."""

    links: list[tuple[str, str, int]]  # (turn, neighbour, distance ≥ 1), for scoring.relevance.in_context
    session_of: dict[str, str]  # conversation turn (of those asked about, or a neighbour) → its session_id
    observed_at: dict[str, datetime]  # item (of those asked about, or a neighbour) → when it was observed
    # For scoring.relevance.answered: the conversation turns asked about whose text matches ``question``, and
    # each source's next turn in its session (the reply).
    asking: set[str] = field(default_factory=set)
    replies: dict[str, str] = field(default_factory=dict)
    # Given a window's selection: each item asked about and each neighbour → (its row's version, whether
    # it applies to the selection's scopes) if a window may show it now, else None (or not the user's).
    checked: dict[str, Checked | None] = field(default_factory=dict)


# What the conversation context read of a row for ``retrieved_items``: its version, and whether it
# applies to the window's scope instances.
Checked = tuple[int, bool]


async def conversation_context(
    session: AsyncSession,
    *,
    tenant_id: str,
    user_id: str,
    ids: list[str],
    sources: list[str],
    reach: int,
    now: datetime,
    question: str | None = None,
    selection: Selection | None = None,
) -> Conversations:
    """When each of ``ids`` was observed and the session of those that are conversation turns (an episode with
    a ``session_id``) — and, given ``question`` (a regular expression), which of those turns match it — and
    for the turns among ``sources`` the live episodes of the same session up to ``reach`` turns before and
    after each (none when ``reach`` is 0), with their sessions and times too. Given a window's
    ``selection`` (of this user), also what ``retrieved_items`` checks of each of those rows
    (``Conversations.checked``). Nothing is asked when there is nothing to ask."""
    reach = max(0, reach)
    if not ids and not (sources and reach):
        return Conversations([], {}, {})
    driver = await driver_connection(session)
    scope = selection.args() if selection is not None else (tenant_id, user_id, "", "", "", "", None)
    rows = await driver.fetch(
        _CONVERSATION,
        tenant_id,
        user_id,
        sources if reach else [],
        reach,
        now,
        ids,
        question,
        scope[6],
        *scope[2:6],
    )
    links: list[tuple[str, str, int]] = []
    session_of: dict[str, str] = {}
    observed_at: dict[str, datetime] = {}
    asking: set[str] = set()
    replies: dict[str, str] = {}
    checked: dict[str, Checked | None] = dict.fromkeys(ids) if selection is not None else {}
    for r in rows:
        if r["neighbour"] is None:
            observed_at[r["source"]] = r["observed_at"]
            if r["session_id"] is not None:
                session_of[r["source"]] = r["session_id"]
            if r["asks"]:
                asking.add(r["source"])
            if selection is not None:
                checked[r["source"]] = (r["version"], r["applicable"]) if r["usable"] else None
        else:
            distance = int(r["distance"])
            links.append((r["source"], r["neighbour"], distance))
            session_of[r["source"]] = session_of[r["neighbour"]] = r["session_id"]
            observed_at[r["neighbour"]] = r["observed_at"]
            if distance == 1 and r["after"]:
                replies[r["source"]] = r["neighbour"]
            if selection is not None:
                checked[r["neighbour"]] = (r["version"], r["applicable"]) if r["usable"] else None
    return Conversations(links, session_of, observed_at, asking, replies, checked)


_SHARES_SQL = """
SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs FROM pg_stats
WHERE schemaname = current_schema() AND tablename = 'item_search' AND attname = 'tsv'
"""
# Read at most once a minute per process: planning a join with the pg_stats view costs more than the
# ranking itself (~8 ms against ~1 ms), and the statistics change only when ANALYZE runs.
SHARES_TTL_SECONDS = 60.0
_shares: tuple[float, dict[str, float]] | None = None


async def term_shares(driver: Any) -> dict[str, float]:
    """The most common lexemes of the lexical index and the share of indexed texts holding each (empty
    before the first ANALYZE)."""
    global _shares
    now = time.monotonic()
    if _shares is None or now - _shares[0] > SHARES_TTL_SECONDS:
        row = await driver.fetchrow(_SHARES_SQL)
        elems = list(row["elems"] or []) if row is not None else []
        freqs = list(row["freqs"] or [])[: len(elems)] if row is not None else []
        _shares = (now, dict(zip(elems, freqs, strict=True)))
    return _shares[1]


def _text_row(r: Any) -> dict[str, Any]:
    """A row written since the copy's greatest seq, as ``lexicon.Lexicon.with_rows`` takes it."""
    return {"id": r["id"], "lexemes": r["text_lexemes"], "expires_at": r["expires_at"], "seq": r["seq"]}


async def lexical_ranking(
    session: AsyncSession,
    *,
    tenant_id: str,
    user_id: str,
    query: str,
    limit: int,
    now: datetime,
    pending: int = 1_000,
    documents: int = 0,
    max_hits: int = 2_000,
    lexicon_texts: int = 0,
    lexicon_postings: int = 0,
    first: LexicalTerms | None = None,
) -> tuple[list[tuple[str, float]], float, int]:
    """(id, BM25 score) of the user's active items matching any of the query's kept terms, best first
    (scoring.lexical: inverse document frequencies from the user's own texts, length-normalised), how many
    seconds the oldest of this user's changes still queued for the indexes has waited (0: none), and how
    many of the query's terms were too common among the user's ``documents`` items to rank by
    (``max_hits``). A user with at most ``lexicon_texts`` texts and nothing queued is ranked from this
    process's copy of them (lexicon.py; copies bounded by ``lexicon_postings`` in all), the others in
    PostgreSQL. ``first``: the first statement's rows, read already with the window's cache check (used
    when they answer what this ranking would ask)."""
    driver = await driver_connection(session)
    shares = await term_shares(driver)
    asked = terms_args(
        tenant_id=tenant_id,
        user_id=user_id,
        query=query,
        documents=documents,
        lexicon_texts=lexicon_texts,
        lexicon_postings=lexicon_postings,
    )
    copy = asked.args[1] > 0  # ranked from the process's copy of the user's texts, if it is current
    if first is not None and first.rows is not None and first.args[:2] == asked.args[:2]:
        # Read with the cache check (window_version), for the same query and copy decision; its base is
        # the copy whose top it asked after (the rows written since are that copy's delta).
        rows, base = first.rows, first.base
    else:
        rows, base = list(await driver.fetch(_LEXICAL_TERMS, tenant_id, user_id, *asked.args)), asked.base
    row = rows[0]
    kept, ignored = lexical.kept_terms(row["lexemes"] or [], shares, documents=documents, max_hits=max_hits)
    lag = max(0.0, row["lag"] or 0.0)
    if not kept:
        return [], lag, ignored
    if copy and row["lag"] is None and 0 < row["texts"] <= lexicon_texts:
        held = await lexicon.current(
            driver,
            tenant_id=tenant_id,
            user_id=user_id,
            version=(row["texts"], row["seqs"]),
            max_postings=lexicon_postings,
            since=(base, [_text_row(r) for r in rows if r["id"] is not None]) if base is not None else None,
        )
        if held is not None:
            found = held.postings_of(kept, now)
            hits = lexical.bm25(found, held.lengths, held.keys, documents=documents, limit=limit)
            return hits, lag, ignored
    if documents > LARGE_USER_TEXTS:
        rows = await driver.fetch(user_postings_sql(tenant_id, user_id), kept, now, pending)
    else:
        rows = await driver.fetch(_POSTINGS, tenant_id, user_id, kept, now, pending)
    index: dict[Any, int] = {}
    lengths: list[int] = []
    postings = []
    for r in rows:
        at = []
        for key, n in zip(r["ids"], r["lens"], strict=True):
            i = index.get(key)
            if i is None:
                i = index[key] = len(lengths)
                lengths.append(n)
            at.append(i)
        postings.append(np.array(at, dtype=np.int32))
    ranked = lexical.bm25(postings, np.array(lengths, dtype=np.int32), list(index), documents=documents, limit=limit)
    return [(str(key), score) for key, score in ranked], lag, ignored
