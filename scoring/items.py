"""Item policy: authority ranks, defaults derived from an item's source, type and scope."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Final

# docs/design.md §3.1: system > user > tool > summary > inferred. Higher number wins a conflict.
AUTHORITY_RANK: Final[Mapping[str, int]] = {"system": 4, "user": 3, "tool": 2, "summary": 1, "inferred": 0}

# A source maps to the authority it earns by default; a model's own output is only ever an inference.
SOURCE_AUTHORITY: Final[Mapping[str, str]] = {
    "system": "system",
    "user": "user",
    "tool": "tool",
    "summary": "summary",
    "model": "inferred",
}

# Default confidence per source when the client sends none: configured rules and what the user said
# are taken at face value, a tool's output nearly so, a summary loses detail, a model guess is a guess.
SOURCE_CONFIDENCE: Final[Mapping[str, float]] = {
    "system": 1.0,
    "user": 0.9,
    "tool": 0.9,
    "summary": 0.7,
    "model": 0.5,
}

# A client clock may run a little ahead; beyond this an observed_at in the future would win every
# recency tie-break forever, so it is refused.
MAX_CLOCK_SKEW: Final = timedelta(minutes=5)

# Scopes that only apply inside one instance, and the id field that names that instance.
SCOPE_ID_FIELD: Final[Mapping[str, str]] = {
    "session": "session_id",
    "task": "task_id",
    "stage": "stage_id",
    "step": "step_id",
}


def authority_for_source(source: str) -> str:
    """The authority an item earns from its source (``model`` → ``inferred``)."""
    return SOURCE_AUTHORITY[source]


def authority_allowed(source: str, authority: str) -> bool:
    """An explicit authority may lower what the source earns, never raise it: a model cannot claim
    to speak for the user, which is what keeps a guess from overriding a user statement."""
    return AUTHORITY_RANK[authority] <= AUTHORITY_RANK[SOURCE_AUTHORITY[source]]


def default_confidence(source: str) -> float:
    return SOURCE_CONFIDENCE[source]


def default_expires_at(
    *,
    item_type: str,
    scope: str,
    observed_at: datetime,
    type_ttl_seconds: Mapping[str, int],
    scope_ttl_seconds: Mapping[str, int],
) -> datetime | None:
    """When an item stops applying if the client did not say: the shorter of its type's and its
    scope's lifetime, counted from ``observed_at`` (a backdated tool result is already older).
    ``None`` when neither has a lifetime (rules, preferences and facts last until replaced)."""
    ttls = [t for t in (type_ttl_seconds.get(item_type), scope_ttl_seconds.get(scope)) if t is not None]
    if not ttls:
        return None
    return observed_at + timedelta(seconds=min(ttls))


def expired(expires_at: datetime | None, *, now: datetime) -> bool:
    """Whether an item has stopped applying: from its ``expires_at`` on (that instant included); an item
    with no ``expires_at`` lasts until it is replaced."""
    return expires_at is not None and expires_at <= now


def from_the_future(observed_at: datetime | None, *, now: datetime) -> bool:
    """Whether a client's ``observed_at`` is refused as in the future: later than ``now`` by more than
    MAX_CLOCK_SKEW (5 minutes). None (the server's own time is used) never is."""
    return observed_at is not None and observed_at > now + MAX_CLOCK_SKEW
