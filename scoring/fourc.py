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


def _r(x: float) -> float:
    return round(x, SCORE_DECIMALS)


def score_4c(evidence: Sequence[Evidence], *, now: datetime, weights: FourCWeights | None = None) -> FourCScore:
    """Score ``evidence`` as of ``now`` (evidence observed after ``now`` is ignored, so a job can score
    "as of" a past instant). Parts are rounded to 0.01 and the score is exactly their sum, 0-100."""
    w = weights or FourCWeights()
    usable = [e for e in evidence if e.observed_at <= now]
    supporting = [e for e in usable if e.supports]
    contradicting = [e for e in usable if not e.supports]

    # Count: independent sessions, each counted once, at the strongest weight seen in it.
    per_session: dict[str, float] = {}
    for e in supporting:
        per_session[e.session_id] = max(per_session.get(e.session_id, 0.0), max(0.0, min(1.0, e.weight)))
    sessions = len(per_session)
    session_mass = min(float(w.count_saturation_sessions), sum(per_session.values()))
    count = w.count_points * session_mass / w.count_saturation_sessions

    span_days = 0.0
    if supporting:
        first = min(e.observed_at for e in supporting)
        last = max(e.observed_at for e in supporting)
        span_days = (last - first).total_seconds() / SECONDS_PER_DAY
    continuity = w.continuity_points * min(1.0, span_days / w.continuity_saturation_days)

    contexts = len({e.context for e in supporting})
    cross = w.cross_context_points * min(1.0, contexts / w.cross_context_saturation)

    if any(e.confirmation for e in supporting):
        confirmation = w.confirmation_points
    elif any(e.explicit for e in supporting):
        confirmation = w.explicit_points
    else:
        inferred_sessions = len({e.session_id for e in supporting})
        confirmation = w.inferred_points * min(1.0, inferred_sessions / w.inferred_saturation_sessions)

    positive = _r(count) + _r(continuity) + _r(cross) + _r(confirmation)
    contra_sessions: dict[str, bool] = {}
    for e in contradicting:
        contra_sessions[e.session_id] = contra_sessions.get(e.session_id, False) or e.explicit or e.confirmation
    raw_penalty = sum(
        w.explicit_contradiction_penalty if explicit else w.contradiction_penalty
        for explicit in contra_sessions.values()
    )
    penalty = min(_r(raw_penalty), _r(positive))
    return FourCScore(
        score=_r(positive - penalty),
        count=_r(count),
        continuity=_r(continuity),
        cross_context=_r(cross),
        confirmation=_r(confirmation),
        penalty=penalty,
        sessions=sessions,
        span_days=_r(span_days),
        contexts=contexts,
        contradicting_sessions=len(contra_sessions),
        evidence_ids=tuple(sorted(e.id for e in usable)),
    )


def promotable(score: FourCScore, *, threshold: float, min_sessions: int) -> bool:
    """A candidate is promoted to ``long_term`` when its score reaches ``threshold`` (CTXMEM_LONG_TERM_THRESHOLD,
    60) with support from at least ``min_sessions`` independent sessions (CTXMEM_CANDIDATE_MIN_SESSIONS, 2):
    docs/design.md §3.3 and §3.5. The promote job applies this rule in SQL (jobs/repository.py)."""
    return score.sessions >= min_sessions and score.score >= threshold
