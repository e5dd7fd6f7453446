"""A user's conversations, stored by session (schemas/conversations.py on the server)."""

import uuid
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from ctxmem_client.models.base import FORBID, Model


class MessagesAppend(TypedDict):
    """Messages to add after the session's stored ones, oldest first (OpenAI chat format)."""

    __pydantic_config__ = FORBID  # type: ignore[misc]
    messages: list[dict[str, Any]]


MESSAGES_APPEND: TypeAdapter[MessagesAppend] = TypeAdapter(MessagesAppend)


class StoredMessage(Model):
    id: uuid.UUID | None = None  # what a learned item's evidence names (message_id); None from older servers
    session_id: str
    seq: int
    message: dict[str, Any]
    created_at: datetime
    archived_item_id: uuid.UUID | None


class MessagesAppended(Model):
    session_id: str
    items: list[StoredMessage]


class MessagePage(Model):
    items: list[StoredMessage]
    next_cursor: str | None


class SessionEnded(Model):
    session_id: str
    messages: int
    archived_item_id: uuid.UUID | None


class MessagePopped(Model):
    session_id: str
    removed: StoredMessage | None
