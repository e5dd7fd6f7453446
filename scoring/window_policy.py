"""The window's policy (docs/design.md §3.6 steps 2-5): where an item goes, what is pinned, how profile entries read,
and what every non-pinned element is worth — in one place, as plain functions of plain values.

The value model (``ValueModel``; its numbers are settings, ``CTXMEM_WINDOW_VALUE__*``):

    value(element, request) = section weight x merit x relevance factor
    merit             = base + w_authority · authority/4 + w_confidence · confidence + w_freshness · 0.5^(age/30 days)
    relevance factor  = floor + (1 - floor) · relevance      (relevance 0-1, 1 = this query's best match)
    a level keeps     L0 all of it; L1/L2 (extractive) (tokens_l/tokens_0)^0.5; L3 (key fields)
                      tokens_3/tokens_0; an index line 0.05

Why these shapes: relevance multiplies rather than adds, so an item that does not match the query is worth
a tenth of one that matches best whatever its other merits, and is dropped before a relevant one is
compressed. Merit orders items of equal relevance: a user's statement outlasts a guess, a fresh fact a
stale one. Extractive levels keep the sentences that carry meaning first, so they keep more than their
share of tokens (a concave share: half the tokens keep ~70 % of the value); a key-fields line is a cut, worth
its share of tokens and no more, so it is only chosen where the whole text does not fit; an index line
only points at the item. Shares depend on tokens, so a short item whose levels are all the same text keeps
its full value at the cheapest of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from scoring.profile import EffectiveProfile

# How much an element of each section is worth before relevance. Constraints, rules and plans that are not
# pinned still bind the agent; user-stated facts and this step's evidence are what the user told us; tool
# results are fresh but narrow; summaries and background are context; hints are unconfirmed guesses.
SECTION_WEIGHTS: Mapping[str, float] = {
    "rules": 1.0,
    "profile": 0.8,
    "goal": 1.0,
    "constraints": 1.0,
    "plan": 0.9,
    "facts": 0.9,
    "evidence": 0.9,
    "tool_results": 0.8,
    "hints": 0.3,
    "summaries": 0.6,
    "background": 0.6,
}


@dataclass(frozen=True)
class ValueModel:
    """The numbers of the value model (module docstring)."""

    section_weights: Mapping[str, float] = field(default_factory=lambda: dict(SECTION_WEIGHTS))
    relevance_floor: float = 0.02
    relevance_sharpness: float = 2.0
    length_exponent: float = 1.0
    length_reference_tokens: int = 32
    merit_base: float = 0.4
    w_authority: float = 0.3
    w_confidence: float = 0.15
    w_freshness: float = 0.15
    freshness_half_life_days: float = 30.0
    extractive_exponent: float = 0.95  # L1, L2
    key_fields_exponent: float = 0.9  # L3
    index_share: float = 0.05  # L4, when it is an index line
    # Chat history: the newest old user turn is worth this, each older one ``history_decay`` times less;
    # an exchange (tool call and results) of the current turn is worth more, since the model is mid-step.
    history_turn_value: float = 0.5
    history_exchange_value: float = 1.0
    history_decay: float = 0.85

    def relevance_factor(self, relevance: float) -> float:
        r = min(1.0, max(0.0, relevance))
        k = self.relevance_sharpness
        shaped = r if k <= 0 else math.expm1(k * r) / math.expm1(k)
        return self.relevance_floor + (1.0 - self.relevance_floor) * shaped

    def size_factor(self, tokens: int) -> float:
        """What an element's length adds to its worth: (tokens / reference)^exponent."""
        if self.length_exponent == 0:
            return 1.0
        factor: float = (max(1, tokens) / self.length_reference_tokens) ** self.length_exponent
        return factor

    def merit(self, *, authority_rank: int, confidence: float, age_days: float) -> float:
        fresh: float = 0.5 ** (max(0.0, age_days) / self.freshness_half_life_days)
        return (
            self.merit_base
            + self.w_authority * authority_rank / 4
            + self.w_confidence * min(1.0, max(0.0, confidence))
            + self.w_freshness * fresh
        )

    def item_value(self, section: str, *, authority_rank: int, confidence: float, age_days: float) -> float:
        """An item's worth before relevance (section weight x merit)."""
        merit = self.merit(authority_rank=authority_rank, confidence=confidence, age_days=age_days)
        return self.section_weights[section] * merit

    def level_shares(self, texts: tuple[str, ...], tokens: tuple[int, ...]) -> tuple[float, ...]:
        """The share of an element's value each of its five levels keeps (module docstring)."""
        t0 = max(1, tokens[0])
        out = [1.0]
        for lvl in (1, 2, 3):
            same = next((i for i in range(lvl) if texts[i] == texts[lvl]), None)
            if same is not None:  # the same text as a fuller level keeps what that level keeps
                out.append(out[same])
                continue
            exponent = self.key_fields_exponent if lvl == 3 else self.extractive_exponent
            ratio: float = min(1.0, tokens[lvl] / t0) ** exponent
            out.append(ratio)
        if texts[4] == texts[0]:
            out.append(1.0)
        elif texts[4] == texts[3]:
            out.append(out[3])
        else:
            out.append(min(self.index_share, out[3]))
        return tuple(out)


