"""Context-item rules: server-side defaults, permission checks, writes with their events."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pydantic_core

from schemas.items import ItemCreate, ItemPage, ItemRead, ItemVariants, LevelText, Resolution
from scoring.compress import assemble_levels, derive_row_levels
from scoring.items import (
    SCOPE_ID_FIELD,
    authority_for_source,
    default_confidence,
    default_expires_at,
    from_the_future,
)
from scoring.scopes import ScopeContext, Scoped, effective, scope_ref
from scoring.window import HANDLE_CHARS
from service.auth.principal import Permission
from service.context import RequestContext
from service.errors import (
    AmbiguousHandle,
    BatchItemInvalid,
    Forbidden,
    ItemNotFound,
    ValidationFailed,
)
from service.events import event, record_events
from service.ids import uuid7
from service.items import repository
from service.items.resolution import Plan, resolve_rows
from service.limits import check_batch
from service.pagination import decode_cursor, encode_cursor, page_size
from service.tokenizer import Tokenizer
from service.users import service as users
from service.vectors.repository import enqueue_sync


def _fail(message: str, index: int | None) -> ValidationFailed:
    if index is None:
        return ValidationFailed(message)
    return BatchItemInvalid(f"items[{index}]: {message}", index=index)


def _event_snapshot(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": row["type"],
        "key": row["key"],
        "scope": row["scope"],
        "status": row["status"],
        "superseded_by": str(row["superseded_by"]) if row["superseded_by"] else None,
        "authority": row["authority"],
        "token_cost": row["token_cost"],
    }


@dataclass(frozen=True)
class Written:
    """What a write stored: the new rows (as inserted, after resolution) and each row's resolution, by index."""

    rows: list[dict[str, Any]]
    resolutions: Mapping[int, dict[str, Any]]

    def read(self) -> list[ItemRead]:
        resolutions = self.resolutions
        return [ItemRead.model_validate({**row, "resolution": resolutions.get(i)}) for i, row in enumerate(self.rows)]

    def read_json(self, i: int) -> bytes:
        """``self.read()[i].model_dump_json()``, byte for byte, without building the model."""
        return pydantic_core.to_json(read_data(self.rows[i], self.resolutions.get(i)), inf_nan_mode="null")

    def batch_json(self) -> bytes:
        """``ItemBatchResult(items=self.read()).model_dump_json()``, byte for byte, without the models: a batch's
        rows are already valid, and validating them into models only to serialise them again doubles the work."""
        items = [read_data(row, self.resolutions.get(i)) for i, row in enumerate(self.rows)]
        return pydantic_core.to_json({"items": items}, inf_nan_mode="null")


@dataclass(frozen=True)
class Provenance:
    """Where a learned item comes from: the extractor and version, and the words it rests on (the JSON of
    ``schemas.items.Evidence``)."""

    extracted_by: str
    evidence: dict[str, Any]


_READ_FIELDS: Final = tuple(ItemRead.model_fields)
_RESOLUTION_FIELDS: Final = tuple(Resolution.model_fields)
_VARIANT_FIELDS: Final = tuple(ItemVariants.model_fields)


def read_data(row: Mapping[str, Any], resolution: Mapping[str, Any] | None) -> dict[str, Any]:
    """A row this module wrote as plain data in ``ItemRead``'s field order and types (what its
    ``model_dump()`` gives): what the model adds is filled in — every variant (None where the client gave
    none), the resolution's own fields, ``confidence`` as a float — and what it leaves out is left out.
    ``tests/service/items/test_write_path.py`` holds the JSON of this and of the model to be the same."""
    out = {f: row.get(f) for f in _READ_FIELDS}
    out["confidence"] = float(row["confidence"])
    variants = row["variants"]
    if variants is not None:
        out["variants"] = {f: variants.get(f) for f in _VARIANT_FIELDS}
    out["resolution"] = None if resolution is None else {f: resolution[f] for f in _RESOLUTION_FIELDS}
    return out


async def create_items(
    ctx: RequestContext, *, user_id: str, items: Sequence[ItemCreate], batch: bool
) -> list[ItemRead]:
    """Validate what the schema cannot, fill server-side defaults, insert items and events at once.
    In a batch the first bad item rejects the whole batch, naming its index."""
    return (await write_items(ctx, user_id=user_id, items=items, batch=batch)).read()


