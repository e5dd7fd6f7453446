"""What any extractor's proposals must pass before they are stored (docs/design.md §3.9).

An extractor (the rules of ``scoring/extract_rules/``, or a language model) *proposes* records; these
rules decide, whatever it says, which proposals become records:

- **Grounded**: the proposal's quote is found, after Unicode NFC and whitespace normalisation, as a span of
  the message it names. The stored content is that span of the message as written, never the extractor's
  own words.
- **Attributed**: only ``user`` messages yield records; an assistant, tool or system message yields none,
  whatever the proposal claims.
- **No loop**: a quote inside text the service itself produced (a window's section blocks, index lines) is
  refused: memory read back into the conversation is not learned again.

Records without a slot of their own get a key derived from their words (``said.<type>.<hash>``), so that
the same words said again meet their earlier record in its slot and reinforce it (docs/design.md §3.2)
rather than stand beside it as a duplicate.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from scoring.window import EXPAND_NOTE, SECTIONS

RecordType = Literal["constraint", "preference", "fact", "goal", "decision"]
RECORD_TYPES: tuple[RecordType, ...] = ("constraint", "preference", "fact", "goal", "decision")
Dimension = Literal["goal", "ability", "preference", "decision_style", "relationship"]
Polarity = Literal["like", "dislike", "neutral"]
Reason = Literal[
    "not_user_message",  # the message is the assistant's, a tool's or the system's
    "unknown_message",  # the proposal names a message that is not in the batch
    "ungrounded",  # the quote is not a span of the message
    "service_text",  # the quote lies in text the service produced (window blocks, index lines)
    "malformed",  # the proposal is not a record (bad type, empty quote, wrong field types)
]
REASONS: tuple[Reason, ...] = ("not_user_message", "unknown_message", "ungrounded", "service_text", "malformed")

# A quote longer than this is not a statement but a passage: a record rests on one or two sentences.
MAX_QUOTE_CHARS = 1_000


@dataclass(frozen=True)
class ProfileHint:
    """What a record means for the profile: one observation of the entry
    ``(domain, dimension, key, value, polarity)``, stated by the user (explicit)."""

    dimension: Dimension
    key: str
    value: str
    polarity: Polarity = "like"
    domain: str | None = None


@dataclass(frozen=True)
class Message:
    """One message of a batch, as the extractor sees it: its place in the batch, role and text."""

    index: int
    role: str
    text: str


@dataclass(frozen=True)
class Proposal:
    """One record an extractor proposes: about the message at ``message_index``, resting on ``quote``."""

    message_index: int
    type: RecordType
    quote: str
    key: str | None = None
    value: Any = None
    hard: bool = False
    confidence: float = 0.6
    profile: ProfileHint | None = None


@dataclass(frozen=True)
class Grounded:
    """A proposal that passed: the span ``[start, end)`` of its message's text is the record's content."""

    proposal: Proposal
    start: int
    end: int
    content: str

    @property
    def key(self) -> str:
        """The record's slot: the extractor's when it named one, else one derived from its words."""
        p = self.proposal
        return p.key if p.key is not None else said_key(p.type, self.content)


@dataclass(frozen=True)
class Rejected:
    proposal: Proposal
    reason: Reason
    detail: str


def normalize(text: str) -> str:
    """Unicode NFC with every run of whitespace made one space, trimmed: the form in which a quote is
    compared with its message."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def _normalized_with_offsets(text: str) -> tuple[str, list[int]]:
    """``normalize(text)`` and, for each of its characters, the offset in ``text`` it came from (with one
    more entry: the end). NFC is applied first, so offsets are into the NFC form; a message is stored as
    sent, and the caller maps through ``locate``."""
    chars: list[str] = []
    offsets: list[int] = []
    pending_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            pending_space = bool(chars)
            continue
        if pending_space:
            chars.append(" ")
            offsets.append(i - 1)
            pending_space = False
        chars.append(ch)
        offsets.append(i)
    offsets.append(len(text) if not offsets else offsets[-1] + 1)
    return "".join(chars), offsets


