"""Profile tiers and the effective profile (docs/design.md §3.3): pure decisions over plain values.

Tiers: ``current`` (seen in one session; applies there), ``candidate`` (independent sessions; a hint,
never a default), ``long_term`` (promoted by score, or at once on explicit confirmation).
Statuses: ``active``, ``weakened`` (contrary evidence or long silence), ``expired``, ``rejected``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TypeVar, overload

from scoring.expr import Num, Sql, rounded
from scoring.fourc import SCORE_DECIMALS, Evidence, FourCScore

K = TypeVar("K", bound=Hashable)

TIER_ORDER = {"long_term": 0, "candidate": 1, "current": 2}


@dataclass(frozen=True)
class EntryState:
    tier: str
    status: str


@dataclass(frozen=True)
class Transition:
    tier: str
    status: str
    rule: str | None  # why it changed; None when nothing changed
    reason: str


def transition(state: EntryState, obs: Evidence, score: FourCScore, *, candidate_min_sessions: int = 2) -> Transition:
    """One new observation's consequence given the entry's score with it (see ``_transition``)."""
    return _transition(state, obs, score.sessions, candidate_min_sessions=candidate_min_sessions)


@dataclass(frozen=True)
class Replayed:
    """What an entry's evidence alone decides about it, whatever order the evidence arrived in."""

    tier: str
    status: str
    explicit: bool
    confirmed: bool
    current_session_id: str | None
    last_supported_at: datetime | None


def replay(evidence: Sequence[Evidence], *, candidate_min_sessions: int = 2) -> Replayed:
    """The entry's state as a function of its evidence set: every observation's ``transition`` from a new
    entry's state (``current``, ``active``), in ``observed_at`` order (equal times: by id, i.e. arrival).
    So an older statement cannot revive a newer denial (issue #12 E). The sessions count of each step is
    that of the evidence up to it, as when the evidence arrives in order."""
    ordered = sorted(evidence, key=lambda e: (e.observed_at, e.id))
    state = EntryState("current", "active")
    standing = Standing(False, False, ordered[0].session_id if ordered else None, None)
    supporting_sessions: set[str] = set()
    for ev in ordered:
        if ev.supports:
            supporting_sessions.add(ev.session_id)
        step = _transition(state, ev, len(supporting_sessions), candidate_min_sessions=candidate_min_sessions)
        state = EntryState(step.tier, step.status)
        standing = after_evidence(standing, ev)
    return Replayed(
        state.tier,
        state.status,
        standing.explicit,
        standing.confirmed,
        standing.current_session_id,
        standing.last_supported_at,
    )


@dataclass(frozen=True)
class Standing:
    """What an entry's evidence says of it besides its tier and status."""

    explicit: bool  # ever stated explicitly (or confirmed) by the user
    confirmed: bool  # confirmed, and not denied since
    current_session_id: str | None  # the session of its latest explicit statement (at first: its first evidence's)
    last_supported_at: datetime | None


def after_evidence(standing: Standing, ev: Evidence) -> Standing:
    """The standing after one more piece of evidence: support moves ``last_supported_at`` on; explicit
    support (or a confirmation) makes the entry explicit and its session the current one; a confirmation
    confirms it and an explicit denial withdraws an earlier confirmation. Inferred contrary behaviour
    changes none of these (it only weakens the status, see ``transition``)."""
    stated = ev.explicit or ev.confirmation
    if not ev.supports:
        return replace(standing, confirmed=False) if stated else standing
    last = standing.last_supported_at
    return Standing(
        explicit=standing.explicit or stated,
        confirmed=standing.confirmed or ev.confirmation,
        current_session_id=ev.session_id if stated else standing.current_session_id,
        last_supported_at=ev.observed_at if last is None else max(last, ev.observed_at),
    )


