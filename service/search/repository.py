"""Every SQL statement of search: the retrieved items that pass the request's filters, and which of the
query's words each of them holds."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

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


# A query word is held by an item when the lexical analyser (ctxmem_tsv: English stems, every CJK
# character a token) finds one of the word's lexemes among the item's: "deployed" matches "deployment".
# Words are the query's runs of letters and digits; a run of Chinese characters is one word.
_MATCHED = text(
    """
SELECT c.id::text AS id, ARRAY(
    SELECT w FROM (SELECT DISTINCT w, min(o) AS o
                   FROM regexp_split_to_table(lower(:query), '[^[:alnum:]]+') WITH ORDINALITY AS t(w, o)
                   WHERE w <> '' GROUP BY w) AS q
    WHERE tsvector_to_array(ctxmem_tsv(w)) && tsvector_to_array(ctxmem_tsv(c.content))
    ORDER BY o
) AS matched
FROM context_item c
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
    return {r.id: list(r.matched) for r in rows}