def locate(quote: str, text: str) -> tuple[int, int] | None:
    """Where ``quote`` is in ``text`` as a verbatim span after NFC and whitespace normalisation: the span of
    ``text`` (its NFC form, which is how messages are compared) that holds it, or None. The first match."""
    needle = normalize(quote)
    if not needle:
        return None
    hay, offsets = _normalized_with_offsets(unicodedata.normalize("NFC", text))
    at = hay.find(needle)
    if at < 0:
        return None
    end = at + len(needle)
    return offsets[at], offsets[end - 1] + 1


_HEADINGS = {f"## {title}" for _, title in SECTIONS}
_NOTE = EXPAND_NOTE.strip()  # the line that says how to expand a handle, after a window's prefix
_INDEX_LINE = re.compile(r"\[ctx[^\]\n]*(?:GET /v1/users/|tokens)[^\]\n]*\]")


def service_spans(text: str) -> list[tuple[int, int]]:
    """The parts of ``text`` the service produced, as spans: every index line (``[ctx: …, N tokens]``, or the
    older ``[ctx: …, N tokens — GET /v1/users/…]``) and every window block — a section heading of
    ``scoring.window.SECTIONS`` or the note on handles (``EXPAND_NOTE``), and the item lines (``- …``, a
    handle's ``- [4c1b0a2e] …`` too) and continuation lines under it, up to a line that is neither."""
    spans = [(m.start(), m.end()) for m in _INDEX_LINE.finditer(text)]
    pos = 0
    block_start: int | None = None
    for line in text.splitlines(keepends=True):
        bare = line.strip()
        if bare in _HEADINGS or bare == _NOTE:
            block_start = pos if block_start is None else block_start
        elif block_start is not None and not (bare == "" or bare.startswith("- ") or line.startswith(("  ", "\t"))):
            spans.append((block_start, pos))
            block_start = None
        pos += len(line)
    if block_start is not None:
        spans.append((block_start, pos))
    return spans


def _malformed(p: Proposal) -> str | None:
    if p.type not in RECORD_TYPES:
        return f"type {p.type!r} is not one of {', '.join(RECORD_TYPES)}"
    if not isinstance(p.quote, str) or not normalize(p.quote):
        return "empty quote"
    if len(p.quote) > MAX_QUOTE_CHARS:
        return f"quote of {len(p.quote)} characters (at most {MAX_QUOTE_CHARS})"
    if p.hard and p.type != "constraint":
        return "only a constraint can be hard"
    if not 0.0 <= p.confidence <= 1.0:
        return "confidence outside 0..1"
    return None


def check(p: Proposal, messages: Sequence[Message]) -> Grounded | Rejected:
    """Whether proposal ``p`` becomes a record, by the guarantees above, in that order: well formed, of a
    message of the batch, of a ``user`` message, found verbatim in it, outside the service's own text."""
    problem = _malformed(p)
    if problem is not None:
        return Rejected(p, "malformed", problem)
    by_index = {m.index: m for m in messages}
    m = by_index.get(p.message_index)
    if m is None:
        return Rejected(p, "unknown_message", f"no message {p.message_index} in the batch")
    if m.role != "user":
        return Rejected(p, "not_user_message", f"message {p.message_index} is the {m.role}'s, not the user's")
    text = unicodedata.normalize("NFC", m.text)
    span = locate(p.quote, text)
    if span is None:
        return Rejected(p, "ungrounded", f"the quote is not in message {p.message_index}")
    start, end = span
    if any(s < end and start < e for s, e in service_spans(text)):
        return Rejected(p, "service_text", "the quote is in text the service produced (a window or index line)")
    return Grounded(p, start, end, text[start:end])


def said_key(record_type: str, content: str) -> str:
    """The slot of a record with no slot of its own: its type and a hash of its words (case-folded,
    normalised), so the same words said again land in the same slot."""
    digest = hashlib.sha256(normalize(content).casefold().encode()).hexdigest()[:16]
    return f"said.{record_type}.{digest}"


def message_text(message: dict[str, Any]) -> str:
    """The text of an OpenAI-format chat message: its ``content`` string, or its text parts joined by
    newlines (images and other parts carry no words)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""