def out_of_order(prior: Mapping[K, Sequence[Evidence]], arrivals: Iterable[tuple[K, datetime]]) -> set[K]:
    """The entries (keys of ``prior``, each with the evidence it had) that a write gives evidence older than
    evidence they already have, or than an earlier arrival of the same write (``arrivals``: entry and
    ``observed_at``, in the write's order). Stepping such an entry would let an older statement overturn a
    newer one: its state is replayed from all its evidence instead (``replay``)."""
    newest = {key: max(e.observed_at for e in evs) for key, evs in prior.items() if evs}
    late: set[K] = set()
    for key, at in arrivals:
        if key in newest and at < newest[key]:
            late.add(key)
        newest[key] = max(newest.get(key, at), at)
    return late


# Decay (docs/design.md §3.5): an entry silent for its decay period goes one step down. Only these statuses
# decay; a step not listed in DECAY_STEPS ends the entry (its tier kept, its status DECAY_END_STATUS).
DECAYING_STATUSES = ("active", "weakened")
DECAY_STEPS: Mapping[tuple[str, str], tuple[str, str]] = {
    ("long_term", "active"): ("long_term", "weakened"),
    ("long_term", "weakened"): ("candidate", "active"),
}
DECAY_END_STATUS = "expired"


def decay_step(state: EntryState) -> EntryState:
    """One silent period's step down: long-term active → long-term weakened → candidate → expired; any other
    active or weakened entry (a candidate, a current one) expires. Other statuses do not decay. The decay
    job applies this table in SQL (jobs/repository.py)."""
    if state.status not in DECAYING_STATUSES:
        return state
    tier, status = DECAY_STEPS.get((state.tier, state.status), (state.tier, DECAY_END_STATUS))
    return EntryState(tier, status)


@overload
def decayed_score(score: float, *, factor: float) -> float: ...
@overload
def decayed_score(score: Sql, *, factor: Num) -> Sql: ...
def decayed_score(score: Num, *, factor: Num) -> Num:
    """A decay step multiplies the score by ``factor`` (CTXMEM_DECAY_SCORE_FACTOR, 0.5), rounded as 4C parts are.
    On a column (scoring/expr.py) it is the decay job's SQL."""
    return rounded(score * factor, SCORE_DECIMALS)


# The silence an entry is allowed before it decays: the first of these keys that CTXMEM_DECAY_DAYS_OVERRIDES
# names ("domain.dimension", then "domain", then "dimension"), else CTXMEM_DECAY_DAYS (docs/design.md §3.5:
# per domain and dimension, configurable). A key joins the entry's values of the named fields with ".".
DECAY_PERIOD_KEYS: tuple[tuple[str, ...], ...] = (("domain_key", "dimension"), ("domain_key",), ("dimension",))


def decay_period_days(*, domain_key: str, dimension: str, overrides: Mapping[str, int], default_days: int) -> int:
    """The days of silence an entry of ``domain_key`` and ``dimension`` is allowed (``DECAY_PERIOD_KEYS``)."""
    values = {"domain_key": domain_key, "dimension": dimension}
    for key in DECAY_PERIOD_KEYS:
        days = overrides.get(".".join(values[field] for field in key))
        if days is not None:
            return days
    return default_days


def decay_period_days_sql(*, columns: Mapping[str, str], overrides: str, default_days: str) -> str:
    """``decay_period_days`` as an SQL expression: ``columns`` names the SQL text column of each field,
    ``overrides`` is a jsonb expression of the overrides, ``default_days`` an int expression."""
    concat = " || '.' || "
    keys = [concat.join(columns[field] for field in key) for key in DECAY_PERIOD_KEYS]
    lookups = [f"({overrides} ->> ({key}))::int" for key in keys]
    return f"COALESCE({', '.join(lookups)}, {default_days})"


def with_job_changes(replayed: Replayed, stored: EntryState, *, decayed_at: datetime | None) -> EntryState:
    """A replay re-derives what the evidence decides; the jobs' own changes to the stored state stand when
    the evidence does not overturn them: a decay with no supporting evidence observed since it (the late
    evidence is older), and a promotion of what the evidence leaves an active candidate (its score only
    counts evidence, which the promote job would promote again)."""
    decayed_since_support = decayed_at is not None and (
        replayed.last_supported_at is None or replayed.last_supported_at <= decayed_at
    )
    if decayed_since_support and "rejected" not in (stored.status, replayed.status):
        return stored
    if stored.tier == "long_term" and (replayed.tier, replayed.status) == ("candidate", "active"):
        return EntryState("long_term", "active")
    return EntryState(replayed.tier, replayed.status)


