"""Conflict resolution inside a slot (docs/design.md §3.2): authority first, then recency — nothing lost.

A slot is (tenant, user, key, scope instance). These functions decide between the slot's active item
and a newcomer; the service stores both either way (the loser as ``superseded`` with the reason).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from scoring.items import AUTHORITY_RANK
from scoring.scopes import EVERYWHERE, SCOPE_ORDER, ScopeContext, Scoped, applies

Rule = Literal["authority", "recency", "confidence", "id", "correction", "reinforcement", "scope-override", "expiry"]
Outcome = Literal["new", "replaced", "rejected", "reinforced"]

# Reinforcement raises confidence by half of what an independent confirmation would add under a
# noisy-OR (c' = c + (1 - c) * c_new / 2): repeated writes are rarely independent evidence (an agent
# restating what it read back), so they count, but never push a belief to certainty. Capped at 0.99.
REINFORCEMENT_DAMPING = 0.5
REINFORCEMENT_CAP = 0.99


@dataclass(frozen=True)
class Contender:
    """What the resolver needs to know about one item of a slot."""

    id: str  # time-ordered (UUIDv7 text): a later id is a later write
    authority: str
    observed_at: datetime
    confidence: float
    norm: str  # normalised value, see normalize_value
    hard: bool = False


@dataclass(frozen=True)
class Resolution:
    outcome: Outcome
    rule: Rule | None
    winner_id: str
    loser_id: str | None
    detail: str


def normalize_value(value: Any, content: str) -> str:
    """The form in which two items' values are compared: the JSON ``value`` when given (canonical: sorted
    keys, no whitespace), else the content trimmed, whitespace-collapsed and case-folded; text in Unicode
    NFC either way, so that "Café" typed as one code point or as "e" and a combining accent is one value."""
    if value is not None:
        return "json:" + json.dumps(nfc_json(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "text:" + unicodedata.normalize("NFC", " ".join(unicodedata.normalize("NFC", content).split()).casefold())


def nfc_json(value: Any) -> Any:
    """A JSON value with every string (keys too) in NFC."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, list):
        return [nfc_json(v) for v in value]
    if isinstance(value, dict):
        return {unicodedata.normalize("NFC", k): nfc_json(v) for k, v in value.items()}
    return value


def decide(a: Contender, b: Contender) -> tuple[Contender, Rule]:
    """The winner of two differing values and the rule that decided: higher authority; on equal authority
    the later ``observed_at``; then the higher confidence; then the later id (the later write)."""
    ra, rb = AUTHORITY_RANK[a.authority], AUTHORITY_RANK[b.authority]
    if ra != rb:
        return (a if ra > rb else b), "authority"
    if a.observed_at != b.observed_at:
        return (a if a.observed_at > b.observed_at else b), "recency"
    if a.confidence != b.confidence:
        return (a if a.confidence > b.confidence else b), "confidence"
    return (a if a.id > b.id else b), "id"


def _why(rule: Rule, winner: Contender, loser: Contender) -> str:
    if rule == "authority":
        return f"higher authority ({winner.authority} > {loser.authority})"
    if rule == "recency":
        return f"observed later ({winner.observed_at.isoformat()} > {loser.observed_at.isoformat()})"
    if rule == "confidence":
        return f"higher confidence ({winner.confidence:g} > {loser.confidence:g})"
    return "written later (equal authority, time and confidence)"


def resolve(current: Contender | None, newcomer: Contender) -> Resolution:
    """Decide a newcomer against the slot's active item.

    - empty slot → the newcomer is active (``new``);
    - the same value with no more authority → ``reinforced``: the current item stays, with one more
      supporting write; the newcomer is kept as evidence, retired at once;
    - the same value with *more* authority → the newcomer replaces it (``authority``), so that a later,
      lower-authority value cannot beat what is now a user statement;
    - a different value → :func:`decide`; the loser (possibly the newcomer itself) is retired.
    """
    if current is None:
        return Resolution("new", None, newcomer.id, None, "first value of the slot")
    if current.norm == newcomer.norm:
        if AUTHORITY_RANK[newcomer.authority] > AUTHORITY_RANK[current.authority]:
            detail = f"same value restated with higher authority ({newcomer.authority} > {current.authority})"
            return Resolution("replaced", "authority", newcomer.id, current.id, detail)
        return Resolution(
            "reinforced", "reinforcement", current.id, newcomer.id, "same value: reinforces the current item"
        )
    winner, rule = decide(current, newcomer)
    loser = newcomer if winner is current else current
    outcome: Outcome = "rejected" if winner is current else "replaced"
    return Resolution(outcome, rule, winner.id, loser.id, _why(rule, winner, loser))


def reinforced_confidence(current: float, incoming: float) -> float:
    """Confidence after a reinforcing write (damped noisy-OR, capped; never lowers it)."""
    raised = current + (1.0 - current) * incoming * REINFORCEMENT_DAMPING
    return max(current, min(REINFORCEMENT_CAP, raised))


@dataclass(frozen=True)
class CorrectionCheck:
    allowed: bool
    reason: str


def check_correction(
    *, target_authority: str, target_hard: bool, newcomer_authority: str, is_admin: bool
) -> CorrectionCheck:
    """A user correction retires its target at once, newer or not — except that a ``system`` item can only
    be retired by an admin, and a hard constraint only by an item of equal or higher authority."""
    if target_authority == "system" and not is_admin:
        return CorrectionCheck(False, "the target has system authority; only an admin key can retire it")
    if target_hard and AUTHORITY_RANK[newcomer_authority] < AUTHORITY_RANK[target_authority]:
        return CorrectionCheck(
            False,
            f"the target is a hard constraint with {target_authority} authority; "
            f"a {newcomer_authority} item cannot retire it",
        )
    return CorrectionCheck(True, "user correction")


def overridden(item: Scoped, where: ScopeContext, same_key: Iterable[Scoped]) -> list[Scoped]:
    """The items of ``same_key`` that ``item`` hides inside its own instance ``where`` (docs/design.md §3.2):
    those of a broader scope (SCOPE_ORDER) that apply there. An item of a scope that applies everywhere
    (user, global) hides nothing: an override is an instance's exception to what stands everywhere."""
    if item.scope in EVERYWHERE:
        return []
    narrow = SCOPE_ORDER[item.scope]
    return [o for o in same_key if o.id != item.id and SCOPE_ORDER[o.scope] > narrow and applies(o, where)]
