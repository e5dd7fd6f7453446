"""Hybrid relevance and how it combines with an item's other merits in the window.

Relevance fuses two rankings of the user's items for the query — lexical (BM25 over the user's texts in
PostgreSQL's full-text index) and vector (cosine similarity in the index) — and then reads conversation
turns in context: beside their neighbours (``in_context``), a question as answered by its reply
(``answered``), and within their session (``in_session``); a query that names a date prefers what was
observed then (``in_period``). Two fusions (``CTXMEM_FUSION``):

* ``convex`` (default): a weighted sum of each ranking's min-max normalised scores, w · lexical +
  (1 - w) · vector, w the embedder's (service/vectors/embedders.py) (Bruch et al., 2023). Normalising
  between a ranking's noise floor and this query's best hit keeps how far the best hits stand out, so one
  strong match outweighs two weak ones.
* ``rrf``: reciprocal-rank fusion, score(d) = Σ 1 / (k + rank_r(d)), k = 60 (Cormack et al., 2009): no
  score calibration needed, but it sees ranks only.

Convex is the default because it does better on the retrieval eval (bench/recall_eval.py; figures in
bench/README.md) and never worse.

The window turns relevance into value (scoring/window_policy.py): relevance = fused score / best fused
score of this query (0-1; 0 for items in neither ranking) multiplies an item's worth.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Hashable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

RRF_K = 60


def rrf(rankings: Sequence[Sequence[K]], *, k: int = RRF_K) -> dict[K, float]:
    """Reciprocal-rank fusion of best-first rankings (ranks start at 1)."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return scores


def convex(
    scored: Sequence[Sequence[tuple[K, float]]], *, floors: Sequence[float], weights: Sequence[float]
) -> dict[K, float]:
    """Convex combination of min-max normalised scores (Bruch et al., 2023): per ranking, a hit's score
    becomes (score - floor) / (best score - floor), clipped to [0, 1], where ``floor`` is the lowest
    score that still means something (0 for a text-search rank, the embedder's noise floor for cosine);
    a document's relevance is Σ weight · normalised score (0 where a ranking lacks it). Unlike RRF it keeps
    how much better the best hits are than the rest, so one strong match outweighs two weak ones."""
    out: dict[K, float] = {}
    for hits, floor, weight in zip(scored, floors, weights, strict=True):
        best = max((score for _, score in hits), default=floor)
        span = best - floor
        if span <= 0:
            continue
        for key, score in hits:
            x = min(1.0, max(0.0, (score - floor) / span))
            out[key] = out.get(key, 0.0) + weight * x
    return out


def normalised(scores: dict[K, float]) -> dict[K, float]:
    best = max(scores.values(), default=0.0)
    return {key: s / best for key, s in scores.items()} if best > 0 else {}


def whole_days(t: datetime) -> int:
    """Days since the Unix epoch (UTC), rounded down: ages in whole days are differences of these."""
    return int(t.timestamp() // 86_400)


def in_context(
    scores: dict[K, float], links: Sequence[tuple[K, K, int]], *, share: float, decay: float = 0.5
) -> dict[K, float]:
    """Relevance in context: a turn of a conversation is read with the turns around it (a reply answers
    the turn before it; a story goes on over a few turns), so it gains ``share`` of the relevance of its
    most relevant neighbour, ``share · decay`` for a neighbour two turns away, and so on. ``links`` are
    (turn, neighbour, distance ≥ 1) triples, in either direction; each turn gains only from its best
    neighbour, once, on top of its own relevance. Renormalised so the best is 1 again."""
    if share <= 0 or not links:
        return scores
    gain: dict[K, float] = {}
    for source, neighbour, distance in links:
        g = share * decay ** (distance - 1) * scores.get(source, 0.0)
        if g > gain.get(neighbour, 0.0):
            gain[neighbour] = g
    out = dict(scores)
    for key, g in gain.items():
        out[key] = out.get(key, 0.0) + g
    return normalised(out)


def in_session(
    scores: dict[K, float], session_of: Mapping[K, Hashable], *, share: float, turns: int = 3
) -> dict[K, float]:
    """Relevance in its session: passage retrieval with document-level evidence (Callan, 1994, "Passage-level
    evidence in document retrieval"), the conversation's session being the document and a turn its passage.
    A turn says little on its own ("Yeah, they're the ones performing at the festival!"); a session in which
    several turns match the query is about it, and its other matching turns are likelier to be what answers.
    So a turn's relevance becomes (1 - share) · its own + share · its session's, the session's being the mean
    of the ``turns`` best relevances among its scored turns (a session with fewer counts the missing ones as
    0: one stray match does not make a session relevant). Items without a session (``session_of`` lacks
    them: facts, notes) keep their own. Only scored items move (nothing enters); within a session the order
    is kept. Renormalised so the best is 1 again."""
    if share <= 0 or not session_of or not scores:
        return scores
    n = max(1, turns)
    members: dict[Hashable, list[float]] = {}
    for key, score in scores.items():
        if key in session_of:
            members.setdefault(session_of[key], []).append(score)
    of_session = {s: sum(sorted(v, reverse=True)[:n]) / n for s, v in members.items()}
    out = {
        key: (1.0 - share) * score + share * of_session[session_of[key]] if key in session_of else score
        for key, score in scores.items()
    }
    return normalised(out)


# A turn that asks: its text ends in a question mark (ASCII or fullwidth), perhaps followed by closing quotes or
# brackets (straight, curly, fullwidth, CJK corner) and spaces. The same pattern serves Python's ``re`` and
# PostgreSQL's ``~`` (service/recall/repository.py).
QUESTION_END = "[?\uff1f][\"'\u201d\u2019)\uff09\u300d\u300f\\s]*$"
_QUESTION_END = re.compile(QUESTION_END)


def asks(text: str) -> bool:
    """Whether a turn ends in a question ("What did you make?", or in Chinese with a fullwidth question mark):
    :func:`answered`'s test."""
    return _QUESTION_END.search(text) is not None


def answered(scores: dict[K, float], asking: Collection[K], replies: Mapping[K, K], *, share: float) -> dict[K, float]:
    """A question is answered by the turn after it. A question and its reply are an adjacency pair
    (Schegloff & Sacks, 1973, "Opening up closings"): a turn that asks shares the query's words — it asks about
    the same thing — but seldom holds the answer, which the reply gives. So a scored question turn (in
    ``asking``) keeps (1 - share) of its relevance and hands ``share`` of it to its reply (``replies``: a
    question → the turn right after it in its conversation, where known), on top of what the reply has. A
    question whose reply is unknown only keeps its (1 - share). Renormalised so the best is 1 again."""
    if share <= 0 or not scores:
        return scores
    asked = [key for key in asking if key in scores]
    if not asked:
        return scores
    out = dict(scores)
    for key in asked:
        out[key] = (1.0 - share) * scores[key]
    for key in asked:
        reply = replies.get(key)
        if reply is not None and reply != key:
            out[reply] = out.get(reply, 0.0) + share * scores[key]
    return normalised(out)


_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_MONTH = "|".join((*_MONTHS, "sept", *(m[:3] for m in _MONTHS if len(m) > 3)))
_YEAR = r"(?P<y>1[89]\d\d|2[01]\d\d)"
_DAY = r"(?P<d>\d{1,2})"
_NAMED = rf"(?P<m>{_MONTH})\.?"
# Most specific first: each match is blanked out before the next pattern looks.
_DATES = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b{_DAY}(?:st|nd|rd|th)?\s+(?:of\s+)?{_NAMED},?\s+{_YEAR}\b",  # 3 June, 2023
        rf"\b{_NAMED}\s+{_DAY}(?:st|nd|rd|th)?,?\s+{_YEAR}\b",  # June 3, 2023
        rf"\b{_NAMED},?\s+(?:of\s+)?{_YEAR}\b",  # June 2023
        rf"(?<![\d-]){_YEAR}-(?P<m>\d{{1,2}})(?:-{_DAY})?(?![\d-])",  # 2023-06-03, 2023-06
        rf"{_YEAR}\s*年(?:\s*(?P<m>\d{{1,2}})\s*月(?:\s*{_DAY}\s*[日号])?)?",  # 2023年6月3日
        rf"(?<![\d.:/-]){_YEAR}(?![\d.:/-])",  # 2023
    )
)