async def write_items(
    ctx: RequestContext,
    *,
    user_id: str,
    items: Sequence[ItemCreate],
    batch: bool,
    provenance: Sequence[Provenance] | None = None,
) -> Written:
    """``create_items`` without building the response models (the HTTP routes serialise ``Written``).
    ``provenance``, one per item, marks items learned from a conversation (service/extraction/)."""
    ctx.principal.require(Permission.ITEMS_WRITE)
    _check_items(ctx, items=items, batch=batch)
    await _check_related(ctx, user_id=user_id, items=items, batch=batch)
    costs = ctx.tokenizer.count_many([item.content for item in items])
    rows = [_new_row(ctx, user_id=user_id, item=item, cost=cost) for item, cost in zip(items, costs, strict=True)]
    if provenance is not None:
        for row, learned in zip(rows, provenance, strict=True):
            row["extracted_by"], row["evidence"] = learned.extracted_by, learned.evidence
    attach_levels(ctx.tokenizer, rows=rows)
    await users.ensure_user(ctx, user_id=user_id)
    plan = await resolve_rows(
        ctx.session, principal=ctx.principal, user_id=user_id, rows=rows, now=ctx.now, batch=batch
    )
    await _write(ctx, user_id=user_id, rows=rows, plan=plan, batch=batch)
    return Written(rows, plan.resolutions)


def _check_items(ctx: RequestContext, *, items: Sequence[ItemCreate], batch: bool) -> None:
    """What the schema cannot check, as the settings and the key's role say: the batch size, who may write
    system authority, the embedding's dimension, the length of the content and its variants, and an
    ``observed_at`` not in the future (beyond the clock skew ``scoring.items.from_the_future`` allows)."""
    principal, settings = ctx.principal, ctx.settings
    check_batch(len(items), limit=settings.limits.max_batch_items, of="items")
    for i, item in enumerate(items):
        at = i if batch else None
        authority = item.authority or authority_for_source(item.source)
        if authority == "system" and not principal.can(Permission.WRITE_SYSTEM_AUTHORITY):
            where = f"items[{i}]: " if batch else ""
            raise Forbidden(f"{where}a {principal.role} key cannot write system authority", index=at)
        if item.embedding is not None and len(item.embedding) != settings.vectors.embedding_dim:
            raise _fail(
                f"embedding has {len(item.embedding)} dimensions; this service embeds in "
                f"{settings.vectors.embedding_dim}",
                at,
            )
        if len(item.content) > settings.limits.max_content_chars:
            raise _fail(
                f"content has {len(item.content):,} characters; at most {settings.limits.max_content_chars:,} are "
                "accepted (setting CTXMEM_MAX_CONTENT_CHARS): store a summary, or split it into several items",
                at,
            )
        for level in ("condensed", "summary"):
            variant = getattr(item.variants, level) if item.variants is not None else None
            if variant is not None and len(variant) > settings.limits.max_content_chars:
                raise _fail(
                    f"variants.{level} has {len(variant):,} characters; at most "
                    f"{settings.limits.max_content_chars:,} are accepted (setting CTXMEM_MAX_CONTENT_CHARS)",
                    at,
                )
        if from_the_future(item.observed_at, now=ctx.now):
            raise _fail("observed_at is in the future", at)


async def _check_related(ctx: RequestContext, *, user_id: str, items: Sequence[ItemCreate], batch: bool) -> None:
    """Every ``related_ids`` entry must name an item of this user (any status: a link to a retired item is
    history, not an error); one query for the whole batch."""
    related = {r for item in items for r in item.related_ids}
    if not related:
        return
    found = await repository.existing_ids(
        ctx.session, tenant_id=ctx.principal.tenant_id, user_id=user_id, ids=list(related)
    )
    for i, item in enumerate(items):
        missing = [str(r) for r in item.related_ids if r not in found]
        if missing:
            raise _fail(f"related_ids not found for this user: {', '.join(missing)}", i if batch else None)


