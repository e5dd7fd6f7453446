"""Relevance of the user's items to this turn's query (docs/design.md §3.8): a lexical ranking (PostgreSQL
full-text search over ``item_search``) and a vector ranking (the index), fused as ``CTXMEM_FUSION`` says
(scoring/relevance.py: a convex combination of normalised scores by default, or reciprocal rank).

If the index is off, failing, or lagging behind the outbox by more than ``vector_max_lag_seconds``, the
window is still served — ranked by PostgreSQL alone — and says ``degraded`` in its warnings. Relevance
only orders rows the window fetched from PostgreSQL as active, or recalls rows that PostgreSQL confirms
active (``repository.recalled_items``), so superseded, expired or deleted items never come back through
it, however stale the index is.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from scoring.relevance import convex, in_context, normalised, rrf
from service.db.engine import driver_connection
from service.settings import Settings
from service.vectors.outbox import lag
from service.vectors.recall import VectorRecall

ACTIVE = ["available", "verified", "missing"]

# The query's terms, most common last, are kept while the hits they would bring stay within $8: a term's
# share of all indexed texts ($9 / $10: PostgreSQL's own statistics of item_search.tsv, most_common_elems,
# refreshed by ANALYZE and read by ``term_shares``) times the user's $7 items estimates how many of the
# user's texts hold it. Ranking every text
# that holds a very common word is what would make a window slower as a user's memory grows, and such a
# word says little about what is relevant (its inverse document frequency is near 0): a user with a few
# thousand items keeps every term; one with 100,000 keeps the rarer ones, and a query made only of very
# common words is ranked by the vector index alone.
#
# Then: indexed items through item_search (GIN), plus the user's newest $6 changes the outbox worker has not
# applied yet (their text analysed here, from the outbox's side: normally a few rows; capped so that a
# user's bulk import does not make every window analyse thousands of texts — older ones are searchable
# once the worker reaches them). Each kept term is looked up on its own (one GIN probe per term), which
# gives its document frequency among the user's texts; a text scores BM25 over the terms it holds
# (k1 1.2, b 0.75, term presence, length = its distinct lexemes, N = $7 or the texts found, float8
# arithmetic throughout: numeric made the sum 3x slower). The best $4 are then re-checked against context_item
# (active, unexpired), so a lagging index never brings back a dead item. The same round trip reads the
# age of the oldest change the worker has not applied (an index probe): whether the vector index can be
# trusted.
_LEXICAL = """
WITH terms AS (
    SELECT t.lexeme, coalesce(st.f, 0) AS f
    FROM unnest(tsvector_to_array(ctxmem_tsv($3))) AS t(lexeme)
    LEFT JOIN unnest($9::text[], $10::real[]) AS st(e, f) ON st.e = t.lexeme
),
kept AS (
    SELECT lexeme, quote_literal(lexeme)::tsquery AS q
    FROM (SELECT lexeme, sum(f) OVER (ORDER BY f, lexeme) AS running FROM terms) AS r
    WHERE running * $7 <= $8
),
pending AS MATERIALIZED (
    SELECT DISTINCT c.id, ctxmem_tsv(c.content) AS tsv
    FROM (SELECT item_id FROM vector_outbox
          WHERE tenant_id = $1 AND user_id = $2 AND dead_at IS NULL ORDER BY id DESC LIMIT $6) o
    JOIN context_item c ON c.id = o.item_id
    WHERE c.tenant_id = $1
),
pairs AS MATERIALIZED (
    SELECT k.lexeme, s.item_id AS id, length(s.tsv) AS len
    FROM kept k JOIN item_search s ON s.tenant_id = $1 AND s.user_id = $2 AND s.tsv @@ k.q
    WHERE NOT EXISTS (SELECT 1 FROM pending p WHERE p.id = s.item_id)
    UNION ALL
    SELECT k.lexeme, p.id, length(p.tsv) FROM kept k JOIN pending p ON p.tsv @@ k.q
),
docs AS (
    SELECT count(*)::float8 AS n, coalesce(avg(len), 1)::float8 AS avglen
    FROM (SELECT id, max(len) AS len FROM pairs GROUP BY id) AS d
),
idf AS (
    SELECT c.lexeme, ln(1::float8 + (greatest($7::float8, d.n) - c.df + 0.5::float8) / (c.df + 0.5::float8)) AS w
    FROM (SELECT lexeme, count(*)::float8 AS df FROM pairs GROUP BY lexeme) AS c, docs d
),
scored AS (
    SELECT p.id, sum(i.w) * 2.2::float8 / (1::float8 + 1.2::float8
           * (0.25::float8 + 0.75::float8 * max(p.len) / greatest(d.avglen, 1::float8))) AS r
    FROM pairs p JOIN idf i USING (lexeme), docs d
    GROUP BY p.id, d.avglen
)
SELECT (SELECT EXTRACT(EPOCH FROM now() - created_at)::float8 FROM vector_outbox WHERE dead_at IS NULL
        ORDER BY id LIMIT 1) AS lag,
       (SELECT count(*) FROM terms) - (SELECT count(*) FROM kept) AS ignored,
       t.id, t.r