DEFAULT_MODEL = ValueModel()


def place_item(*, type: str, status: str, authority: str, hard: bool, scope: str) -> tuple[str, bool, str]:
    """(section, pinned, reason) of an item by type, status, authority and scope (docs/design.md §3.6 steps 2-3):
    system rules, hard constraints, verified facts and decisions are pinned; the goal and plan are pinned
    by the service when they are the current ones."""
    if type == "rule":
        return ("rules", True, "pinned: system rule") if authority == "system" else ("rules", False, "rule")
    if type == "constraint":
        return ("constraints", True, "pinned: hard constraint") if hard else ("constraints", False, "constraint")
    if type in ("goal", "plan"):
        return type, False, type
    if status == "missing":
        return "plan", False, "open question (status missing)"
    if status == "verified":
        return "facts", True, "pinned: verified"
    if type == "decision":
        return "facts", True, "pinned: decision"
    if type == "tool_result":
        return "tool_results", False, "fresh tool result"
    if type == "summary":
        return "summaries", False, "summary"
    if scope in ("step", "stage"):
        return "evidence", False, "evidence for this step"
    if authority in ("system", "user") and type in ("fact", "preference", "entity"):
        return "facts", False, "user-stated"
    return "background", False, "background"


# Items of these types or statuses are pinned or may be (the current goal / plan): they are always among a
# window's candidates, however many other items the user has. Kept beside ``place_item`` so that the two
# agree (tests/scoring/test_window_policy.py checks it); the service builds its standing-rows SQL from it.
STANDING_TYPES: tuple[str, ...] = ("rule", "constraint", "goal", "plan", "decision")
STANDING_STATUSES: tuple[str, ...] = ("verified", "missing")


def phrase(dimension: str, polarity: str, value: str) -> str:
    """A profile entry's value as a reader would say it."""
    if dimension == "preference":
        return {"like": f"likes {value}", "dislike": f"dislikes {value}"}.get(polarity, value)
    return f"not {value}" if polarity == "dislike" else value


@dataclass(frozen=True)
class ProfileLine:
    """One profile-derived line of the window, before it becomes an element."""

    id: str
    section: str  # profile, constraints (pinned) or hints
    text: str
    index: str | None  # the index line (profile entries only)
    pinned: bool
    reason: str
    value: float
    order: tuple[Any, ...]


def profile_lines(profile: EffectiveProfile, user_id: str, model: ValueModel = DEFAULT_MODEL) -> list[ProfileLine]:
    """The effective profile as window lines: entries (worth the profile weight x (0.5 + score/200)), confirmed
    dislikes as pinned constraints, candidates as tentative hints (worth the hints weight x score/100)."""
    out: list[ProfileLine] = []
    w_profile, w_hints = model.section_weights["profile"], model.section_weights["hints"]
    for eff in profile.entries:
        e = eff.entry
        where = e.domain or "global"
        stated = " (stated this session)" if eff.why == "current-statement" else ""
        out.append(
            ProfileLine(
                id=f"profile:{e.id}",
                section="profile",
                text=f"[{where}] {e.dimension}.{e.key}: {phrase(e.dimension, e.polarity, e.value)}{stated}",
                index=f"[profile {e.id}: {e.dimension}.{e.key} — GET /v1/users/{user_id}/profile/{e.id}]",
                pinned=False,
                reason=f"profile ({eff.why})",
                value=w_profile * (0.5 + min(100.0, max(0.0, e.score)) / 200),
                order=(where, e.dimension, e.key, e.value, e.id),
            )
        )
    for eff in profile.constraints:
        e = eff.entry
        where = f" in {e.domain}" if e.domain else ""
        out.append(
            ProfileLine(
                id=f"profile:{e.id}",
                section="constraints",
                text=f"Do not recommend {e.value}{where} ({e.dimension}.{e.key}): the user confirmed they dislike it.",
                index=None,
                pinned=True,
                reason="pinned: confirmed dislike from the profile",
                value=0.0,
                order=(e.domain or "", e.dimension, e.key, e.value),
            )
        )
    for h in profile.hints:
        where = h.domain or "global"
        out.append(
            ProfileLine(
                id=f"profile:{h.id}",
                section="hints",
                text=(
                    f"(tentative, {h.tier}, score {h.score:g}) [{where}] {h.dimension}.{h.key}: {h.polarity} {h.value}"
                ),
                index=None,
                pinned=False,
                reason="candidate hint (tentative)",
                value=w_hints * max(0.05, min(100.0, h.score) / 100),
                order=(-h.score, h.id),
            )
        )
    return out


