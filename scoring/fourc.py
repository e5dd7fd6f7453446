"""The 4C score of a profile entry (docs/design.md §3.4): Count, Continuity, Cross-context, Confirmation, minus a
penalty for contradicting evidence. A pure function of the evidence, the time and the weights.

Default weights (``FourCWeights``) and the calibration they are chosen to hold (tests/scoring/test_fourc.py):

============================================  =====================================================
component (max points)                        rule
============================================  =====================================================
Count (30)                                    5 per independent supporting session, saturating at
                                              6; repeats within one session count once
Continuity (25)                               span first → last supporting evidence, linear,
                                              saturating at 90 days
Cross-context (15)                            5 per distinct context that agrees, saturating at 3
Confirmation (30)                             30 if the user explicitly confirmed; else 20 if the
                                              user stated it explicitly; else inferred behaviour
                                              only: 10 x min(1, inferred sessions / 3)
penalty                                       15 per session with contradicting evidence (25 when
                                              the contradiction was explicit), capped at the sum
============================================  =====================================================

Calibration: 3 inferred sessions over 14 days in one context → 15 + 3.9 + 5 + 10 = 33.9 (a candidate,
30-40); 5 mentions in one session → 5 + 0 + 5 + 3.3 = 13.3 (< 20); 6 inferred sessions over 100 days in 3
contexts → 30 + 25 + 15 + 10 = 80 (≥ 60, promoted); one inferred signal → 13.3 and one session (never a
candidate, which needs two sessions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scoring.expr import Cond, Num, at_least, both, greatest, least, number, rounded, truth, when

SECONDS_PER_DAY = 86_400.0
# Each part, the penalty and the score are rounded to this many decimals (docs/design.md §3.4: "to 0.01").
SCORE_DECIMALS = 2


@dataclass(frozen=True)
class Evidence:
    """One observation as the scorer sees it."""

    id: str
    session_id: str
    context: str
    explicit: bool
    supports: bool
    confirmation: bool
    observed_at: datetime
    weight: float = 1.0


@dataclass(frozen=True)
class FourCWeights:
    count_points: float = 30.0
    count_saturation_sessions: int = 6
    continuity_points: float = 25.0
    continuity_saturation_days: float = 90.0
    cross_context_points: float = 15.0
    cross_context_saturation: int = 3
    confirmation_points: float = 30.0
    explicit_points: float = 20.0
    inferred_points: float = 10.0
    inferred_saturation_sessions: int = 3
    contradiction_penalty: float = 15.0
    explicit_contradiction_penalty: float = 25.0


@dataclass(frozen=True)
class FourCScore:
    score: float
    count: float
    continuity: float
    cross_context: float
    confirmation: float
    penalty: float
    sessions: int
    span_days: float
    contexts: int
    contradicting_sessions: int
    evidence_ids: tuple[str, ...]

    def breakdown(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "continuity": self.continuity,
            "cross_context": self.cross_context,
            "confirmation": self.confirmation,
            "penalty": self.penalty,
            "score": self.score,
            "sessions": self.sessions,
            "span_days": self.span_days,
            "contexts": self.contexts,
            "contradicting_sessions": self.contradicting_sessions,
            "evidence_ids": list(self.evidence_ids),
        }


# The rule, written once (scoring/expr.py): ``score_4c`` runs it on numbers, the promote job on the columns of
# its statement (jobs/repository.py), so the job's SQL is generated from these functions.


@dataclass(frozen=True)
class FourCInputs:
    """An entry's evidence reduced to what its score reads. Supporting evidence gives the sessions (each
    independent session once), their ``mass`` (each session at the strongest ``evidence_weight`` seen in
    it), the span in days from first to last, the distinct contexts, and whether the user confirmed or
    stated it explicitly; each session with contradicting evidence adds its ``contradiction_penalty`` to
    ``raw_penalty``. Numbers for ``score_4c``; column expressions for the job."""

    sessions: Num
    mass: Num
    span_days: Num
    contexts: Num
    confirmed: Cond
    stated: Cond
    raw_penalty: Num


@dataclass(frozen=True)
class FourCParts:
    """The four parts, each rounded to ``SCORE_DECIMALS``."""

    count: Num
    continuity: Num
    cross_context: Num
    confirmation: Num


def evidence_weight(weight: Num) -> Num:
    """An observation's weight as Count reads it: clamped to [0, 1]."""
    return greatest(0.0, least(1.0, weight))


