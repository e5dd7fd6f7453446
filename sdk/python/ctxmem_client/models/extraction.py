"""Extraction: messages in, what was learned from them (with the user's words) and what was refused out
(schemas/extraction.py on the server; docs/extraction.md)."""

import uuid
from typing import Any, Literal, Required

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from ctxmem_client.models.base import FORBID, Model
from ctxmem_client.models.items import Evidence, Item
from ctxmem_client.models.profiles import ProfileEntry

RecordType = Literal["constraint", "preference", "fact", "goal", "decision"]
RejectReason = Literal["not_user_message", "unknown_message", "ungrounded", "service_text", "malformed"]
RecordOutcome = Literal["new", "replaced", "reinforced", "rejected", "would_write"]


class ExtractRequest(TypedDict, total=False):
    """Messages to learn from, sent rather than stored (OpenAI chat format, oldest first)."""

    __pydantic_config__ = FORBID  # type: ignore[misc]
    messages: Required[list[dict[str, Any]]]
    session_id: str
    dry_run: bool


class SessionExtractRequest(TypedDict, total=False):
    __pydantic_config__ = FORBID  # type: ignore[misc]
    reextract: bool


EXTRACT_REQUEST: TypeAdapter[ExtractRequest] = TypeAdapter(ExtractRequest)
SESSION_EXTRACT_REQUEST: TypeAdapter[SessionExtractRequest] = TypeAdapter(SessionExtractRequest)


class ExtractedRecord(Model):
    """One thing learned: the user's words (``content``, verbatim), its slot, and what conflict resolution made
    of it (``outcome``; ``would_write`` in a dry run). ``item`` is the stored item (None in a dry run)."""

    type: RecordType
    content: str
    key: str
    value: Any
    hard: bool
    confidence: float
    evidence: Evidence
    outcome: RecordOutcome
    item: Item | None


class RejectedRecord(Model):
    """A proposal the service refused, and why (never stored)."""

    reason: RejectReason
    detail: str
    type: str | None
    quote: str | None
    message_index: int | None
    message_id: uuid.UUID | None


class ExtractionResult(Model):
    """The answer of ``extract`` and ``extract_session``: ``extracted_by`` the extractor and version (``rules/1``),
    ``messages`` extracted by this call, ``waiting`` the session's messages still waiting."""

    extracted_by: str
    dry_run: bool
    messages: int
    waiting: int
    records: list[ExtractedRecord]
    profile: list[ProfileEntry]
    rejected: list[RejectedRecord]
    unavailable: str | None = None