def _transition(state: EntryState, obs: Evidence, sessions: int, *, candidate_min_sessions: int) -> Transition:
    """The immediate consequence of one new observation (the promotion job does the score-based rest):

    - an explicit denial (contradicting, explicit or a "no" to a confirmation question) → ``rejected``;
    - contradicting inferred behaviour → ``weakened`` (a rejected entry stays rejected);
    - a rejected entry comes back only with new *explicit* support: ``long_term`` if it is a
      confirmation, else ``current`` — inferred support leaves it rejected;
    - an explicit confirmation → ``long_term`` and ``active`` at once;
    - explicit support revives a ``weakened`` entry;
    - support from a second independent session turns ``current`` into ``candidate``.
    """
    tier, status = state.tier, state.status
    explicit = obs.explicit or obs.confirmation
    if not obs.supports:
        if explicit:
            if status == "rejected":
                return Transition(tier, status, None, "already rejected")
            return Transition(tier, "rejected", "denial", "the user explicitly denied it")
        if status in ("rejected", "weakened", "expired"):
            return Transition(tier, status, None, f"already {status}")
        return Transition(tier, "weakened", "contradiction", "contradicting behaviour")
    if status == "rejected":
        if obs.confirmation:
            return Transition("long_term", "active", "confirmation", "confirmed after a rejection")
        if explicit:
            return Transition("current", "active", "restated", "stated again explicitly after a rejection")
        return Transition(tier, status, None, "rejection stands until new explicit evidence")
    if obs.confirmation:
        if (tier, status) == ("long_term", "active"):
            return Transition(tier, status, None, "confirmed again")
        return Transition("long_term", "active", "confirmation", "explicitly confirmed by the user")
    new_status = status
    rule: str | None = None
    reason = "evidence added"
    if status in ("weakened", "expired") and explicit:
        new_status, rule, reason = "active", "restated", "stated explicitly again"
    if tier == "current" and sessions >= candidate_min_sessions:
        return Transition("candidate", new_status, "second-session", "seen in independent sessions")
    return Transition(tier, new_status, rule, reason)


@dataclass(frozen=True)
class ProfileEntry:
    """An entry as the effective view needs it."""

    id: str
    domain: str | None
    dimension: str
    key: str
    value: str
    polarity: str
    tier: str
    status: str
    score: float
    explicit: bool
    confirmed: bool
    current_session_id: str | None
    last_evidence_at: datetime


@dataclass(frozen=True)
class EffectiveEntry:
    entry: ProfileEntry
    why: str  # long_term | current-statement
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class EffectiveProfile:
    entries: tuple[EffectiveEntry, ...] = ()
    constraints: tuple[EffectiveEntry, ...] = ()  # confirmed dislikes: "do not recommend X"
    hints: tuple[ProfileEntry, ...] = ()  # candidates and weakened beliefs: tentative
    overridden: tuple[tuple[str, str], ...] = field(default=())  # (entry id, overridden by id)


def _is_statement(e: ProfileEntry, session_id: str | None) -> bool:
    return session_id is not None and e.explicit and e.current_session_id == session_id


def _precedence(e: ProfileEntry, session_id: str | None) -> tuple[int, int, int, int, float, datetime, str]:
    """Higher wins: an explicit statement in this session > domain over global > explicit over
    inferred > confirmed > score > more recent evidence > id."""
    return (
        int(_is_statement(e, session_id)),
        int(e.domain is not None),
        int(e.explicit),
        int(e.confirmed),
        e.score,
        e.last_evidence_at,
        e.id,
    )


def _sort_key(e: ProfileEntry) -> tuple[int, str, str, str, str, str]:
    return (TIER_ORDER.get(e.tier, 9), e.domain or "", e.dimension, e.key, e.value, e.id)


