"""Recall's reads: the lexical ranking's (the query's terms, the user's postings and texts, the index's
term statistics), the conversation context of scored items, and how many items apply to a selection (the
ranking's estimate of how many texts the user has)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession

from scoring import lexical
from service.caches import Expiring, Memo, ProcessCaches, WindowCache
from service.db.engine import driver_connection
from service.db.models import active_sql
from service.db.selection import ACTIVE, ROW_VERSION, Selection, applies, in_domains, retrievable, row_version
from service.recall import lexicon

_ITEMS_WHERE = f"""
WHERE tenant_id = $1 AND user_id = $2 AND {ACTIVE}
  AND {applies(3)}
  AND {in_domains("$7")}
"""
_APPLICABLE_COUNT_SQL = f"SELECT count(*) FROM context_item {_ITEMS_WHERE}"


# How many items apply to a selection is counted at most once a minute per process: the count reads every
# one of the user's items (its cost grows with the user's memory), it only sizes the response's
# ``not_retrieved`` and the lexical ranking's estimate of how common a term is among the user's texts, and
# neither needs it to the item. Kept in ``ProcessCaches.counts``, keyed by the selection.
COUNT_TTL_SECONDS = 60.0


async def applicable_count(driver: Any, args: tuple[Any, ...], *, counts: Memo[tuple[float, int]]) -> int:
    """How many active items apply to the selection whose statement parameters are ``args``
    (``Selection.args``), as counted within the last ``COUNT_TTL_SECONDS`` (``counts``)."""
    key = (*args[:6], tuple(args[6]) if args[6] else None)
    now = time.monotonic()
    hit = counts.get(key)
    if hit is not None and now - hit[0] <= COUNT_TTL_SECONDS:
        return int(hit[1])
    n = int(await driver.fetchval(_APPLICABLE_COUNT_SQL, *args))
    counts[key] = (now, n)
    return n


# The lexical ranking's inputs, in two round trips (the ranking itself is scoring.lexical's): first the
# query's terms (analysed as the index analyses texts: ctxmem_tsv) and the age of the oldest change of this
# user's that the outbox worker has not applied (a probe of ix_vector_outbox_user): whether the vector
# index can be trusted for this user's items. Another user's backlog does not make it wrong for this one,
# and the probe stays on one shard on Citus (docs/citus.md).
# With them, when ``cap`` > 0, the version of the user's texts (lexicon.py: their count and sum of seq,
# read from ix_item_search_user_seq alone) for a user with fewer than ``cap`` of them: whether this
# process's copy of them is current.
# And, when ``top`` is not NULL (the greatest seq of the process's copy), the rows written since, one per
# result row (the first also carries the rest; none: one row with NULL there): after a turn is stored
# the copy is brought up to date from the same snapshot as the version, without a round trip of its own.
# At most lexicon.DELTA_ROWS of them, in seq order (more: the copy is reconciled instead, lexicon.py):
# the order and the limit keep the generic plan on the index over (tenant, user, seq). Without them,
# where one user holds most of the table, the planner guesses that "seq > top" matches a third of the
# user's rows and scans the whole table for every window, ``top`` NULL or not. The count is read in seq
# order too, for the same reason (there the plan would scan the table until ``cap`` of the user's rows).
def lexical_terms_sql(*, query: str, cap: str, top: str) -> str:
    """The lexical ranking's first statement, tenant and user bound as $1 and $2 and its own parameters as
    named: ``query`` (text), ``cap`` (the most texts a copy may hold + 1; 0: no copy) and ``top`` (the
    copy's greatest seq; NULL: none), as ``LexicalTerms.args`` holds them."""
    return f"""
SELECT t.lexemes, t.lag, t.texts, t.seqs, d.id, d.text_lexemes, d.expires_at, d.seq
FROM (SELECT tsvector_to_array(ctxmem_tsv({query})) AS lexemes,
             (SELECT EXTRACT(EPOCH FROM now() - created_at)::float8 FROM vector_outbox
              WHERE tenant_id = $1 AND user_id = $2 AND dead_at IS NULL ORDER BY id LIMIT 1) AS lag,
             v.texts, v.seqs::bigint AS seqs
      FROM (SELECT count(*) AS texts, sum(seq) AS seqs
            FROM (SELECT seq FROM item_search
                  WHERE tenant_id = $1 AND user_id = $2 AND {cap}::int > 0 ORDER BY seq LIMIT {cap}) AS u) AS v) AS t
LEFT JOIN LATERAL (
    SELECT item_id::text AS id, tsvector_to_array(tsv) AS text_lexemes, expires_at, seq FROM item_search
    WHERE tenant_id = $1 AND user_id = $2 AND seq > {top}::bigint
    ORDER BY seq LIMIT {lexicon.DELTA_ROWS}
) AS d ON true
"""


LEXICAL_TERMS = lexical_terms_sql(query="$3", cap="$4", top="$5")


@dataclass(frozen=True)
class LexicalTerms:
    """What the lexical ranking's first statement asks (``terms_args``) and, once read, its rows."""

    args: tuple[str, int, int | None]  # the query, the most texts a copy may hold + 1 (0: no copy), its top
    base: lexicon.Lexicon | None  # the copy whose top it is
    rows: list[Any] | None = None


def terms_args(
    *,
    lexicons: WindowCache,
    tenant_id: str,
    user_id: str,
    query: str,
    documents: int,
    lexicon_texts: int,
    lexicon_postings: int,
) -> LexicalTerms:
    """What the lexical ranking's first statement asks of a user with ``documents`` items."""
    copy = lexicon_texts > 0 and lexicon_postings > 0 and documents <= lexicon_texts
    base = lexicon.held(lexicons, tenant_id, user_id) if copy else None
    return LexicalTerms((query, lexicon_texts + 1 if copy else 0, base.top if base is not None else None), base)


# Then, for each kept term (``terms``), the user's texts holding it and their lengths (distinct lexemes):
# the indexed ones through item_search's per-user GIN index (one probe per term), unexpired at ``now``
# (item_search keeps its item's expires_at; it holds active items only, the worker removes the others),
# plus the user's newest ``pending`` changes the worker has not applied yet — their item_search rows (if
# any) are skipped and their text analysed here from the item, if still in force: normally a few rows;
# capped so that a user's bulk import does not make every window analyse thousands of texts (older ones
# are searchable once the worker reaches them). Ids go as uuid[]: decoding them costs half what text does.
# For a large user the statement names the tenant and the user as constants, unlike the window's other
# statements: which index serves it depends on how many texts this user has, and a generic plan, made
# without the values, follows the database's average user — where most users are small it reads the
# user's rows through ix_item_search_user_seq and tests each against the query, right for a small user,
# a scan of all of a large one's texts, and a large user is the one ranked here (smaller users are ranked
# from the process's copy of their texts). With the user a constant, the plan (generic for the remaining
# parameters, the terms and the time) is made for this user's share of the table, and, a statement of its
# own, it is prepared and planned once per connection (asyncpg's statement cache) rather than planned
# again on every call — as the shared statement on a custom plan would be, with two statements around it
# to switch the connection's plan mode and back. For a user with at most LARGE_USER_TEXTS items either
# plan reads a few thousand rows at most: such a user (ranked here before the copy is built, or while the
# worker catches up) shares the one statement.
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
# Every read of context_item names the tenant parameter itself (not the source's tenant_id, equal to it):
# so Citus sees the whole statement pinned to one tenant and sends it to that tenant's shard as it is (a
# router plan); through the lateral join it would try to push the subqueries down one by one, and refuses
# OFFSET in a lateral subquery over unnest.
# With each row, what ``retrieved_items`` would check of it for a window ($8: its domains, $9-$12: its
# scope instances): the row's version, whether it may be shown now (``usable``: in force, unexpired, in the
# domains: ``_retrievable``) and whether it applies to the window's scopes. A window's retrieved items are
# mostly these rows, read already, so for those this process holds in the same version the window needs
# no read of its own (a round trip and a primary-key probe per row fewer).
_NEIGHBOUR_COLUMNS = (
    f"c.id, c.observed_at, c.status, c.expires_at, c.domain, c.scope, c.scope_ref, {row_version('c')} AS version"
)
_CONVERSATION = f"""
SELECT s.id::text AS source, NULL::text AS neighbour, 0::bigint AS distance,
       CASE WHEN s.type = 'episode' THEN s.session_id END AS session_id, s.observed_at,
       CASE WHEN s.type = 'episode' AND s.session_id IS NOT NULL THEN s.content ~ $7::text END AS asks,
       NULL::boolean AS after, s.version, {retrievable("s", now="$5", domains="$8")} AS usable,
       {applies(9, "s")} AS applicable
FROM unnest($6::uuid[]) AS o(id)
CROSS JOIN LATERAL (
    SELECT *, {ROW_VERSION} AS version FROM context_item WHERE id = o.id AND tenant_id = $1 AND user_id = $2 OFFSET 0
) AS s
UNION ALL
SELECT s.id::text AS source, n.id::text AS neighbour, n.d AS distance, s.session_id, n.observed_at,
       NULL::boolean AS asks, n.after, n.version,
       {retrievable("n", now="$5", domains="$8")} AS usable,
       {applies(9, "n")} AS applicable
FROM unnest($3::uuid[]) AS o(id)
CROSS JOIN LATERAL (SELECT * FROM context_item WHERE id = o.id AND tenant_id = $1 AND user_id = $2 OFFSET 0) AS s
CROSS JOIN LATERAL (
    (SELECT {_NEIGHBOUR_COLUMNS},
            row_number() OVER (ORDER BY c.observed_at DESC, c.id DESC) AS d, false AS after
     FROM context_item c
     WHERE c.tenant_id = $1 AND c.user_id = s.user_id AND c.session_id = s.session_id
       AND c.type = 'episode' AND (c.observed_at, c.id) < (s.observed_at, s.id)
       AND {active_sql("c")} AND (c.expires_at IS NULL OR c.expires_at > $5)
     ORDER BY c.observed_at DESC, c.id DESC LIMIT $4)
    UNION ALL
    (SELECT {_NEIGHBOUR_COLUMNS},
            row_number() OVER (ORDER BY c.observed_at, c.id) AS d, true AS after
     FROM context_item c
     WHERE c.tenant_id = $1 AND c.user_id = s.user_id AND c.session_id = s.session_id
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
# Read at most once a minute per process (``ProcessCaches.shares``): planning a join with the pg_stats
# view costs more than the ranking itself, and the statistics change only when ANALYZE runs.


async def term_shares(driver: Any, held: Expiring[dict[str, float]]) -> dict[str, float]:
    """The most common lexemes of the lexical index and the share of indexed texts holding each (empty
    before the first ANALYZE), as read within the last minute (``held``)."""
    now = time.monotonic()
    shares = held.get(now)
    if shares is None:
        row = await driver.fetchrow(_SHARES_SQL)
        elems = list(row["elems"] or []) if row is not None else []
        freqs = list(row["freqs"] or [])[: len(elems)] if row is not None else []
        shares = dict(zip(elems, freqs, strict=True))
        held.put(now, shares)
    return shares


def _text_row(r: Any) -> dict[str, Any]:
    """A row written since the copy's greatest seq, as ``lexicon.Lexicon.with_rows`` takes it."""
    return {"id": r["id"], "lexemes": r["text_lexemes"], "expires_at": r["expires_at"], "seq": r["seq"]}


async def lexical_ranking(
    session: AsyncSession,
    *,
    caches: ProcessCaches,
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
    when they answer what this ranking would ask). ``caches``: the process's, for the copies, the term
    shares and a large user's statement."""
    driver = await driver_connection(session)
    shares = await term_shares(driver, caches.shares)
    asked = terms_args(
        lexicons=caches.lexicons,
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
        rows, base = list(await driver.fetch(LEXICAL_TERMS, tenant_id, user_id, *asked.args)), asked.base
    row = rows[0]
    kept, ignored = lexical.kept_terms(row["lexemes"] or [], shares, documents=documents, max_hits=max_hits)
    lag = max(0.0, row["lag"] or 0.0)
    if not kept:
        return [], lag, ignored
    if copy and row["lag"] is None and 0 < row["texts"] <= lexicon_texts:
        held = await lexicon.current(
            driver,
            caches=caches,
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
        sql = caches.statements.get((tenant_id, user_id))
        if sql is None:
            sql = caches.statements[tenant_id, user_id] = user_postings_sql(tenant_id, user_id)
        rows = await driver.fetch(sql, kept, now, pending)
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
