"""service/console/charts.py: the 4C bar and the evidence plot as numbers (no fixtures: pure)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from scoring.fourc import Evidence, FourCWeights, score_4c
from service.console.charts import AXIS_Y, LEFT, RIGHT, evidence_plot, fourc_bar

T0 = datetime(2026, 9, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Obs:
    observed_at: datetime
    stance: str = "supports"
    explicit: bool = False
    confirmation: bool = False
    session_id: str = "s1"
    context: str = "chat"


def _evidence(i: int, *, supports: bool = True, explicit: bool = False) -> Evidence:
    return Evidence(f"e{i}", f"s{i}", f"c{i % 2}", explicit, supports, False, T0 + timedelta(days=10 * i))


def test_the_bar_lays_the_four_parts_side_by_side_and_takes_the_penalty_off_their_end() -> None:
    scored = score_4c([_evidence(0), _evidence(1), _evidence(2, supports=False)], now=T0 + timedelta(days=30))
    bar = fourc_bar(scored.breakdown(), weights=FourCWeights(), threshold=60)
    assert [s.part for s in bar.segments] == ["count", "continuity", "cross_context", "confirmation"]
    assert [s.value for s in bar.segments] == [
        scored.count,
        scored.continuity,
        scored.cross_context,
        scored.confirmation,
    ]
    assert [s.maximum for s in bar.segments] == [30, 25, 15, 30]
    for before, after in zip(bar.segments, bar.segments[1:], strict=False):
        assert after.x == pytest.approx(before.x + before.width)
    end = bar.segments[-1].x + bar.segments[-1].width
    assert bar.penalty == scored.penalty == 15
    assert bar.penalty_x == pytest.approx(end - bar.penalty) == pytest.approx(scored.score)
    assert bar.score == scored.score
    text = bar.text()
    assert text.startswith(f"4C score {scored.score:g}: Count {scored.count:g} of 30") and "penalty of 15" in text


def test_an_unscored_entry_is_an_empty_bar_and_the_penalty_never_passes_the_parts() -> None:
    empty = fourc_bar({}, weights=FourCWeights(), threshold=60)
    assert all(s.width == 0 for s in empty.segments) and empty.penalty == 0 and empty.score == 0
    odd = fourc_bar({"count": 5, "penalty": 40, "score": 0}, weights=FourCWeights(), threshold=60)
    assert odd.penalty == 5 and odd.penalty_x == 0
    garbage = fourc_bar({"count": "x", "continuity": None}, weights=FourCWeights(), threshold=60)
    assert garbage.segments[0].value == 0


def test_the_plot_puts_supports_above_the_axis_contradictions_below_shaped_by_kind() -> None:
    obs = [
        Obs(T0, session_id="a"),
        Obs(T0 + timedelta(days=5), stance="contradicts", explicit=True, session_id="b", context="shop"),
        Obs(T0 + timedelta(days=10), confirmation=True, explicit=True, session_id="a"),
    ]
    plot = evidence_plot(obs)
    assert [p.supports for p in plot.points] == [True, False, True]
    assert [p.y < AXIS_Y for p in plot.points] == [True, False, True]
    assert [p.shape for p in plot.points] == ["circle", "square", "diamond"]
    assert plot.points[0].x == LEFT and plot.points[-1].x == RIGHT
    assert plot.points[1].x == pytest.approx((LEFT + RIGHT) / 2)
    assert [name for name, _ in plot.legend] == ["a", "b"]
    assert plot.points[0].colour == plot.points[2].colour != plot.points[1].colour
    by_context = evidence_plot(obs, colour_by="context")
    assert [name for name, _ in by_context.legend] == ["chat", "shop"]
    assert "session b" in plot.points[1].label and "contradicts" in plot.points[1].label
    assert len(plot.ticks) == 5 and plot.ticks[0].label == "2026-09-01"


def test_markers_at_one_moment_stack_instead_of_hiding_each_other() -> None:
    plot = evidence_plot([Obs(T0, session_id=f"s{i}") for i in range(3)])
    assert len({p.y for p in plot.points}) == 3
    assert all(LEFT <= p.x <= RIGHT for p in plot.points)  # one instant: the axis is widened around it
    assert evidence_plot([]).points == ()
