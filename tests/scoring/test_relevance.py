"""Reciprocal-rank fusion and the combined importance."""

from __future__ import annotations

import pytest

from scoring.relevance import importance, normalised, rrf


def test_rrf_rewards_agreement_and_either_ranking() -> None:
    scores = rrf([["a", "b", "c"], ["b", "d"]], k=60)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["b"] > scores["a"] > scores["d"] > scores["c"]
    assert rrf([]) == {}
    n = normalised(scores)
    assert n["b"] == 1.0 and 0 < n["c"] < 1
    assert normalised({}) == {}


def test_importance_formula() -> None:
    top = importance(relevance=1.0, authority_rank=4, confidence=1.0, age_days=0)
    assert top == pytest.approx(1.0)
    assert importance(relevance=0, authority_rank=0, confidence=0, age_days=10_000) == pytest.approx(0, abs=1e-9)
    # a month halves recency
    assert importance(relevance=0, authority_rank=0, confidence=0, age_days=30) == pytest.approx(0.075)
    # a relevant guess can outrank an irrelevant user statement, but relevance is not everything
    relevant_guess = importance(relevance=1.0, authority_rank=0, confidence=0.5, age_days=5)
    irrelevant_user = importance(relevance=0.0, authority_rank=3, confidence=0.9, age_days=5)
    assert relevant_guess > irrelevant_user