FROM (SELECT 1) AS one LEFT JOIN (
    SELECT c.id::text AS id, h.r
    FROM (SELECT id, r FROM scored ORDER BY r DESC, id DESC LIMIT $4) h
    JOIN context_item c ON c.id = h.id
    WHERE c.status IN ('available', 'verified', 'missing') AND (c.expires_at IS NULL OR c.expires_at > $5)
) AS t ON true
ORDER BY t.r DESC, t.id DESC
"""


# The turns just before and after each of the given turns in its conversation (same user and session,
# episodes in observed order; only live ones count), up to $4 on each side, with their distance: probes of
# ix_context_item_conversation, never a read of the whole session.
_NEIGHBOURS = """
SELECT s.id::text AS source, n.id::text AS neighbour, n.d AS distance
FROM context_item s
CROSS JOIN LATERAL (
    (SELECT c.id, row_number() OVER (ORDER BY c.observed_at DESC, c.id DESC) AS d
     FROM context_item c
     WHERE c.tenant_id = s.tenant_id AND c.user_id = s.user_id AND c.session_id = s.session_id
       AND c.type = 'episode' AND (c.observed_at, c.id) < (s.observed_at, s.id)
       AND c.status IN ('available', 'verified', 'missing') AND (c.expires_at IS NULL OR c.expires_at > $5)
     ORDER BY c.observed_at DESC, c.id DESC LIMIT $4)
    UNION ALL
    (SELECT c.id, row_number() OVER (ORDER BY c.observed_at, c.id) AS d
     FROM context_item c
     WHERE c.tenant_id = s.tenant_id AND c.user_id = s.user_id AND c.session_id = s.session_id
       AND c.type = 'episode' AND (c.observed_at, c.id) > (s.observed_at, s.id)
       AND c.status IN ('available', 'verified', 'missing') AND (c.expires_at IS NULL OR c.expires_at > $5)
     ORDER BY c.observed_at, c.id LIMIT $4)
) AS n
WHERE s.tenant_id = $1 AND s.user_id = $2 AND s.id = ANY($3::uuid[]) AND s.type = 'episode'
  AND s.session_id IS NOT NULL
