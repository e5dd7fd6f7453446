"""Extraction: messages in, learned records (with their evidence) and rejections out (docs/extraction.md)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from schemas.common import Flag, Identifier, ReadModel, StrictModel
from schemas.items import Evidence, ItemRead
from schemas.profiles import ProfileEntryRead
from schemas.windows import ChatMessage

RecordType = Literal["constraint", "preference", "fact", "goal", "decision"]
RejectReason = Literal["not_user_message", "unknown_message", "ungrounded", "service_text", "malformed"]


class ExtractRequest(StrictModel):
    """Messages to learn from, sent rather than stored (``POST /v1/users/{user_id}/extract``)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "messages": [
                        {"role": "user", "content": "We have a small ops team, so don't recommend Redis Cluster."},
                        {"role": "assistant", "content": "Understood."},
                    ],
                    "session_id": "s-42",
                    "dry_run": True,
                }
            ]
        }
    )

    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=1000)] = Field(
        description="OpenAI-format messages, oldest first; only user messages yield records"
    )
    session_id: Identifier | None = Field(
        None, description="The conversation they belong to (scopes decisions and names the profile evidence)"
    )
    dry_run: Flag = Field(False, description="Write nothing: return what would be written and what was rejected")


class SessionExtractRequest(StrictModel):
    """Optional: what to extract of a stored session beyond what waits."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"reextract": True}]})

    reextract: Flag = Field(
        False,
        description="Also extract the messages an older extractor version extracted; the older version's "
        "records from them are superseded (nothing is deleted)",
        examples=[True],
    )


class ExtractedRecord(ReadModel):
    type: RecordType
    content: str = Field(description="The user's words the record holds, verbatim")
    key: str = Field(description="Its slot: a known one (budget, location…) or one derived from its words")
    value: Any = Field(description="The slot's typed value, when the extractor recognised one")
    hard: bool
    confidence: float
    evidence: Evidence
    outcome: Literal["new", "replaced", "reinforced", "rejected", "would_write"] = Field(
        description="What conflict resolution made of it: new, replaced an older value, reinforced the same "
        "value in force, lost to a stronger value (stored superseded); would_write in a dry run"
    )
    item: ItemRead | None = Field(description="The stored item (null in a dry run)")


class RejectedRecord(ReadModel):
    reason: RejectReason = Field(
        description="not_user_message (said by the assistant, a tool or the system), unknown_message, ungrounded "
        "(the quote is not in the message), service_text (a window or index line read back), malformed"
    )
    detail: str
    type: str | None
    quote: str | None
    message_index: int | None
    message_id: uuid.UUID | None


class ExtractionResult(ReadModel):
    extracted_by: str = Field(description="The extractor and version, e.g. rules/1")
    dry_run: bool
    messages: int = Field(description="Messages extracted by this call")
    waiting: int = Field(description="The session's messages still waiting (0 for messages sent in the body)")
    records: list[ExtractedRecord]
    profile: list[ProfileEntryRead] = Field(description="The profile entries the user's preferences and goals fed")
    rejected: list[RejectedRecord]
    unavailable: str | None = Field(
        None,
        description="Why the extractor could not answer (a provider outage, the daily token cap): the "
        "messages wait and are extracted later",
    )
