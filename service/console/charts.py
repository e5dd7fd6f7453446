"""The console's two drawings as numbers (the templates turn them into inline SVG): a 4C score as a bar of
its parts, and an entry's evidence over time. Pure: values in, geometry out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from scoring.fourc import FourCWeights

# The four parts of the 4C score, in the order design.md §3.4 lists them, with the weight that caps each.
PARTS: tuple[tuple[str, str, str], ...] = (
    ("count", "Count", "count_points"),
    ("continuity", "Continuity", "continuity_points"),
    ("cross_context", "Cross-context", "cross_context_points"),
    ("confirmation", "Confirmation", "confirmation_points"),
)
# The parts' colours (console.css repeats them for the legend's swatches, .sw-<part>).
PART_COLOURS = {"count": "#0b5cad", "continuity": "#3f8f3f", "cross_context": "#a15c00", "confirmation": "#6f42c1"}
# Okabe-Ito's hues, darkened where needed so that every marker stands 3:1 against the white plot (WCAG
# 1.4.11; tests/service/console/test_static.py), with the shapes telling the kinds apart without colour.
PALETTE = ("#0072b2", "#c85200", "#00805f", "#b0487f", "#6a3d9a", "#8c6d1f", "#1b1f24", "#a07800")


@dataclass(frozen=True)
class Segment:
    part: str
    label: str
    value: float
    maximum: float
    x: float
    width: float
    colour: str


@dataclass(frozen=True)
class FourCBar:
    """A bar 100 points wide: the parts side by side, then the penalty taken off the end of them."""

    segments: tuple[Segment, ...]
    penalty: float
    penalty_x: float
    score: float
    threshold: float

    def text(self) -> str:
        parts = ", ".join(f"{s.label} {_n(s.value)} of {_n(s.maximum)}" for s in self.segments)
        return f"4C score {_n(self.score)}: {parts}; minus a penalty of {_n(self.penalty)}"


def _n(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _part(breakdown: Mapping[str, Any], name: str) -> float:
    value = breakdown.get(name, 0.0)
    return float(value) if isinstance(value, int | float) else 0.0


def fourc_bar(breakdown: Mapping[str, Any], *, weights: FourCWeights, threshold: float) -> FourCBar:
    """The bar of an entry's stored breakdown (``scoring.fourc.FourCScore.breakdown``); an entry not scored yet
    (``{}``) is an empty bar."""
    segments, x = [], 0.0
    for part, label, weight in PARTS:
        value = max(0.0, _part(breakdown, part))
        maximum = float(getattr(weights, weight))
        segments.append(Segment(part, label, value, maximum, x, value, PART_COLOURS[part]))
        x += value
    penalty = min(max(0.0, _part(breakdown, "penalty")), x)
    score = _part(breakdown, "score") if "score" in breakdown else x - penalty
    return FourCBar(tuple(segments), penalty, x - penalty, score, threshold)


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    shape: str  # "square" (explicit), "circle" (inferred), "diamond" (a confirmation)
    colour: str
    label: str
    supports: bool


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class EvidencePlot:
    width: int
    height: int
    left: float
    right: float
    axis_y: float
    points: tuple[Point, ...]
    ticks: tuple[Tick, ...]
    legend: tuple[tuple[str, str], ...]  # (session or context, colour)
    colour_by: str


WIDTH, HEIGHT = 800, 260
LEFT, RIGHT = 100.0, 750.0
AXIS_Y = 130.0
ROW = 44.0  # distance of the first supporting / contradicting marker from the axis
STACK = 16.0  # markers closer than STACK on the x axis are stacked this far apart


# What the evidence can be coloured by → the observation's field.
COLOUR_FIELDS = {"session": "session_id", "context": "context"}


def evidence_plot(observations: Sequence[Any], *, colour_by: str = "session") -> EvidencePlot:
    """Observations (anything with ``observed_at``, ``stance``, ``explicit``, ``confirmation``, ``session_id``,
    ``context``) on a time axis: supporting above it, contradicting below, coloured by session or context."""
    obs = sorted(observations, key=lambda o: o.observed_at)
    field = COLOUR_FIELDS[colour_by]
    groups: list[str] = []
    for o in obs:
        g = getattr(o, field)
        if g not in groups:
            groups.append(g)
    colour = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}
    if obs:
        start, end = obs[0].observed_at, obs[-1].observed_at
    else:
        start = end = datetime(2000, 1, 1)
    if end - start < timedelta(hours=1):
        start, end = start - timedelta(hours=12), end + timedelta(hours=12)
    span = (end - start).total_seconds()

    def x_of(at: datetime) -> float:
        return float(LEFT + (RIGHT - LEFT) * (at - start).total_seconds() / span)

    points: list[Point] = []
    last_x: dict[bool, float] = {}
    depth: dict[bool, int] = {True: 0, False: 0}
    for o in obs:
        supports = o.stance == "supports"
        x = x_of(o.observed_at)
        depth[supports] = depth[supports] + 1 if supports in last_x and x - last_x[supports] < STACK else 0
        last_x[supports] = x
        offset = ROW + STACK * (depth[supports] % 5)
        y = AXIS_Y - offset if supports else AXIS_Y + offset
        shape = "diamond" if o.confirmation else ("square" if o.explicit else "circle")
        kind = "confirmation" if o.confirmation else ("explicit" if o.explicit else "inferred")
        label = (
            f"{o.observed_at:%Y-%m-%d %H:%M} UTC · {'supports' if supports else 'contradicts'} · {kind}"
            f" · session {o.session_id} · context {o.context}"
        )
        points.append(Point(x, y, shape, colour[getattr(o, field)], label, supports))
    fmt = "%Y-%m-%d" if end - start > timedelta(days=3) else "%m-%d %H:%M"
    ticks = tuple(Tick(x_of(start + (end - start) * i / 4), f"{start + (end - start) * i / 4:{fmt}}") for i in range(5))
    return EvidencePlot(WIDTH, HEIGHT, LEFT, RIGHT, AXIS_Y, tuple(points), ticks, tuple(colour.items()), colour_by)