def contradiction_penalty(explicit: Cond, w: FourCWeights) -> Num:
    """What one session with contradicting evidence costs: ``explicit_contradiction_penalty`` (25) when the
    contradiction in it was explicit (a statement or a denied confirmation), else ``contradiction_penalty`` (15)."""
    return when(explicit, w.explicit_contradiction_penalty, w.contradiction_penalty)


def fourc_parts(a: FourCInputs, w: FourCWeights) -> FourCParts:
    """Count, Continuity, Cross-context and Confirmation (module docstring): each linear up to its saturation."""
    count = w.count_points * least(a.mass, w.count_saturation_sessions) / w.count_saturation_sessions
    continuity = w.continuity_points * least(1.0, a.span_days / w.continuity_saturation_days)
    cross = w.cross_context_points * least(1.0, a.contexts / w.cross_context_saturation)
    inferred = w.inferred_points * least(1.0, a.sessions / w.inferred_saturation_sessions)
    confirmation = when(a.confirmed, w.confirmation_points, when(a.stated, w.explicit_points, inferred))
    return FourCParts(*(rounded(part, SCORE_DECIMALS) for part in (count, continuity, cross, confirmation)))


def fourc_settle(parts: FourCParts, raw_penalty: Num) -> tuple[Num, Num]:
    """(penalty, score): the penalty is capped at the sum of the parts, so the score is 0-100 and exactly
    that sum minus the penalty."""
    positive = parts.count + parts.continuity + parts.cross_context + parts.confirmation
    penalty = least(rounded(raw_penalty, SCORE_DECIMALS), rounded(positive, SCORE_DECIMALS))
    return penalty, rounded(positive - penalty, SCORE_DECIMALS)


def promotion_rule(*, score: Num, sessions: Num, threshold: Num, min_sessions: Num) -> Cond:
    """A candidate is promoted to ``long_term`` when its score reaches ``threshold`` (CTXMEM_LONG_TERM_THRESHOLD,
    60) with support from at least ``min_sessions`` independent sessions (CTXMEM_CANDIDATE_MIN_SESSIONS, 2):
    docs/design.md §3.3 and §3.5."""
    return both(at_least(sessions, min_sessions), at_least(score, threshold))


def score_4c(evidence: Sequence[Evidence], *, now: datetime, weights: FourCWeights | None = None) -> FourCScore:
    """Score ``evidence`` as of ``now`` (evidence observed after ``now`` is ignored, so a job can score
    "as of" a past instant). Parts are rounded to 0.01 and the score is exactly their sum, 0-100."""
    w = weights or FourCWeights()
    usable = [e for e in evidence if e.observed_at <= now]
    supporting = [e for e in usable if e.supports]
    contradicting = [e for e in usable if not e.supports]

    per_session: dict[str, float] = {}
    for e in supporting:
        per_session[e.session_id] = max(per_session.get(e.session_id, 0.0), number(evidence_weight(e.weight)))
    span_days = 0.0
    if supporting:
        first = min(e.observed_at for e in supporting)
        last = max(e.observed_at for e in supporting)
        span_days = (last - first).total_seconds() / SECONDS_PER_DAY
    contra_sessions: dict[str, bool] = {}
    for e in contradicting:
        contra_sessions[e.session_id] = contra_sessions.get(e.session_id, False) or e.explicit or e.confirmation
    inputs = FourCInputs(
        sessions=len(per_session),
        mass=sum(per_session.values()),
        span_days=span_days,
        contexts=len({e.context for e in supporting}),
        confirmed=any(e.confirmation for e in supporting),
        stated=any(e.explicit for e in supporting),
        raw_penalty=sum(number(contradiction_penalty(hard, w)) for hard in contra_sessions.values()),
    )
    parts = fourc_parts(inputs, w)
    penalty, score = fourc_settle(parts, inputs.raw_penalty)
    return FourCScore(
        score=number(score),
        count=number(parts.count),
        continuity=number(parts.continuity),
        cross_context=number(parts.cross_context),
        confirmation=number(parts.confirmation),
        penalty=number(penalty),
        sessions=len(per_session),
        span_days=number(rounded(span_days, SCORE_DECIMALS)),
        contexts=len({e.context for e in supporting}),
        contradicting_sessions=len(contra_sessions),
        evidence_ids=tuple(sorted(e.id for e in usable)),
    )


def promotable(score: FourCScore, *, threshold: float, min_sessions: int) -> bool:
    """``promotion_rule`` for a scored entry (the promote job applies it in SQL, generated from the same rule)."""
    return truth(
        promotion_rule(score=score.score, sessions=score.sessions, threshold=threshold, min_sessions=min_sessions)
    )