def _new_row(ctx: RequestContext, *, user_id: str, item: ItemCreate, cost: int) -> dict[str, Any]:
    """The row of a new item, active and unresolved, with what the client left out filled from
    ``scoring/items.py``: the authority and confidence its source earns, the lifetime of its type and scope
    (counted from ``observed_at``, which defaults to now), and the scope instance it lives in."""
    settings, now = ctx.settings, ctx.now
    observed_at = item.observed_at or now
    expires_at = item.expires_at or default_expires_at(
        item_type=item.type,
        scope=item.scope,
        observed_at=observed_at,
        type_ttl_seconds=settings.lifetimes.by_type_seconds,
        scope_ttl_seconds=settings.lifetimes.by_scope_seconds,
    )
    return {
        "id": uuid7(),
        "tenant_id": ctx.principal.tenant_id,
        "user_id": user_id,
        "type": item.type,
        "content": item.content,
        "key": item.key,
        "value": item.value,
        "domain": item.domain,
        "source": item.source,
        "authority": item.authority or authority_for_source(item.source),
        "scope": item.scope,
        "session_id": item.session_id,
        "task_id": item.task_id,
        "stage_id": item.stage_id,
        "step_id": item.step_id,
        "hard": item.hard,
        "kind": item.kind,
        "status": item.status,
        "status_reason": None,
        "confidence": item.confidence if item.confidence is not None else default_confidence(item.source),
        "observed_at": observed_at,
        "created_at": now,
        "updated_at": now,
        "expires_at": expires_at,
        "valid_to": None,
        "deleted_at": None,
        "superseded_by": None,
        "token_cost": cost,
        "token_model": ctx.tokenizer.name,
        "variants": item.variants.model_dump(exclude_none=True) if item.variants else None,
        "related_ids": list(item.related_ids),
        "scope_ref": scope_ref(item.scope, {f: getattr(item, f) for f in SCOPE_ID_FIELD.values()}),
        "support_count": 1,
        "corrects": item.corrects,
        "embedding": item.embedding,
        "extracted_by": None,
        "evidence": None,
    }


async def _write(ctx: RequestContext, *, user_id: str, rows: list[dict[str, Any]], plan: Plan, batch: bool) -> None:
    """Write what was resolved: the retirements of existing items first (the new active rows must not meet
    the old ones in the one-active-per-slot index), then the new rows, every event (each new item's first,
    then the plan's), and the outbox rows of every item whose text or status changed."""
    session, principal, now = ctx.session, ctx.principal, ctx.now
    await repository.apply_updates(session, tenant_id=principal.tenant_id, updates=list(plan.updates.values()))
    await repository.insert_items(session, rows=rows)
    created = []
    for i, row in enumerate(rows):
        res = plan.resolutions.get(i)
        created.append(
            event(
                principal,
                user_id=user_id,
                action="item.created",
                entity_type="context_item",
                entity_id=row["id"],
                # A keyless write has nothing resolved to explain: its event says how it was written.
                reason=res["detail"] if res and _resolved(row) else ("batch write" if batch else "write"),
                rule=res["rule"] if res else None,
                after=_event_snapshot(row),
                now=now,
            )
        )
    await record_events(session, created + plan.events)
    retired = [i for i, u in plan.updates.items() if "status" in u]
    await enqueue_sync(session, principal.tenant_id, user_id, [r["id"] for r in rows] + retired, now)


def _resolved(row: dict[str, Any]) -> bool:
    """Whether a write met a slot or a correction target (else its resolution is plain "new")."""
    return row["key"] is not None or row["corrects"] is not None


def attach_levels(tokenizer: Tokenizer, *, rows: Sequence[dict[str, Any]]) -> None:
    """Derive L1..L4 for each row and count them in one tokenizer call (scoring/compress.py). A level
    that is the content itself (a short item, a text with nothing to leave out) takes the content's count,
    and ``count_many`` counts a text that repeats (L3 is L2 for prose without a key) once."""
    derived = [derive_row_levels(r) for r in rows]
    pending = [t for row, texts in zip(rows, derived, strict=True) for t in texts if t != row["content"]]
    counted = iter(tokenizer.count_many(pending))
    for row, texts in zip(rows, derived, strict=True):
        content, cost = row["content"], row["token_cost"]
        counts = [cost if t == content else next(counted) for t in texts]
        all_texts, all_tokens = assemble_levels(content, cost, texts, counts)
        row["level_texts"], row["level_tokens"] = all_texts[1:], all_tokens[1:]