Period = tuple[datetime, datetime]


def _month(name: str) -> int:
    name = name.lower()
    return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(name))


def _period(year: int, month: int | None = None, day: int | None = None) -> Period | None:
    """[start, end) in UTC of a year, a month of it, or a day of that month; None for no such date."""
    try:
        if month is None:
            return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
        if day is None:
            start = datetime(year, month, 1, tzinfo=UTC)
            return start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        start = datetime(year, month, day, tzinfo=UTC)
        return start, datetime.fromordinal(start.toordinal() + 1).replace(tzinfo=UTC)
    except ValueError:
        return None


def named_periods(query: str) -> list[Period]:
    """The calendar periods a query names, as [start, end) in UTC: a day ("3 June, 2023", "June 3, 2023",
    "2023-06-03", "2023年6月3日"), a month ("June 2023", "2023-06", "2023年6月") or a year ("in 2023", "2023年").
    A month or day without a year is not a period (which year would it be?); each text names a period once."""
    found: list[Period] = []
    rest = query
    for rx in _DATES:
        for m in rx.finditer(rest):
            month, day = m.groupdict().get("m"), m.groupdict().get("d")
            number = None if not month else int(month) if month.isdigit() else _month(month)
            period = _period(int(m["y"]), number, int(day) if day else None)
            if period is not None and period not in found:
                found.append(period)
        rest = rx.sub(" ", rest)
    return found


def in_period(
    scores: dict[K, float], observed_at: Mapping[K, datetime], periods: Sequence[Period], *, share: float
) -> dict[K, float]:
    """A query that names a date ("what did she adopt in June 2023?", "as mentioned on 3 June, 2023") asks
    about what was observed then (time-aware ranking of queries with explicit temporal expressions): a
    scored item's relevance becomes (1 - share) · its own + share where it was observed within one of the
    ``periods``, (1 - share) · its own where not (or its time is unknown). Only scored items move (a date
    alone brings nothing in); the order within either group holds. Renormalised so the best is 1 again."""
    if share <= 0 or not periods or not scores:
        return scores

    def within(key: K) -> bool:
        t = observed_at.get(key)
        return t is not None and any(start <= t < end for start, end in periods)

    return normalised({key: (1.0 - share) * score + (share if within(key) else 0.0) for key, score in scores.items()})


def explain_match(*, matched: Sequence[str], lexical: float | None, vector: float | None) -> str:
    """Why an item is relevant to a query, in words: the query words it holds (with its BM25 score), how
    close its meaning is (the embeddings' cosine), or — neither — that it neighbours a matching turn of its
    conversation (``in_context``)."""
    parts = []
    if lexical is not None:
        words = ", ".join(matched) if matched else "the query's terms"
        parts.append(f"words: {words} (BM25 {lexical:.2f})")
    if vector is not None:
        parts.append(f"meaning: cosine {vector:.2f}")
    if not parts:
        return "context: next to a matching turn of its conversation"
    return "; ".join(parts)
