"""The knapsack's parts: the hull of an element's options, the order of steps, taking them."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.selection import INFINITE, Point, hull, next_density, rates_of, steps_order, take


def test_the_hull_keeps_only_options_worth_their_tokens() -> None:
    points = [
        Point(100, 1.0, 0),  # the original
        Point(60, 0.5, 1),  # below the chord from the origin to the original: never the best use of tokens
        Point(30, 0.45, 2),
        Point(30, 0.40, 3),  # same cost, worth less
        Point(40, 0.45, 4),  # costs more, worth no more
    ]
    assert [p.level for p in hull(points)] == [2, 0]
    collinear = [Point(10, 0.1, 3), Point(50, 0.5, 1), Point(100, 1.0, 0)]
    assert [p.level for p in hull(collinear)] == [0]  # a proportional cut is never chosen over the whole
    assert [p.level for p in hull([Point(5, 1.0, 4), Point(5, 1.0, 0)])] == [0]  # same text: the lower level


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.floats(0, 1)), min_size=1, max_size=5))
def test_hull_steps_come_in_order(raw: list[tuple[int, float]]) -> None:
    h = hull([Point(c, s, lvl) for lvl, (c, s) in enumerate(raw)])
    assert all(a.cost < b.cost and a.share < b.share for a, b in itertools.pairwise(h))
    rates = rates_of(h)
    assert all(a > b for a, b in itertools.pairwise(rates))  # each step worth less per token


def test_steps_are_taken_best_first_up_to_the_first_that_does_not_fit() -> None:
    a = hull([Point(10, 1.0, 0)])
    b = hull([Point(4, 0.5, 1), Point(20, 1.0, 0)])
    order = steps_order([1.0, 1.0], [rates_of(a), rates_of(b)])
    assert [(e, k) for _, e, k in order] == [(1, 0), (0, 0), (1, 1)]  # 0.125, then 0.1 per token, then 1/32
    choice = take([a, b], order, budget=16, used=0)
    assert choice.at == [0, 0] and choice.used == 14 and choice.cut == order[2][0]
    assert next_density(b, 1.0, 0) == order[2][0] and next_density(a, 1.0, 0) is None
    free = hull([Point(0, 1.0, 0)])
    assert rates_of(free) == (INFINITE,) and steps_order([0.0], [rates_of(free)])[0][0] == INFINITE
