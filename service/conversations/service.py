"""Conversations: a user's sessions stored as chat history (OpenAI format), so a window with a
``session_id`` and no ``messages`` fits the stored history itself, and the turns that fall out of it become
long-term memory — one episode item per archive, each message archived once, by whichever window drops
it first."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from schemas.conversations import MessagePage, MessagePopped, MessagesAppended, SessionEnded, StoredMessage
from schemas.items import ItemCreate
from schemas.windows import ChatMessage
from scoring import history
from service.auth.principal import Permission
from service.context import RequestContext
from service.conversations import repository
from service.db.models import ConversationMessage
from service.errors import HistoryInvalid
from service.events import event, record_events
from service.extraction.base import Extractor
from service.extraction.service import extract_session
from service.ids import uuid7
from service.items.service import create_items
from service.pagination import decode_cursor, encode_cursor, page_size
from service.users import service as users


def _stored(row: ConversationMessage) -> StoredMessage:
    return StoredMessage.model_validate(row)


async def append_messages(
    ctx: RequestContext, *, user_id: str, session_id: str, messages: Sequence[ChatMessage]
) -> MessagesAppended:
    """Store ``messages`` after the session's stored ones, in order. Checked as a window's history is,
    together with the session's live messages before them; a tool call may still wait for its result
    (it comes in a later append)."""
    ctx.principal.require(Permission.ITEMS_WRITE)
    tenant_id = ctx.principal.tenant_id
    raw = [m.model_dump(exclude_none=True) for m in messages]
    await users.ensure_user(ctx, user_id=user_id)
    await repository.lock_session(ctx.session, tenant_id=tenant_id, user_id=user_id, session_id=session_id)
    before = [r.message for r in await _live(ctx, user_id=user_id, session_id=session_id)]
    try:
        history.validate([*before, *raw], complete=False)
    except history.HistoryError as exc:
        index = exc.index - len(before)
        if index < 0:  # the stored messages are fine on their own: the new ones break them
            index = 0
        raise HistoryInvalid(f"messages[{index}]: {str(exc).split(': ', 1)[1]}", index=index) from exc
    seq = await repository.last_seq(ctx.session, tenant_id=tenant_id, user_id=user_id, session_id=session_id)
    rows = [
        {
            "id": uuid7(),
            "tenant_id": tenant_id,
            "user_id": user_id,
            "session_id": session_id,
            "seq": seq + i + 1,
            "message": m,
            "created_at": ctx.now,
            "archived_at": None,
            "archived_item_id": None,
        }
        for i, m in enumerate(raw)
    ]
    await repository.insert(ctx.session, rows=rows)
    await _record(
        ctx,
        user_id=user_id,
        session_id=session_id,
        action="session.appended",
        after={"messages": len(rows), "first_seq": seq + 1, "last_seq": seq + len(rows)},
    )
    return MessagesAppended(
        session_id=session_id,
        items=[StoredMessage.model_validate({**r, "archived_item_id": None}) for r in rows],
    )


async def _record(ctx: RequestContext, *, user_id: str, session_id: str, action: str, after: dict[str, Any]) -> None:
    """The session's event (counts only: no message text goes into the audit log)."""
    row = event(
        ctx.principal,
        user_id=user_id,
        action=action,
        entity_type="session",
        entity_id=session_id,
        now=ctx.now,
        after=after,
    )
    await record_events(ctx.session, [row])


async def _live(ctx: RequestContext, *, user_id: str, session_id: str) -> list[ConversationMessage]:
    # A window fits at most window.session_history_limit of the newest; an append is checked against as many.
    limit = ctx.settings.window.session_history_limit
    return await repository.live_tail(
        ctx.session, tenant_id=ctx.principal.tenant_id, user_id=user_id, session_id=session_id, limit=limit
    )


async def list_messages(
    ctx: RequestContext, *, user_id: str, session_id: str, limit: int | None, cursor: str | None
) -> MessagePage:
    """The session's stored messages, oldest first, archived ones too (with the episode that holds them)."""
    ctx.principal.require(Permission.ITEMS_READ)
    limit = page_size(limit, ctx.settings)
    after = decode_cursor(cursor, "asc") if cursor else None
    rows = await repository.page(
        ctx.session,
        tenant_id=ctx.principal.tenant_id,
        user_id=user_id,
        session_id=session_id,
        after=after,
        limit=limit + 1,
    )
    page = rows[:limit]
    next_cursor = encode_cursor(page[-1].id, "asc") if len(rows) > limit and page else None
    return MessagePage(items=[_stored(r) for r in page], next_cursor=next_cursor)


