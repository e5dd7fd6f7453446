"""Relevance of the user's items to this turn's query (DESIGN §3.8): lexical (PostgreSQL full-text
search) and vector (the index) rankings fused by reciprocal rank (scoring/relevance.py).

If the index is off, failing, or lagging behind the outbox by more than ``vector_max_lag_seconds``, the
window is still served — ranked by PostgreSQL alone — and says ``degraded`` in its warnings. Whatever
the index returns only re-ranks rows the window already fetched from PostgreSQL as active, so superseded,
expired or deleted items never come back through it, however stale the index is.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from scoring.relevance import normalised, rrf
from service.settings import Settings
from service.vectors.outbox import lag
from service.vectors.recall import VectorRecall

ACTIVE = ["available", "verified", "missing"]

_LEXICAL = text(
    """
    SELECT id FROM (
        SELECT c.id::text AS id, ctxmem_tsv(c.content) AS tsv, q FROM context_item c, ctxmem_tsq(:q) AS q
        WHERE c.tenant_id = :t AND c.user_id = :u AND c.status IN ('available', 'verified', 'missing')
    ) x WHERE tsv @@ q
    ORDER BY ts_rank_cd(tsv, q) DESC, id DESC
    LIMIT :n
    """
)


async def lexical_ranking(session: AsyncSession, *, tenant_id: str, user_id: str, query: str, limit: int) -> list[str]:
    rows = await session.execute(_LEXICAL, {"q": query, "t": tenant_id, "u": user_id, "n": limit})
    return [r[0] for r in rows]


async def vector_ranking(
    session: AsyncSession,
    recall: VectorRecall | None,
    settings: Settings,
    *,
    tenant_id: str,
    user_id: str,
    query: str,
) -> tuple[list[str] | None, str | None]:
    """The index's ranking, or ``None`` and the reason the window is degraded."""
    if recall is None:
        return None, "degraded: vector recall is off; relevance from PostgreSQL full-text search only"
    behind = await lag(session)
    if behind.oldest_seconds > settings.vector_max_lag_seconds:
        return None, (
            f"degraded: the vector index is {behind.oldest_seconds:.0f}s behind ({behind.pending} changes queued); "
            "relevance from PostgreSQL full-text search only"
        )
    try:
        (vector,) = await recall.embedder.embed([query])
        hits = await recall.index.search(
            vector, tenant_id=tenant_id, user_id=user_id, limit=settings.recall_candidates, statuses=ACTIVE
        )
    except Exception as exc:  # any failure of the index or the embedder: serve without it
        return None, f"degraded: vector index unavailable ({type(exc).__name__}); relevance from PostgreSQL only"
    return [str(h.id) for h in hits], None


async def relevance(
    session: AsyncSession,
    recall: VectorRecall | None,
    settings: Settings,
    *,
    tenant_id: str,
    user_id: str,
    query: str,
) -> tuple[dict[str, float], list[str]]:
    """Item id → relevance in [0, 1] (1 for the best), and any warnings."""
    warnings: list[str] = []
    rankings: list[list[str]] = []
    mode = settings.recall_mode
    lexical: list[str] | None = None
    if mode in ("hybrid", "lexical"):
        lexical = await lexical_ranking(
            session, tenant_id=tenant_id, user_id=user_id, query=query, limit=settings.recall_candidates
        )
        rankings.append(lexical)
    if mode in ("hybrid", "vector"):
        vec, problem = await vector_ranking(
            session, recall, settings, tenant_id=tenant_id, user_id=user_id, query=query
        )
        if vec is not None:
            rankings.append(vec)
        else:
            warnings.append(problem or "degraded")
            if lexical is None:  # vector-only mode falls back to the PostgreSQL ranking
                rankings.append(
                    await lexical_ranking(
                        session, tenant_id=tenant_id, user_id=user_id, query=query, limit=settings.recall_candidates
                    )
                )
    return normalised(rrf(rankings, k=settings.rrf_k)), warnings
