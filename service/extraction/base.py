"""The extractor interface: whatever proposes records from a batch of messages. The service checks every
proposal against the guarantees of ``scoring/extraction.py`` before anything is stored, so an extractor is
trusted with nothing but proposing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from scoring.extraction import Message, Proposal


@dataclass(frozen=True)
class Usage:
    """What a language-model extractor spent on one batch (zero for the rules)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Proposals:
    """An extractor's answer for one batch: its proposals, the answers it could not read at all (each a
    reason, counted as ``malformed``), and what it spent."""

    items: list[Proposal]
    usage: Usage = field(default_factory=Usage)
    unreadable: list[str] = field(default_factory=list)


class ExtractorUnavailable(Exception):
    """The extractor cannot answer now (a provider outage, timeouts, the tenant's daily token cap): the
    batch's messages stay waiting and are tried again later. ``usage`` is what failed calls still cost."""

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()


class Extractor(Protocol):
    @property
    def name(self) -> str:
        """``rules`` or ``llm``."""
        ...

    @property
    def version(self) -> str:
        """What a message is extracted once per (``rules/1``, ``llm/<model>/p1``): a new version may extract
        a message again, superseding the older version's records."""
        ...

    async def propose(self, messages: Sequence[Message], *, tenant_id: str) -> Proposals:
        """Proposals for ``messages`` (one session's batch, in order; ``Proposal.message_index`` names a
        message by its ``Message.index``). Raises ``ExtractorUnavailable`` to leave the batch waiting."""
        ...

    async def close(self) -> None: ...
