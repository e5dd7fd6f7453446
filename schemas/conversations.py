"""A user's conversations, stored by session: append, list, end (docs/api.md, "Conversations")."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from schemas.common import ReadModel, StrictModel
from schemas.windows import ChatMessage


class MessagesAppend(StrictModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "messages": [
                        {"role": "user", "content": "Find me a flight to Lisbon on Friday."},
                        {"role": "assistant", "content": "Morning or evening?"},
                    ]
                }
            ]
        }
    )

    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=1000)] = Field(
        description="Messages to add after the session's stored ones, oldest first (OpenAI chat format; a tool "
        "message must answer a call of an assistant message before it, here or already stored)"
    )


class StoredMessage(ReadModel):
    id: uuid.UUID = Field(description="The message's id: what learned items name in their evidence")
    session_id: str
    seq: int = Field(description="The message's place in its session: 1, 2, 3…")
    message: dict[str, Any] = Field(description="The message as it was sent (OpenAI chat format)")
    created_at: datetime
    archived_item_id: uuid.UUID | None = Field(
        description="The episode item holding this message once it fell out of a window's fitted history "
        "(then windows no longer fit it as history: it is long-term memory)"
    )


class MessagesAppended(ReadModel):
    session_id: str
    items: list[StoredMessage] = Field(description="The messages just stored, with their seq")


class MessagePage(ReadModel):
    items: list[StoredMessage]
    next_cursor: str | None


class SessionEnded(ReadModel):
    session_id: str
    messages: int = Field(description="Stored messages removed")
    archived_item_id: uuid.UUID | None = Field(
        description="The episode item that keeps the turns no window had archived yet (null: none were left)"
    )


class MessagePopped(ReadModel):
    session_id: str
    removed: StoredMessage | None = Field(
        description="The session's newest message, now removed (null: it has none a window has not archived)"
    )
