"""Every SQL statement of search: the retrieved items that pass the request's filters, and which of the
query's words each of them holds."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from scoring.lexical import CJK_RANGES, named_terms
from service.db.models import ContextItem


@dataclass(frozen=True)
class Filters:
    """What a search keeps of the retrieved items (each ``None``: no filter of that kind)."""

    statuses: Sequence[str]
    types: Sequence[str] | None = None
    domains: Sequence[str] | None = None
    session_id: str | None = None
    task_id: str | None = None
    observed_after: datetime | None = None
    observed_before: datetime | None = None


async def filtered_items(
    session: AsyncSession,
    *,
    tenant_id: str,
    user_id: str,
    ids: Sequence[str],
    filters: Filters,
    now: datetime,
) -> dict[str, ContextItem]:
    """The given items (by id) of the user that pass ``filters`` and are unexpired at ``now``."""
    if not ids:
        return {}
    c = ContextItem
    stmt = select(c).where(
        c.tenant_id == tenant_id,
        c.user_id == user_id,
        c.id.in_([uuid.UUID(i) for i in ids]),  # type: ignore[attr-defined]
        c.status.in_(list(filters.statuses)),  # type: ignore[attr-defined]
        or_(c.expires_at.is_(None), c.expires_at > now),  # type: ignore[union-attr, operator]
    )
    if filters.types:
        stmt = stmt.where(c.type.in_(list(filters.types)))  # type: ignore[attr-defined]
    if filters.domains:
        stmt = stmt.where(c.domain.in_(list(filters.domains)))  # type: ignore[union-attr]
    if filters.session_id is not None:
        stmt = stmt.where(c.session_id == filters.session_id)
    if filters.task_id is not None:
        stmt = stmt.where(c.task_id == filters.task_id)
    if filters.observed_after is not None:
        stmt = stmt.where(c.observed_at >= filters.observed_after)  # type: ignore[operator]
    if filters.observed_before is not None:
        stmt = stmt.where(c.observed_at < filters.observed_before)  # type: ignore[operator]
    return {str(r.id): r for r in (await session.execute(stmt)).scalars()}


# A query word is held by an item when the lexical analyser (ctxmem_tsv) finds one of the word's lexemes
# among the item's: "deployed" matches "deployment". Words are the query's runs of letters and digits
# outside CJK, and the terms of its CJK runs (ctxmem_cjk: characters and adjacent pairs, each held only as
# itself), in the query's order; scoring.lexical.named_terms then drops a character its matched pair names.
_MATCHED = text(
    f"""
SELECT c.id::text AS id, ARRAY(
    SELECT q.w FROM (
        SELECT w, bool_or(cjk) AS cjk, min(o) AS o FROM (
            SELECT w, false AS cjk, strpos(lower(:query), w) AS o
            FROM regexp_split_to_table(lower(regexp_replace(:query, '[{CJK_RANGES}]+', ' ', 'g')),
                                       '[^[:alnum:]]+') AS t(w)
            UNION ALL
            SELECT w, true, strpos(:query, w) FROM unnest(ctxmem_cjk(:query)) AS t(w)
        ) AS words WHERE w <> '' GROUP BY w
    ) AS q
    WHERE (CASE WHEN q.cjk THEN ARRAY[q.w] ELSE tsvector_to_array(ctxmem_tsv(q.w)) END) && i.lexemes
    ORDER BY q.o, char_length(q.w) DESC
) AS matched
FROM context_item c CROSS JOIN LATERAL (SELECT tsvector_to_array(ctxmem_tsv(c.content)) AS lexemes) AS i
WHERE c.tenant_id = :tenant_id AND c.id IN :ids
"""
).bindparams(bindparam("ids", expanding=True))


async def matched_words(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[str], query: str
) -> dict[str, list[str]]:
    """For each item, the query's words it holds, in the query's order."""
    if not ids:
        return {}
    rows = await session.execute(_MATCHED, {"tenant_id": tenant_id, "ids": [uuid.UUID(i) for i in ids], "query": query})
    return {r.id: named_terms(r.matched) for r in rows}
