"""HTTP routes of conversations: a session's stored messages."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from schemas.conversations import MessagePage, MessagePopped, MessagesAppend, MessagesAppended, SessionEnded
from service.conversations import service
from service.deps import ContextDep, CursorQuery, IdempotencyDep, LimitQuery, SessionIdPath, UserIdPath
from service.errors import ERRORS

router = APIRouter(prefix="/v1/users/{user_id}/sessions", tags=["conversations"], responses=ERRORS)


@router.post(
    "/{session_id}/messages",
    status_code=201,
    response_model=MessagesAppended,
    summary="Append messages to a stored conversation",
)
async def append_messages(
    user_id: UserIdPath,
    session_id: SessionIdPath,
    body: MessagesAppend,
    ctx: ContextDep,
    idem: IdempotencyDep,
) -> Response:
    stored = await service.append_messages(ctx, user_id=user_id, session_id=session_id, messages=body.messages)
    return await idem.respond(stored, 201)


@router.get("/{session_id}/messages", response_model=MessagePage, summary="A stored conversation, oldest first")
async def list_messages(
    user_id: UserIdPath,
    session_id: SessionIdPath,
    ctx: ContextDep,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
) -> MessagePage:
    return await service.list_messages(ctx, user_id=user_id, session_id=session_id, limit=limit, cursor=cursor)


@router.delete(
    "/{session_id}/messages/last",
    response_model=MessagePopped,
    summary="Take back a conversation's newest message (unless a window archived it)",
)
async def pop_message(
    user_id: UserIdPath, session_id: SessionIdPath, ctx: ContextDep, idem: IdempotencyDep
) -> Response:
    popped = await service.pop_message(ctx, user_id=user_id, session_id=session_id)
    return await idem.respond(popped, 200)


@router.delete(
    "/{session_id}",
    response_model=SessionEnded,
    summary="End a conversation: archive what no window archived, then remove its messages",
)
async def end_session(
    user_id: UserIdPath, session_id: SessionIdPath, request: Request, ctx: ContextDep, idem: IdempotencyDep
) -> Response:
    extractor = request.app.state.extractor  # the end of a session flushes its extraction buffer
    ended = await service.end_session(ctx, user_id=user_id, session_id=session_id, extractor=extractor)
    return await idem.respond(ended, 200)
