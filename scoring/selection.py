"""Choosing a level for every element by value per token: a multiple-choice knapsack (docs/design.md §3.6 step 5).

Each element offers a few *options* — its compression levels, each with a cost in tokens and a share of the
element's value it keeps — and may also be left out (cost 0, value 0). The window wants the options that
maximise the value shown within the budget.

The method is the classic greedy for the LP relaxation of the multiple-choice knapsack (Sinha & Zoltners,
1979): per element, keep only the options on the upper convex hull of its (cost, value) points (an option
below the hull is never the best use of its tokens), turn consecutive hull points into *steps* (extra
tokens, extra value), and take the steps of all elements in order of value per token, best first. The
hull makes every element's steps come in its own order (each step worth less per token than the one
before), so taking steps in that global order always moves an element one level up at a time.

Steps are taken as a prefix: the first step that does not fit ends the selection, and its value per token
is the window's *cut*. Stopping there (instead of skipping it and trying smaller steps) leaves at most one
step's tokens unused, and it is what makes the choice monotone: a larger budget takes a longer prefix of
the same order, so it never lowers an element's level nor drops one that was kept; raising one element's
value moves only its own steps earlier, so it never lowers that element's level.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# Relative tolerance of the hull: a middle point must lie above the chord of its neighbours by more than
# this share of the values involved, so floating-point noise can never put an element's steps out of order.
HULL_EPS = 1e-9
INFINITE = float("inf")


@dataclass(frozen=True, slots=True)
class Point:
    cost: int  # tokens when this option is chosen (the whole element, not the step)
    share: float  # share of the element's value it keeps, 0-1
    level: int  # the option's name (a compression level, or a count of history units kept)


def hull(points: Sequence[Point]) -> tuple[Point, ...]:
    """The options worth considering, cheapest first: those on the upper convex hull of the points with the
    origin (leaving the element out). Of options with equal cost the best share wins, then the lower level;
    an option costing more without keeping more is never on it. Shares strictly increase along the hull
    and the share gained per token strictly decreases."""
    front: list[Point] = []
    for p in sorted(points, key=lambda p: (p.cost, -p.share, p.level)):
        if front and (p.cost == front[-1].cost or p.share <= front[-1].share * (1 + HULL_EPS)):
            continue
        if not front and p.share <= 0:
            continue
        front.append(p)
    out: list[Point] = []
    origin = Point(0, 0.0, -1)
    for p in front:
        while out:
            a = out[-2] if len(out) > 1 else origin
            b = out[-1]
            # b stays only if the slope a→b is strictly greater than b→p.
            left = (b.share - a.share) * (p.cost - b.cost)
            right = (p.share - b.share) * (b.cost - a.cost)
            if left > right + HULL_EPS * max(abs(left), abs(right), 1e-12):
                break
            out.pop()
        out.append(p)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Choice:
    """What the selection gave: per element the index into its hull (-1: left out), the value per token of
    the first step not taken (0.0 when every step was taken), the tokens used, and the element whose step
    was the first not taken (-1 when every step was taken)."""

    at: list[int]
    cut: float
    used: int
    stopped: int = -1


def steps_order(values: Sequence[float], rates: Sequence[Sequence[float]]) -> list[tuple[float, int, int]]:
    """Every element's steps as (value per token, element, step index), best first; ties go to the element
    listed first, then to its lower step. ``rates[e][k]`` is the share of its value step k adds per token
    (:func:`rates_of`); a step costing nothing is infinitely good whatever the value."""
    keyed = [
        (-INFINITE if r == INFINITE else -(v * r), e, k)
        for e, (v, element_rates) in enumerate(zip(values, rates, strict=True))
        for k, r in enumerate(element_rates)
    ]
    keyed.sort()
    return [(-d, e, k) for d, e, k in keyed]


def steps_keys(
    values: Sequence[float], rates: Sequence[Sequence[float]], elements: Iterable[int] | None = None
) -> list[tuple[float, int, int]]:
    """The steps of ``elements`` (default: all) as sort keys, unsorted: (minus value per token, element,
    step index). Sorted, keys of all elements give :func:`steps_order`'s order with the value per token
    negated; a caller that keeps sorted keys of elements whose values do not change can merge in the
    others' (the order is a total one)."""
    out = []
    for e in range(len(values)) if elements is None else elements:
        v = values[e]
        for k, r in enumerate(rates[e]):
            out.append((-INFINITE if r == INFINITE else -(v * r), e, k))
    return out


def rates_of(h: Sequence[Point]) -> tuple[float, ...]:
    """The share of value per token each step along a hull adds (infinite for a step costing nothing)."""
    out, prev_cost, prev_share = [], 0, 0.0
    for p in h:
        dc = p.cost - prev_cost
        out.append(INFINITE if dc <= 0 else (p.share - prev_share) / dc)
        prev_cost, prev_share = p.cost, p.share
    return tuple(out)


def take(
    hulls: Sequence[Sequence[Point]],
    order: Sequence[tuple[float, int, int]],
    *,
    budget: int,
    used: int,
    entry_cost: Callable[[int], int] | None = None,
    entered: Callable[[int], None] | None = None,
) -> Choice:
    """Take the steps of ``order`` (from :func:`steps_order`) while they fit in ``budget`` on top of
    ``used``. ``entry_cost(e)`` is what an element costs beyond its own tokens when it first enters the
    window (a section heading not shown yet), and ``entered(e)`` is called when it does."""
    at = [-1] * len(hulls)
    cut = 0.0
    for density, e, k in order:
        h = hulls[e]
        step = h[k].cost - (h[k - 1].cost if k else 0)
        if k == 0 and entry_cost is not None:
            step += entry_cost(e)
        if used + step > budget:
            cut = density
            break
        used += step
        at[e] = k
        if k == 0 and entered is not None:
            entered(e)
    return Choice(at, cut, used)


def take_keyed(
    hulls: Sequence[Sequence[Point]],
    keys: Sequence[tuple[float, int, int]],
    *,
    budget: int,
    used: int,
    sections: Sequence[Iterable[str]],
    header_tokens: Mapping[str, int],
    visible: Iterable[str],
) -> Choice:
    """:func:`take` over sorted :func:`steps_keys`, where an element entering the window first pays the
    headings of its ``sections`` not ``visible`` yet (``header_tokens`` each); the same choice as
    :func:`take` over :func:`steps_order` with the matching ``entry_cost`` and ``entered``."""
    at = [-1] * len(hulls)
    shown = set(visible)
    for key, e, k in keys:
        h = hulls[e]
        if k:
            step = h[k].cost - h[k - 1].cost
        else:
            step = h[0].cost
            for s in sections[e]:
                if s not in shown:
                    step += header_tokens[s]
        if used + step > budget:
            return Choice(at, -key, used, e)
        used += step
        at[e] = k
        if not k:
            shown.update(sections[e])
    return Choice(at, 0.0, used)


def next_density(h: Sequence[Point], value: float, at: int) -> float | None:
    """The value per token of the step an element did not take (``None`` at its top option)."""
    if at + 1 >= len(h):
        return None
    prev_cost, prev_share = (h[at].cost, h[at].share) if at >= 0 else (0, 0.0)
    dc = h[at + 1].cost - prev_cost
    return INFINITE if dc <= 0 else value * (h[at + 1].share - prev_share) / dc