def window_budget(*, max_tokens: int | None, context_limit: int | None, reserve_tokens: int, watermark: float) -> int:
    """The tokens a window may use: ``max_tokens`` as given, or from the model's context size the smaller
    of what the reserve for the answer leaves and the watermark's share (a model's quality falls off before
    its context is full)."""
    if max_tokens is not None:
        return max_tokens
    if context_limit is None:
        raise ValueError("a window needs max_tokens or context_limit")
    return min(context_limit - reserve_tokens, int(watermark * context_limit))


# A window that fitted every candidate whole with at least MIN_ROOM_TOKENS to spare reads up to
# room / MIN_ITEM_TOKENS (at most MAX_OLDER_ITEMS) of the user's next older items and selects again: as a
# sliding window would show them, rather than leave the budget unused.
MIN_ROOM_TOKENS = 64
MIN_ITEM_TOKENS = 8
MAX_OLDER_ITEMS = 1_000


def older_items_wanted(*, room: int, cut: float, has_older: bool) -> int:
    """How many of the user's next older items a window with ``room`` tokens left should read: none unless
    every candidate was kept whole (``cut`` 0) and room is left for a few short items."""
    if room < MIN_ROOM_TOKENS or cut != 0 or not has_older:
        return 0
    return min(MAX_OLDER_ITEMS, room // MIN_ITEM_TOKENS)


def tool_results_in_history(messages: Sequence[Mapping[str, Any]], kept: Sequence[int]) -> dict[str, str]:
    """The texts of the tool results the fitted history keeps (``kept``: indexes into ``messages``), each
    with the reason an item repeating it is left out: a tool result is shown once, where the model called
    for it. Keyed by the text as given; the caller compares normalised forms."""
    said: dict[str, str] = {}
    for i in kept:
        m = messages[i]
        content = m.get("content")
        if m.get("role") == "tool" and isinstance(content, str) and content.strip():
            said.setdefault(content, f"{Omitted.IN_HISTORY} (messages[{i}])")
    return said


def related_groups(ids: Sequence[str], related: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Related items share one compression level: for the items ``ids`` and the ids each names as related
    (``related``; ids outside ``ids`` are ignored), each item of a group of two or more with its group's
    name, the smallest id in it (connected components)."""
    parent = {i: i for i in ids}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i in ids:
        for other in related.get(i, ()):
            if other in parent:
                a, b = root(i), root(other)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    sizes: dict[str, int] = {}
    for i in ids:
        sizes[root(i)] = sizes.get(root(i), 0) + 1
    return {i: root(i) for i in ids if sizes[root(i)] > 1}


class Omitted(StrEnum):
    """Why a candidate item is not in the window: the kinds ``omitted_summary.reasons`` counts (an item
    over the budget counts per section)."""

    OVER_BUDGET = "dropped: over budget"
    STALE = "stale tool result (past expires_at)"
    OVERRIDDEN = "overridden inside this scope"
    IN_HISTORY = "left out: the same tool result is in the history"


class Omission(NamedTuple):
    """A candidate left out: its id, the reason the response gives, its kind (and, over the budget, its
    section)."""

    id: str
    reason: str
    kind: Omitted
    section: str | None = None

    @property
    def label(self) -> str:
        """The kind as ``omitted_summary.reasons`` names it."""
        return f"{self.kind} ({self.section})" if self.section is not None else str(self.kind)