# How many of the items a handle starts an ambiguous-handle problem lists.
AMBIGUOUS_LISTED: Final = 10


async def get_item(
    ctx: RequestContext, *, user_id: str, item_id: uuid.UUID | str, level: int | None = None
) -> ItemRead:
    """One item, whatever its status, by its id or its handle (the end of its id, as a window shows it before
    a shortened item); with ``level``, also its text at that compression level (what a model that sees a
    shortened item asks for to expand it: 0 is the whole text). A handle that ends several of the user's
    ids is refused, listing them."""
    principal = ctx.principal
    principal.require(Permission.ITEMS_READ)
    handle = str(item_id).lower()
    try:
        exact: uuid.UUID | None = uuid.UUID(handle)
    except ValueError:
        exact = None
    if exact is not None:
        one = await repository.get_item(ctx.session, tenant_id=principal.tenant_id, user_id=user_id, item_id=exact)
        found = [one] if one is not None else []
    else:
        found = await repository.find_by_handle(
            ctx.session, tenant_id=principal.tenant_id, user_id=user_id, handle=handle, limit=AMBIGUOUS_LISTED
        )
    if not found:
        raise ItemNotFound(f"no item {item_id} for user {user_id!r}")
    if len(found) > 1:
        ids = [str(i.id) for i in found]
        raise AmbiguousHandle(
            f"{item_id!r} ends {'at least ' if len(ids) == AMBIGUOUS_LISTED else ''}{len(ids)} of user "
            f"{user_id!r}'s item ids; ask again with more of the id (the listed candidates)",
            candidates=ids,
        )
    item = found[0]
    read = ItemRead.model_validate(item)
    if level is None:
        return read
    texts, tokens = item_levels(item.model_dump(), count=ctx.tokenizer.count)
    text, n = texts[level], tokens[level]
    if text != texts[0]:  # shortened: named by its handle, as a window shows it, unless the whole is shorter
        marked = f"[{str(item.id)[-HANDLE_CHARS:]}] {text}"
        n_marked = ctx.tokenizer.count(marked)
        text, n = (marked, n_marked) if n_marked < tokens[0] else (texts[0], tokens[0])
    return read.model_copy(update={"at_level": LevelText(level=level, text=text, tokens=n)})


def item_levels(row: Mapping[str, Any], *, count: Callable[[str], int]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """L0..L4 texts and tokens of a stored item: as stored at write time, or derived for a row from before
    levels were stored."""
    if row["level_texts"] is not None and row["level_tokens"] is not None:
        return (row["content"], *row["level_texts"]), (row["token_cost"], *row["level_tokens"])
    derived = derive_row_levels(row)
    texts, tokens = assemble_levels(row["content"], row["token_cost"], derived, [count(t) for t in derived])
    return tuple(texts), tuple(tokens)


@dataclass(frozen=True)
class ItemQuery:
    types: list[str]
    scopes: list[str]
    statuses: list[str]
    key: str | None
    domain: str | None
    session_id: str | None
    task_id: str | None
    stage_id: str | None
    step_id: str | None
    view: str
    include_superseded: bool
    include_expired: bool
    include_deleted: bool
    order: str
    limit: int | None
    cursor: str | None
    extracted_by: str | None = None


async def list_items(ctx: RequestContext, *, user_id: str, query: ItemQuery) -> ItemPage:
    session, principal, settings, now = ctx.session, ctx.principal, ctx.settings, ctx.now
    principal.require(Permission.ITEMS_READ)
    limit = page_size(query.limit, settings)
    after = decode_cursor(query.cursor, query.order) if query.cursor else None
    if query.view == "effective":
        return await _list_effective(ctx, user_id=user_id, query=query, limit=limit, after=after)
    visibility = repository.visibility_filter(
        now=now,
        statuses=query.statuses,
        include_superseded=query.include_superseded,
        include_expired=query.include_expired,
        include_deleted=query.include_deleted,
    )
    rows = await repository.list_items(
        session,
        tenant_id=principal.tenant_id,
        user_id=user_id,
        filters={
            "type": query.types,
            "scope": query.scopes,
            "key": query.key,
            "domain": query.domain,
            "session_id": query.session_id,
            "task_id": query.task_id,
            "stage_id": query.stage_id,
            "step_id": query.step_id,
        },
        visibility=[*visibility, *repository.extracted_filter(query.extracted_by)],
        after_id=after,
        descending=query.order == "desc",
        limit=limit + 1,
    )
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1].id, query.order) if more and rows else None
    return ItemPage(items=[ItemRead.model_validate(r) for r in rows], next_cursor=next_cursor)


