"""Search: the user's items ranked by the relevance the window uses (recall/service.py: BM25 in PostgreSQL
fused with the vector index, plus the conversation context of each matching turn), filtered as the
request says, each with the parts of its score and why it matched. A query that is exactly a handle (the
end of an id that a window shows before a shortened item) finds that item first."""

from __future__ import annotations

from typing import get_args

from schemas.items import ItemRead
from schemas.search import InForceStatus, SearchHit, SearchRequest, SearchResponse, SearchTokens
from scoring.relevance import explain_match
from scoring.window import as_handle
from service.auth.principal import Permission
from service.context import RequestContext
from service.db.replicas import Reads
from service.items import repository as items
from service.recall import service as recall
from service.search import repository

IN_FORCE = get_args(InForceStatus)
# How many items a handle may name in one search (more than one only when several of the user's ids end
# alike: all of them come first, for the caller to tell apart by more of the id).
HANDLE_HITS = 10


async def search(
    ctx: RequestContext, *, user_id: str, req: SearchRequest, reads: Reads | None = None
) -> SearchResponse:
    """Search on a streaming replica that has the user's writes, when one is fit (``reads``:
    service/db/replicas.py), else on the primary: a search writes nothing."""
    if reads is None:
        return await _search(ctx, user_id=user_id, req=req)
    return await reads.run(ctx, lambda c: _search(c, user_id=user_id, req=req))


async def _search(ctx: RequestContext, *, user_id: str, req: SearchRequest) -> SearchResponse:
    """The best ``req.limit`` of the user's items in force for ``req.query`` that pass the filters (within
    ``req.budget`` tokens, each item whole, if given). Only the best ``CTXMEM_RECALL_CANDIDATES`` of each
    ranking are filtered: a narrow filter over a common query can find fewer than exist."""
    ctx.principal.require(Permission.ITEMS_READ)
    tenant_id = ctx.principal.tenant_id
    found = await recall.relevance(ctx, user_id=user_id, query=req.query)
    ranked = sorted(found.scores, key=lambda i: (-found.scores[i], i))
    # A query that is a handle names its item: first, whatever the rankings made of its hex digits.
    handle = as_handle(req.query)
    named: list[str] = []
    if handle is not None:
        ends = await items.find_by_handle(
            ctx.session, tenant_id=tenant_id, user_id=user_id, handle=handle, limit=HANDLE_HITS
        )
        named = [str(r.id) for r in ends]
        first = set(named)
        ranked = named + [i for i in ranked if i not in first]
    filters = repository.Filters(
        statuses=req.statuses or IN_FORCE,
        types=req.types,
        domains=req.domains,
        session_id=req.session_id,
        task_id=req.task_id,
        observed_after=req.observed_after,
        observed_before=req.observed_before,
    )
    rows = await repository.filtered_items(
        ctx.session, tenant_id=tenant_id, user_id=user_id, ids=ranked, filters=filters, now=ctx.now
    )
    chosen, used = [], 0
    for i in ranked:
        row = rows.get(i)
        if row is None or (req.budget is not None and used + row.token_cost > req.budget):
            continue
        chosen.append(row)
        used += row.token_cost
        if len(chosen) == req.limit:
            break
    matched = await repository.matched_words(
        ctx.session, tenant_id=tenant_id, ids=[str(r.id) for r in chosen], query=req.query
    )
    lexical, vector = dict(found.lexical or []), dict(found.vector or [])
    hits = []
    for row in chosen:
        i = str(row.id)
        words = matched.get(i, [])
        if i in named:
            score, why = 1.0, by_handle(handle or "", len(named))
        else:
            score, why = found.scores[i], explain_match(matched=words, lexical=lexical.get(i), vector=vector.get(i))
        hits.append(
            SearchHit(
                item=ItemRead.model_validate(row),
                score=round(score, 4),
                lexical=round(lexical[i], 4) if i in lexical else None,
                vector=round(vector[i], 4) if i in vector else None,
                matched=words,
                why=why,
            )
        )
    return SearchResponse(items=hits, tokens=SearchTokens(budget=req.budget, used=used), warnings=found.warnings)


def by_handle(handle: str, named: int) -> str:
    """Why an item named by the query's handle was found, in words."""
    if named == 1:
        return f"handle: its id ends with {handle}"
    more = "at least " if named == HANDLE_HITS else ""
    return f"handle: its id ends with {handle}, as {more}{named} of the user's ids do (ask with more of the id)"
