"""What extraction learns, refuses and costs, as Prometheus series (docs/operations.md, Metrics): records
written by type, proposals rejected by the reason of ``scoring.extraction.REASONS``, reinforcements,
batches extracted or left waiting, and the ``llm`` extractor's calls by outcome and tokens by kind.

Per process, like every Prometheus series: N processes give N series to sum. Every label value is known in
advance and its series starts at zero, so a rate is defined before the first event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from prometheus_client import CollectorRegistry, Counter

from scoring.extraction import REASONS, RECORD_TYPES
from service.extraction.base import Usage

CALL_OUTCOMES = ("ok", "retried", "failed")
BATCH_OUTCOMES = ("extracted", "waiting")


def _labelled(counter: Counter, values: tuple[str, ...]) -> Counter:
    for value in values:
        counter.labels(value)
    return counter


class ExtractionMetrics:
    """The series, in the app's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.records = _labelled(
            Counter("ctxmem_extraction_records", "Records written by extraction, by type", ["type"], registry=registry),
            RECORD_TYPES,
        )
        self.rejected = _labelled(
            Counter(
                "ctxmem_extraction_rejected",
                "Proposals refused by the checks of docs/design.md §3.9 (and answers that could not be read, as "
                "malformed), by reason",
                ["reason"],
                registry=registry,
            ),
            REASONS,
        )
        self.reinforced = Counter(
            "ctxmem_extraction_reinforced",
            "Proposals equal to a record in force: its evidence counted, no new record",
            registry=registry,
        )
        self.batches = _labelled(
            Counter(
                "ctxmem_extraction_batches",
                "Batches extracted, or left waiting because the extractor was unavailable (outage, token cap)",
                ["outcome"],
                registry=registry,
            ),
            BATCH_OUTCOMES,
        )
        self.llm_calls = _labelled(
            Counter(
                "ctxmem_extraction_llm_calls",
                "Calls of the llm extractor: ok (answer read), retried (failed, tried again), failed (given up)",
                ["outcome"],
                registry=registry,
            ),
            CALL_OUTCOMES,
        )
        self.llm_tokens = _labelled(
            Counter(
                "ctxmem_extraction_llm_tokens",
                "Tokens the llm extractor's provider reported, failed calls included, by kind",
                ["kind"],
                registry=registry,
            ),
            ("prompt", "completion"),
        )

    def observe_batch(
        self, *, written: Mapping[str, int], rejected: Mapping[str, int], reinforced: int, usage: Usage
    ) -> None:
        """One extracted batch: records written by type, proposals rejected by reason (unreadable answers
        under ``malformed``), reinforcements, and what the extractor spent."""
        _check(written, RECORD_TYPES, "record type")
        _check(rejected, REASONS, "rejection reason")
        for kind, n in written.items():
            if n:
                self.records.labels(kind).inc(n)
        for reason, n in rejected.items():
            if n:
                self.rejected.labels(reason).inc(n)
        if reinforced:
            self.reinforced.inc(reinforced)
        self.batches.labels("extracted").inc()
        self._spent(usage)

    def observe_waiting(self, *, usage: Usage) -> None:
        """One batch left waiting (``ExtractorUnavailable``), with what its failed calls still cost."""
        self.batches.labels("waiting").inc()
        self._spent(usage)

    def observe_call(self, outcome: Literal["ok", "retried", "failed"]) -> None:
        """One call of the llm extractor."""
        self.llm_calls.labels(outcome).inc()

    def _spent(self, usage: Usage) -> None:
        if usage.prompt_tokens:
            self.llm_tokens.labels("prompt").inc(usage.prompt_tokens)
        if usage.completion_tokens:
            self.llm_tokens.labels("completion").inc(usage.completion_tokens)


def _check(counts: Mapping[str, int], known: tuple[str, ...], what: str) -> None:
    # A label value outside the known set would start a series no dashboard expects: a caller's bug.
    unknown = set(counts) - set(known)
    if unknown:
        raise ValueError(f"unknown {what} {sorted(unknown)!r}: expected one of {', '.join(known)}")
    negative = {k: n for k, n in counts.items() if n < 0}
    if negative:
        raise ValueError(f"negative {what} counts: {negative!r}")
