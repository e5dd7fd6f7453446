"""Relevance of the user's items to this turn's query (docs/design.md §3.8): a lexical ranking (PostgreSQL
full-text search over ``item_search``) and a vector ranking (the index), fused as ``CTXMEM_FUSION`` says
(scoring/relevance.py: a convex combination of normalised scores by default, or reciprocal rank).

If the index is off, failing, or lagging behind the outbox by more than ``vector_max_lag_seconds``, the
window is still served — ranked by PostgreSQL alone — and says ``degraded`` in its warnings. Relevance
only orders rows the window fetched from PostgreSQL as active, or recalls rows that PostgreSQL confirms
active (the window's ``retrieved_items``), so superseded, expired or deleted items never come back through
it, however stale the index is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from scoring.relevance import (
    QUESTION_END,
    answered,
    convex,
    in_context,
    in_period,
    in_session,
    named_periods,
    normalised,
    rrf,
)
from service.context import RequestContext
from service.db.engine import driver_connection
from service.db.models import ACTIVE_STATUSES
from service.db.selection import Selection
from service.recall import repository
from service.recall.repository import lexical_ranking
from service.settings import Settings
from service.vectors.recall import VectorRecall
from service.vectors.repository import lag


async def vector_ranking(
    recall: VectorRecall, settings: Settings, *, tenant_id: str, user_id: str, query: str
) -> list[tuple[str, float]]:
    """The index's ranking: (id, cosine), best first, above the noise floor. Raises whatever the
    embedder or the index raise."""
    (vector,) = await recall.embedder.embed([query])
    hits = await recall.index.search(
        vector, tenant_id=tenant_id, user_id=user_id, limit=settings.recall.candidates, statuses=list(ACTIVE_STATUSES)
    )
    floor = (
        settings.recall.vector_min_score if settings.recall.vector_min_score is not None else recall.embedder.min_score
    )
    return [(str(h.id), h.score) for h in hits if h.score >= floor]


# The index's part of a ranking: its hits, the exception it failed with (the window is then served
# without it, ``degraded``), or None when the mode does not use it or there is no index.
VectorResult = list[tuple[str, float]] | Exception | None


async def vector_result(ctx: RequestContext, *, user_id: str, query: str, mode: str | None = None) -> VectorResult:
    """``vector_ranking`` as ``relevance`` uses it (under ``mode``, default ``settings.recall.mode``)."""
    recall, settings = ctx.vectors, ctx.settings
    if (mode or settings.recall.mode) not in ("hybrid", "vector") or recall is None:
        return None
    try:
        return await vector_ranking(recall, settings, tenant_id=ctx.principal.tenant_id, user_id=user_id, query=query)
    except Exception as exc:  # any failure of the index or the embedder: serve without it
        return exc


@dataclass(frozen=True)
class Relevance:
    """Item id → relevance in (0, 1] (1 for the best of this query; items in neither ranking: absent),
    the rankings it was fused from (best first; ``vector`` is ``None`` when the index was not used),
    the warnings to pass on and, for a window's selection, what its conversation context read of the
    scored rows (``repository.Conversations.checked``, for the window's ``retrieved_items``)."""

    scores: dict[str, float]
    lexical: list[tuple[str, float]] | None
    vector: list[tuple[str, float]] | None
    warnings: list[str]
    checked: dict[str, repository.Checked | None] = field(default_factory=dict)


async def relevance(
    ctx: RequestContext,
    *,
    user_id: str,
    query: str,
    documents: int | None = None,
    mode: str | None = None,
    first: repository.LexicalTerms | None = None,
    searched: Awaitable[VectorResult] | None = None,
    selection: Selection | None = None,
) -> Relevance:
    """The relevance of the user's items to ``query`` under ``mode`` (default: ``settings.recall.mode``), at
    ``ctx.now``, from ``ctx.vectors`` and PostgreSQL. ``vector`` mode falls back to the lexical ranking
    when the index cannot be used; ``hybrid`` then uses the lexical ranking alone; either way the
    warnings say ``degraded``. ``documents``: how many texts the user has, as the lexical ranking
    estimates term frequencies (None: the items of the user's and global scopes, counted here). A caller
    that has begun them already hands over the lexical ranking's first rows (``first``: the window's
    version check) and the index's search (``searched``: ``vector_result`` for the same query and mode). A
    window passes its ``selection`` (this user's): the conversation context then also checks the scored
    rows for it."""
    session, recall, settings, now = ctx.session, ctx.vectors, ctx.settings, ctx.now
    tenant_id = ctx.principal.tenant_id
    mode = mode or settings.recall.mode
    use_vectors = mode in ("hybrid", "vector")
    if documents is None:
        driver = await driver_connection(session)
        everywhere = Selection(tenant_id=tenant_id, user_id=user_id).args()
        documents = await repository.applicable_count(driver, everywhere, counts=ctx.caches.counts)
    if searched is None:
        searched = vector_result(ctx, user_id=user_id, query=query, mode=mode)

    # The index is searched while PostgreSQL ranks (the lexical query also says whether the index lags).
    (lexical, waited, _), vec = await asyncio.gather(
        lexical_ranking(
            session,
            caches=ctx.caches,
            tenant_id=tenant_id,
            user_id=user_id,
            query=query,
            limit=settings.recall.candidates,
            now=now,
            pending=settings.recall.lexical_pending_limit,
            documents=documents,
            max_hits=settings.recall.lexical_max_hits,
            lexicon_texts=settings.recall.lexicon_texts,
            lexicon_postings=settings.recall.lexicon_postings,
            first=first,
        ),
        searched,
    )
    warnings: list[str] = []
    if use_vectors:
        problem = None
        if recall is None:
            problem = "vector recall is off"
        elif waited > settings.vectors.max_lag_seconds:
            behind = await lag(session, now=now)
            problem = f"the vector index is {behind.oldest_seconds:.0f}s behind ({behind.pending} changes queued)"
        elif isinstance(vec, Exception):
            problem = f"vector index unavailable ({type(vec).__name__})"
        if problem is not None:
            warnings.append(f"degraded: {problem}; relevance from PostgreSQL full-text search only")
    found = vec if isinstance(vec, list) and not warnings else None
    words = None if mode == "vector" and found is not None else lexical  # vector mode: the fallback only
    scores = normalised(fuse(words, found, settings, recall))
    scores, checked = await in_conversation(
        session, settings, scores, tenant_id=tenant_id, user_id=user_id, now=now, query=query, selection=selection
    )
    return Relevance(scores, words, found, warnings, checked)


async def in_conversation(
    session: AsyncSession,
    settings: Settings,
    scores: dict[str, float],
    *,
    tenant_id: str,
    user_id: str,
    now: datetime,
    query: str = "",
    selection: Selection | None = None,
) -> tuple[dict[str, float], dict[str, repository.Checked | None]]:
    """Items read in their conversation and their time (scoring/relevance.py), as ``settings.recall`` says: a
    turn gains from its best neighbours (``in_context``: the neighbours of the ``context_sources`` most
    relevant items), a question turn hands a share of its relevance to its reply (``answered``), then a turn
    leans towards its session's relevance (``in_session``); where the query names a date, what was observed
    then is preferred (``in_period``). One round trip for all; none when all are off or nothing is
    relevant. Also, given a window's ``selection``, what that round trip read of the rows for it
    (``repository.Conversations.checked``; empty without one)."""
    r = settings.recall
    neighbours = r.context_share > 0 and r.context_reach > 0
    sessions = r.session_share > 0
    questions = r.question_share > 0
    periods = named_periods(query) if r.period_share > 0 else []
    if not scores or not (neighbours or sessions or questions or periods):
        return scores, {}
    best = sorted(scores, key=lambda i: (-scores[i], i))[: r.context_sources] if neighbours or questions else []
    found = await repository.conversation_context(
        session,
        tenant_id=tenant_id,
        user_id=user_id,
        ids=list(scores) if sessions or questions or periods else [],
        sources=best,
        reach=max(r.context_reach, 1) if questions else r.context_reach,
        now=now,
        question=QUESTION_END if questions else None,
        selection=selection,
    )
    if neighbours:
        scores = in_context(scores, found.links, share=r.context_share)
    scores = answered(scores, found.asking, found.replies, share=r.question_share)
    scores = in_session(scores, found.session_of, share=r.session_share, turns=r.session_turns)
    return in_period(scores, found.observed_at, periods, share=r.period_share), found.checked


def fuse(
    lexical: list[tuple[str, float]] | None,
    vector: list[tuple[str, float]] | None,
    settings: Settings,
    recall: VectorRecall | None,
) -> dict[str, float]:
    """The rankings fused as ``settings.recall.fusion`` says (scoring/relevance.py): ``convex`` (default) or ``rrf``."""
    if settings.recall.fusion == "rrf":
        return rrf([[i for i, _ in r] for r in (lexical, vector) if r is not None], k=settings.recall.rrf_k)
    scored, floors, weights = [], [], []
    w_lexical = settings.recall.fusion_lexical_weight
    if w_lexical is None:
        w_lexical = recall.embedder.lexical_weight if recall is not None else 0.5
    if lexical is not None:
        scored.append(lexical)
        floors.append(0.0)
        weights.append(w_lexical)
    if vector is not None:
        scored.append(vector)
        floor = settings.recall.vector_min_score
        floors.append(floor if floor is not None else (recall.embedder.min_score if recall is not None else 0.0))
        weights.append(1.0 - w_lexical)
    return convex(scored, floors=floors, weights=weights)