async def pop_message(ctx: RequestContext, *, user_id: str, session_id: str) -> MessagePopped:
    """Remove the session's newest message (an agent taking back its last turn), if no window archived it:
    an archived message is long-term memory already, and stays."""
    ctx.principal.require(Permission.ITEMS_WRITE)
    tenant_id = ctx.principal.tenant_id
    await users.ensure_user(ctx, user_id=user_id)
    await repository.lock_session(ctx.session, tenant_id=tenant_id, user_id=user_id, session_id=session_id)
    row = await repository.pop_last(ctx.session, tenant_id=tenant_id, user_id=user_id, session_id=session_id)
    if row is None:
        return MessagePopped(session_id=session_id, removed=None)
    await _record(ctx, user_id=user_id, session_id=session_id, action="session.popped", after={"seq": row.seq})
    return MessagePopped(session_id=session_id, removed=_stored(row))


async def end_session(
    ctx: RequestContext, *, user_id: str, session_id: str, extractor: Extractor | None = None
) -> SessionEnded:
    """Remove the session's stored messages; the turns no window archived yet are kept first, as one
    episode item, so ending a conversation never loses what was said. The end of a session flushes its
    extraction buffer: the rules extract what waits at once; with a language model, the messages still
    waiting are kept (out of every window) until the extract job has learned from them."""
    ctx.principal.require(Permission.ITEMS_WRITE)
    tenant_id = ctx.principal.tenant_id
    await users.ensure_user(ctx, user_id=user_id)
    await repository.lock_session(ctx.session, tenant_id=tenant_id, user_id=user_id, session_id=session_id)
    if extractor is not None and extractor.name == "rules":
        await extract_session(ctx, user_id=user_id, session_id=session_id, extractor=extractor)
    live = await _live(ctx, user_id=user_id, session_id=session_id)
    archived = await archive(ctx, user_id=user_id, session_id=session_id, ids=[r.id for r in live])
    removed = await repository.delete_session(
        ctx.session,
        tenant_id=tenant_id,
        user_id=user_id,
        session_id=session_id,
        keep_waiting=extractor is not None,
        now=ctx.now,
    )
    if removed:
        after = {"messages": removed, "archived_item_id": str(archived) if archived else None}
        await _record(ctx, user_id=user_id, session_id=session_id, action="session.ended", after=after)
    return SessionEnded(session_id=session_id, messages=removed, archived_item_id=archived)


async def window_history(
    ctx: RequestContext, *, user_id: str, session_id: str, latest_input: str
) -> tuple[list[dict[str, Any]], list[uuid.UUID]]:
    """The session's live messages for a window to fit, oldest first, with their ids. A last user message
    that is the window's input itself is left out: the input is in the window once."""
    rows = await _live(ctx, user_id=user_id, session_id=session_id)
    messages = [dict(m) for m in history.without_latest_input([r.message for r in rows], latest_input)]
    return messages, [r.id for r in rows[: len(messages)]]


async def archive(ctx: RequestContext, *, user_id: str, session_id: str, ids: Sequence[uuid.UUID]) -> uuid.UUID | None:
    """Archive the given messages into one episode item of the session: those no other transaction
    archived first (so each message is archived once). Returns the item's id, or None if none were left."""
    claimed = await repository.claim(ctx.session, tenant_id=ctx.principal.tenant_id, ids=ids, now=ctx.now)
    if not claimed:
        return None
    item_id = await write_episode(
        ctx,
        user_id=user_id,
        messages=[r.message for r in claimed],
        session_id=session_id,
        observed_at=claimed[-1].created_at,
    )
    await repository.set_archive(
        ctx.session, tenant_id=ctx.principal.tenant_id, ids=[r.id for r in claimed], item_id=item_id
    )
    return item_id


async def write_episode(
    ctx: RequestContext,
    *,
    user_id: str,
    messages: Sequence[Mapping[str, Any]],
    session_id: str | None,
    task_id: str | None = None,
    observed_at: datetime | None = None,
) -> uuid.UUID:
    """History that left a window, kept as one episode item (its transcript, cut to the content limit), so
    it can be recalled later: of the session when there is one, else of the user."""
    text = history.transcript(messages)
    limit = ctx.settings.limits.max_content_chars
    if len(text) > limit:
        text = text[: limit - 40].rstrip() + " …[truncated]"
    item = ItemCreate(
        type="episode",
        content=text,
        source="summary",
        scope="session" if session_id else "user",
        session_id=session_id,
        task_id=task_id,
        observed_at=observed_at,
    )
    (stored,) = await create_items(ctx, user_id=user_id, items=[item], batch=False)
    return stored.id
