"""Fusion of the lexical and vector rankings."""

from __future__ import annotations

import pytest

from scoring.relevance import convex, normalised, rrf


def test_rrf_rewards_agreement_and_either_ranking() -> None:
    scores = rrf([["a", "b", "c"], ["b", "d"]], k=60)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["b"] > scores["a"] > scores["d"] > scores["c"]
    assert rrf([]) == {}
    n = normalised(scores)
    assert n["b"] == 1.0 and 0 < n["c"] < 1
    assert normalised({}) == {}


def test_convex_keeps_the_size_of_a_lead() -> None:
    lexical = [("a", 0.9), ("b", 0.1)]
    vector = [("b", 0.40), ("c", 0.39), ("a", 0.2)]
    scores = convex([lexical, vector], floors=[0.0, 0.15], weights=[0.5, 0.5])
    # a: a strong lexical match, weak in vectors; b: weak lexical, best vector; c: vectors only
    assert scores["a"] == pytest.approx(0.5 * 1 + 0.5 * (0.05 / 0.25))
    assert scores["b"] == pytest.approx(0.5 * (0.1 / 0.9) + 0.5 * 1)
    assert scores["c"] == pytest.approx(0.5 * (0.24 / 0.25))
    assert scores["a"] > scores["b"] > scores["c"]
    # RRF sees only ranks: b, first in one list and second in the other, beats a
    r = rrf([[k for k, _ in lexical], [k for k, _ in vector]])
    assert r["b"] > r["a"]


def test_convex_edge_cases() -> None:
    assert convex([], floors=[], weights=[]) == {}
    # hits at or below the floor carry nothing; a ranking whose best is the floor is skipped
    assert convex([[("a", 0.1)]], floors=[0.15], weights=[1.0]) == {}
    assert convex([[("a", 0.5), ("b", 0.1)]], floors=[0.15], weights=[1.0]) == {"a": 1.0, "b": 0.0}
    with pytest.raises(ValueError, match="longer"):
        convex([[("a", 1.0)]], floors=[0.0, 0.0], weights=[1.0])