"""


async def conversation_neighbours(
    session: AsyncSession, *, tenant_id: str, user_id: str, ids: list[str], reach: int, now: datetime
) -> list[tuple[str, str, int]]:
    """(turn, neighbour, distance) for the conversation turns among ``ids``: the live episodes of the same
    session up to ``reach`` turns before and after each (``[]`` when ``reach`` is 0 or nothing is a turn)."""
    if reach <= 0 or not ids:
        return []
    driver = await driver_connection(session)
    rows = await driver.fetch(_NEIGHBOURS, tenant_id, user_id, ids, reach, now)
    return [(r["source"], r["neighbour"], int(r["distance"])) for r in rows]


_SHARES_SQL = """
SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs FROM pg_stats
WHERE schemaname = current_schema() AND tablename = 'item_search' AND attname = 'tsv'
"""
# Read at most once a minute per process: planning a join with the pg_stats view costs more than the
# ranking itself (~8 ms against ~1 ms), and the statistics change only when ANALYZE runs.
SHARES_TTL_SECONDS = 60.0
_shares: tuple[float, list[str], list[float]] | None = None


async def term_shares(driver: Any) -> tuple[list[str], list[float]]:
    """The most common lexemes of the lexical index and the share of indexed texts holding each (empty
    before the first ANALYZE)."""
    global _shares
    now = time.monotonic()
    if _shares is None or now - _shares[0] > SHARES_TTL_SECONDS:
        row = await driver.fetchrow(_SHARES_SQL)
        elems = list(row["elems"] or []) if row is not None else []
        freqs = list(row["freqs"] or [])[: len(elems)] if row is not None else []
        _shares = (now, elems, freqs)
    return _shares[1], _shares[2]


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
) -> tuple[list[tuple[str, float]], float, int]:
    """(id, BM25 score) of the user's active items matching any of the query's kept terms, best first
    (inverse document frequencies from the user's own texts, length-normalised), how many
    seconds the oldest change still queued for the indexes has waited (0: none), and how many of the
    query's terms were too common among the user's ``documents`` items to rank by (``max_hits``)."""
    driver = await driver_connection(session)
    elems, freqs = await term_shares(driver)
    rows = await driver.fetch(
        _LEXICAL, tenant_id, user_id, query, limit, now, pending, documents, max_hits, elems, freqs
    )
    hits = [(r["id"], float(r["r"])) for r in rows if r["id"] is not None]
    return hits, max(0.0, rows[0]["lag"] or 0.0), int(rows[0]["ignored"] or 0)


async def vector_ranking(
    recall: VectorRecall, settings: Settings, *, tenant_id: str, user_id: str, query: str
) -> list[tuple[str, float]]:
    """The index's ranking: (id, cosine), best first, above the noise floor. Raises whatever the
    embedder or the index raise."""
    (vector,) = await recall.embedder.embed([query])
    hits = await recall.index.search(
        vector, tenant_id=tenant_id, user_id=user_id, limit=settings.recall_candidates, statuses=ACTIVE
    )
    floor = settings.vector_min_score if settings.vector_min_score is not None else recall.embedder.min_score
    return [(str(h.id), h.score) for h in hits if h.score >= floor]


@dataclass(frozen=True)
class Relevance:
    """Item id → relevance in (0, 1] (1 for the best of this query; items in neither ranking: absent),
    the rankings it was fused from (best first; ``vector`` is ``None`` when the index was not used) and
    the warnings to pass on."""

    scores: dict[str, float]
    lexical: list[tuple[str, float]] | None
    vector: list[tuple[str, float]] | None
    warnings: list[str]


async def relevance(
    session: AsyncSession,
    recall: VectorRecall | None,
    settings: Settings,
    *,
    tenant_id: str,
    user_id: str,
    query: str,
    now: datetime,
    mode: str | None = None,
    documents: int = 0,
) -> Relevance:
    """The relevance of the user's items to ``query`` under ``mode`` (default: ``settings.recall_mode``).
    ``vector`` mode falls back to the lexical ranking when the index cannot be used; ``hybrid`` then
    uses the lexical ranking alone; either way the warnings say ``degraded``."""
    mode = mode or settings.recall_mode
    use_vectors = mode in ("hybrid", "vector")

    async def vectors() -> list[tuple[str, float]] | Exception | None:
        if not use_vectors or recall is None:
            return None
        try:
            return await vector_ranking(recall, settings, tenant_id=tenant_id, user_id=user_id, query=query)
        except Exception as exc:  # any failure of the index or the embedder: serve without it
            return exc

    # The index is searched while PostgreSQL ranks (the lexical query also says whether the index lags).
    (lexical, waited, _), vec = await asyncio.gather(
        lexical_ranking(
            session,
            tenant_id=tenant_id,
            user_id=user_id,
            query=query,
            limit=settings.recall_candidates,
            now=now,
            pending=settings.lexical_pending_limit,
            documents=documents,
            max_hits=settings.lexical_max_hits,
        ),
        vectors(),
    )
    warnings: list[str] = []
    if use_vectors:
        problem = None
        if recall is None:
            problem = "vector recall is off"
        elif waited > settings.vector_max_lag_seconds:
            behind = await lag(session)
            problem = f"the vector index is {behind.oldest_seconds:.0f}s behind ({behind.pending} changes queued)"
        elif isinstance(vec, Exception):
            problem = f"vector index unavailable ({type(vec).__name__})"
        if problem is not None:
            warnings.append(f"degraded: {problem}; relevance from PostgreSQL full-text search only")
    found = vec if isinstance(vec, list) and not warnings else None
    words = None if mode == "vector" and found is not None else lexical  # vector mode: the fallback only
    scores = normalised(fuse(words, found, settings, recall))
    if settings.context_share > 0 and scores:
        best = sorted(scores, key=lambda i: (-scores[i], i))[: settings.context_sources]
        links = await conversation_neighbours(
            session, tenant_id=tenant_id, user_id=user_id, ids=best, reach=settings.context_reach, now=now
        )
        scores = in_context(scores, links, share=settings.context_share)
    return Relevance(scores, words, found, warnings)


def fuse(
    lexical: list[tuple[str, float]] | None,
    vector: list[tuple[str, float]] | None,
    settings: Settings,
    recall: VectorRecall | None,
) -> dict[str, float]:
    """The rankings fused as ``settings.fusion`` says (scoring/relevance.py): ``convex`` (default) or ``rrf``."""
    if settings.fusion == "rrf":
        return rrf([[i for i, _ in r] for r in (lexical, vector) if r is not None], k=settings.rrf_k)
    scored, floors, weights = [], [], []
    w_lexical = settings.fusion_lexical_weight
    if w_lexical is None:
        w_lexical = recall.embedder.lexical_weight if recall is not None else 0.5
    if lexical is not None:
        scored.append(lexical)
        floors.append(0.0)
        weights.append(w_lexical)
    if vector is not None:
        scored.append(vector)
        floor = settings.vector_min_score
        floors.append(floor if floor is not None else (recall.embedder.min_score if recall is not None else 0.0))
        weights.append(1.0 - w_lexical)
    return convex(scored, floors=floors, weights=weights)