async def _list_effective(
    ctx: RequestContext, *, user_id: str, query: ItemQuery, limit: int, after: uuid.UUID | None
) -> ItemPage:
    """What applies in one context (session/task/stage/step): active, unexpired items of the user and
    global scopes and of the given instances; per key the narrowest scope wins and names what it overrides."""
    if query.statuses or query.include_superseded or query.include_deleted or query.include_expired:
        raise ValidationFailed("view=effective shows active items only; drop status and include_* filters")
    if query.extracted_by is not None:
        raise ValidationFailed("view=effective does not filter by extracted_by; list with view=all (the default)")
    refs = {
        "session": query.session_id,
        "task": query.task_id,
        "stage": query.stage_id,
        "step": query.step_id,
    }
    rows = await repository.effective_candidates(
        ctx.session,
        tenant_id=ctx.principal.tenant_id,
        user_id=user_id,
        now=ctx.now,
        refs=refs,
        filters={"type": query.types, "scope": query.scopes, "key": query.key, "domain": query.domain},
    )
    where = ScopeContext(
        session_id=query.session_id, task_id=query.task_id, stage_id=query.stage_id, step_id=query.step_id
    )
    chosen = effective([Scoped(str(r.id), r.key, r.scope, r.scope_ref) for r in rows], where)
    kept = [r for r in rows if str(r.id) in chosen]
    kept.sort(key=lambda r: r.id, reverse=query.order == "desc")
    if after is not None:
        kept = [r for r in kept if (r.id < after if query.order == "desc" else r.id > after)]
    page = kept[:limit]
    next_cursor = encode_cursor(page[-1].id, query.order) if len(kept) > limit and page else None
    items = [
        ItemRead.model_validate(r).model_copy(update={"overrides": [uuid.UUID(o) for o in chosen[str(r.id)]]})
        for r in page
    ]
    return ItemPage(items=items, next_cursor=next_cursor)


async def delete_item(ctx: RequestContext, *, user_id: str, item_id: uuid.UUID) -> ItemRead:
    """Tombstone: the row stays (status ``deleted``) for audit until the retention purge; deleting a
    tombstone again changes nothing and returns it."""
    session, principal, now = ctx.session, ctx.principal, ctx.now
    principal.require(Permission.ITEMS_WRITE)
    item = await repository.get_item(
        session, tenant_id=principal.tenant_id, user_id=user_id, item_id=item_id, for_update=True
    )
    if item is None:
        raise ItemNotFound(f"no item {item_id} for user {user_id!r}")
    if item.status == "deleted":
        return ItemRead.model_validate(item)
    if item.authority == "system" and not principal.can(Permission.WRITE_SYSTEM_AUTHORITY):
        raise Forbidden(f"a {principal.role} key cannot delete a system-authority item")
    before = item.status
    await repository.tombstone(session, tenant_id=principal.tenant_id, item_id=item_id, now=now, reason=None)
    await enqueue_sync(session, principal.tenant_id, user_id, [item_id], now)
    await record_events(
        session,
        [
            event(
                principal,
                user_id=user_id,
                action="item.deleted",
                entity_type="context_item",
                entity_id=item_id,
                reason="deleted by request",
                before={"status": before},
                after={"status": "deleted"},
                now=now,
            )
        ],
    )
    await session.refresh(item)
    return ItemRead.model_validate(item)