def effective_profile(
    entries: Iterable[ProfileEntry], *, session_id: str | None, domains: Sequence[str] | None
) -> EffectiveProfile:
    """What an agent should take as true about the user in one session and set of domains.

    Defaults are active long-term entries and this session's explicit statements (any tier). Within each
    (dimension, key), the highest-precedence positive value stands and overrides the others — a domain
    entry overrides a global one only for its domain, a statement in this session overrides history only
    in this session. A like and a dislike of the same value: the higher precedence stands. Dislikes of
    other values stand beside the winner; confirmed ones become constraints. Candidates, weakened beliefs
    and this session's inferred ``current`` entries are hints; rejected and expired entries are left out.
    The output is sorted so that equal input gives byte-identical output (prompt caching).
    """
    wanted = None if domains is None else set(domains)
    usable = [
        e
        for e in entries
        if e.status not in ("rejected", "expired") and (e.domain is None or wanted is None or e.domain in wanted)
    ]
    defaults: list[ProfileEntry] = []
    hints: list[ProfileEntry] = []
    for e in usable:
        if e.status == "active" and (e.tier == "long_term" or _is_statement(e, session_id)):
            defaults.append(e)
        elif (
            e.tier == "candidate"
            or e.status == "weakened"
            or (e.tier == "current" and session_id is not None and e.current_session_id == session_id)
        ):
            hints.append(e)

    # The contexts a value must hold in: the requested domains (global entries apply inside each), or,
    # when none are requested, "no domain" plus every domain the user has entries in.
    contexts: list[str | None]
    if domains:
        contexts = [*sorted(set(domains))]
    else:
        contexts = [None, *sorted({e.domain for e in defaults if e.domain is not None})]
    groups: dict[tuple[str, str], list[ProfileEntry]] = {}
    for e in defaults:
        groups.setdefault((e.dimension, e.key), []).append(e)

    stands: set[str] = set()
    beaten_by: dict[tuple[str, str | None], str] = {}
    for group in groups.values():
        for ctx in contexts:
            pool = [e for e in group if e.domain is None or e.domain == ctx]
            if not pool:
                continue
            ranked = sorted(pool, key=lambda e: _precedence(e, session_id), reverse=True)
            alive = list(ranked)
            # like vs dislike of one value: the higher precedence stands.
            for e in ranked:
                if e not in alive:
                    continue
                for other in ranked:
                    if other is not e and other in alive and other.value == e.value and other.polarity != e.polarity:
                        alive.remove(other)
                        beaten_by.setdefault((other.id, ctx), e.id)
            positives = [e for e in alive if e.polarity != "dislike"]
            for beaten in positives[1:]:
                beaten_by.setdefault((beaten.id, ctx), positives[0].id)
            standing = positives[:1] + [e for e in alive if e.polarity == "dislike"]
            stands.update(e.id for e in standing)

    # A winner names everything it beat in some context; an entry counts as overridden only when it
    # stands in none (a global value overridden inside "phone" may still hold for "laptop").
    overrides: dict[str, list[str]] = {}
    overridden: list[tuple[str, str]] = []
    for (loser, _ctx), winner in sorted(beaten_by.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        if loser not in overrides.get(winner, []):
            overrides.setdefault(winner, []).append(loser)
        if loser not in stands and (loser, winner) not in overridden:
            overridden.append((loser, winner))
    kept = sorted((e for e in defaults if e.id in stands), key=_sort_key)
    out_entries: list[EffectiveEntry] = []
    out_constraints: list[EffectiveEntry] = []
    for e in kept:
        eff = EffectiveEntry(
            e, "current-statement" if _is_statement(e, session_id) else "long_term", tuple(overrides.get(e.id, ()))
        )
        (out_constraints if e.polarity == "dislike" and e.confirmed else out_entries).append(eff)
    return EffectiveProfile(
        entries=tuple(out_entries),
        constraints=tuple(out_constraints),
        hints=tuple(sorted(hints, key=lambda e: (-e.score, *_sort_key(e)))),
        overridden=tuple(overridden),
    )
