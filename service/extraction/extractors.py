"""The extractors settings can choose: ``rules`` (offline, deterministic) and ``llm`` (an OpenAI-compatible
endpoint), built once per process (the app's lifespan, a job run)."""

from __future__ import annotations

from collections.abc import Sequence

from scoring import extract_rules
from scoring.extraction import Message, Proposal
from service.extraction.base import Extractor, Proposals
from service.extraction.metrics import ExtractionMetrics
from service.settings import Settings


class RulesExtractor:
    """``scoring/extract_rules/`` over each user message of the batch (the others are not read: the rules
    know nothing about anyone but the speaker)."""

    name = "rules"
    version = extract_rules.VERSION

    async def propose(self, messages: Sequence[Message], *, tenant_id: str) -> Proposals:
        found: list[Proposal] = []
        for m in messages:
            if m.role == "user":
                found += extract_rules.extract(m.text, message_index=m.index)
        return Proposals(found)

    async def close(self) -> None:
        return None


def build_extractor(settings: Settings, *, metrics: ExtractionMetrics | None = None) -> Extractor | None:
    """The configured extractor, or None when extraction is ``off`` (messages then wait). ``metrics``
    counts a language model's calls."""
    kind = settings.extraction.extractor
    if kind == "off":
        return None
    if kind == "rules":
        return RulesExtractor()
    from service.extraction.llm import LlmExtractor

    return LlmExtractor(settings.extraction, metrics=metrics)
