"""Fusion of the lexical and vector rankings."""

# ruff: noqa: RUF001 - the Chinese sample text uses fullwidth punctuation on purpose.

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.relevance import (
    answered,
    asks,
    convex,
    in_context,
    in_period,
    in_session,
    named_periods,
    normalised,
    rrf,
)


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


def test_in_context_a_turn_gains_a_share_of_its_best_neighbour() -> None:
    scores = {"q": 1.0, "a": 0.1, "b": 0.0, "far": 0.2}
    links = [("q", "a", 1), ("q", "b", 2), ("far", "a", 1), ("a", "q", 1)]
    out = in_context(scores, links, share=0.5)
    # a: its own 0.1 plus half the best neighbour's (q), not the sum over neighbours; b: a quarter of q's,
    # two turns away; q: half of a's; everything renormalised so the best is 1
    raw = {"q": 1.05, "a": 0.6, "b": 0.25, "far": 0.2}
    assert out == pytest.approx({k: v / 1.05 for k, v in raw.items()})
    assert in_context(scores, links, share=0.0) is scores
    assert in_context(scores, [], share=0.5) is scores
    # a neighbour nobody scored enters with what it gained
    assert in_context({"q": 1.0}, [("q", "new", 1)], share=0.5) == pytest.approx({"q": 1.0, "new": 0.5})


@given(
    st.dictionaries(st.sampled_from("abcdef"), st.floats(0, 1), min_size=1),
    st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from("abcdefg"), st.integers(1, 4)), max_size=12),
    st.floats(0.01, 1),
)
def test_in_context_never_reorders_what_gained_nothing(
    scores: dict[str, float], links: list[tuple[str, str, int]], share: float
) -> None:
    """Gains only add: every score is at least its old one relative to the best, and two items neither of
    which gained keep their order."""
    out = in_context(scores, links, share=share)
    gained = {n for _, n, _ in links}
    for a in scores:
        for b in scores:
            if a not in gained and b not in gained and scores[a] > scores[b]:
                assert out.get(a, 0) >= out.get(b, 0)
    assert all(0 <= v <= 1 + 1e-9 for v in out.values())


def test_asks_is_a_turn_that_ends_in_a_question() -> None:
    for text in ("Melanie: What did you make at the pottery class?", 'He said: "Really?"', "(why not?)  \n",
                 "你周末做了什么？", "你去过那里吗？」"):  # fmt: skip
        assert asks(text), text
    for text in ("Why? Because I wanted to.", "I made a bowl.", "你做了什么？我做了一个碗。", "", "?!", "Q: ok"):
        assert not asks(text), text


def test_answered_hands_a_share_of_a_questions_relevance_to_its_reply() -> None:
    scores = {"q": 1.0, "reply": 0.2, "stated": 0.8, "lone": 0.6}
    out = answered(scores, {"q", "lone", "unscored"}, {"q": "reply", "stated": "x"}, share=0.25)
    # q keeps three quarters and hands a quarter to its reply; lone, a question whose reply is unknown, keeps
    # three quarters; a statement's reply gains nothing; renormalised so the best (stated) is 1
    raw = {"q": 0.75, "reply": 0.45, "stated": 0.8, "lone": 0.45}
    assert out == pytest.approx({k: v / 0.8 for k, v in raw.items()})
    # a reply nobody scored enters with what it was handed
    assert answered({"q": 1.0}, ["q"], {"q": "new"}, share=0.25) == pytest.approx({"q": 1.0, "new": 1 / 3})
    assert answered(scores, {"q"}, {"q": "reply"}, share=0.0) is scores
    assert answered(scores, {"unscored"}, {}, share=0.25) is scores
    assert answered({}, {"q"}, {"q": "reply"}, share=0.25) == {}


@given(
    st.dictionaries(st.sampled_from("abcdef"), st.floats(0, 1), min_size=1),
    st.sets(st.sampled_from("abcdef")),
    st.dictionaries(st.sampled_from("abcdef"), st.sampled_from("abcdefg")),
    st.floats(0.01, 1),
)
def test_answered_keeps_the_order_of_statements_and_of_questions(
    scores: dict[str, float], asking: set[str], replies: dict[str, str], share: float
) -> None:
    """Only questions lose and only replies gain: among the items that are neither a question nor a reply, and
    among the questions that are no reply, the order holds; everything stays within 0..1."""
    out = answered(scores, asking, replies, share=share)
    handed = {r for q, r in replies.items() if q in asking and q in scores and r != q}
    for group in (set(scores) - asking - handed, (set(scores) & asking) - handed):
        for a in group:
            for b in group:
                # a key left out has no relevance: when nothing keeps any (a share of 1 with every reply
                # unknown), normalised() returns no keys at all
                if scores[a] > scores[b]:
                    assert out.get(a, 0.0) >= out.get(b, 0.0)
    assert all(0 <= v <= 1 + 1e-9 for v in out.values())


def test_in_session_leans_a_turn_towards_its_session() -> None:
    scores = {"a1": 1.0, "a2": 0.5, "a3": 0.4, "b1": 0.6, "fact": 0.6}
    session_of = {"a1": "a", "a2": "a", "a3": "a", "b1": "b"}
    out = in_session(scores, session_of, share=0.25, turns=3)
    # a: the mean of its three best, (1 + 0.5 + 0.4) / 3; b: one match and two missing, 0.6 / 3; the fact
    # keeps its own; then renormalised by the best (a1)
    s_a, s_b = 1.9 / 3, 0.6 / 3
    raw = {
        "a1": 0.75 * 1.0 + 0.25 * s_a,
        "a2": 0.75 * 0.5 + 0.25 * s_a,
        "a3": 0.75 * 0.4 + 0.25 * s_a,
        "b1": 0.75 * 0.6 + 0.25 * s_b,
        "fact": 0.6,
    }
    assert out == pytest.approx({k: v / raw["a1"] for k, v in raw.items()})
    # a lone match of a session about something else gives way to a weaker turn of the session the query is about
    assert scores["b1"] > scores["a2"] and out["a2"] > out["b1"]
    # only averaged over the best `turns`: a session's weak extra matches do not dilute it
    assert in_session(scores, session_of, share=0.25, turns=1)["a2"] == pytest.approx((0.75 * 0.5 + 0.25) / 1.0)
    # off, or nothing in a session: unchanged (the same object)
    assert in_session(scores, session_of, share=0.0) is scores
    assert in_session(scores, {}, share=0.25) is scores
    assert in_session({}, session_of, share=0.25) == {}


@given(
    # Relevances are normalised scores, never subnormal floats (whose products underflow to 0).
    st.dictionaries(st.sampled_from("abcdefgh"), st.floats(0, 1, allow_subnormal=False), min_size=1),
    st.dictionaries(st.sampled_from("abcdefgh"), st.sampled_from("xyz")),
    st.floats(0.01, 1),
    st.integers(1, 5),
)
def test_in_session_keeps_every_session_s_order_and_adds_nothing(
    scores: dict[str, float], session_of: dict[str, str], share: float, turns: int
) -> None:
    """Nothing enters or leaves; two turns of one session, or two items in no session, keep their order; every
    relevance stays in [0, 1]."""
    out = in_session(scores, session_of, share=share, turns=turns)
    assert set(out) <= set(scores)
    if max(scores.values()) > 0:
        assert set(out) == set(scores)
    for a in out:
        for b in out:
            same = (a in session_of and b in session_of and session_of[a] == session_of[b]) or (
                a not in session_of and b not in session_of
            )
            if same and scores[a] > scores[b]:
                assert out[a] >= out[b]
    assert all(0 <= v <= 1 + 1e-9 for v in out.values())


def _days(*periods: tuple[datetime, datetime]) -> list[tuple[str, str]]:
    return [(a.date().isoformat(), b.date().isoformat()) for a, b in periods]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Gina find for her store on 1 February, 2023?", [("2023-02-01", "2023-02-02")]),
        ("What did she show Caroline on October 13, 2023?", [("2023-10-13", "2023-10-14")]),
        ("the 3rd of June 2023", [("2023-06-03", "2023-06-04")]),
        ("Jun. 5, 2022", [("2022-06-05", "2022-06-06")]),
        ("What workout class did Maria start in December 2023?", [("2023-12-01", "2024-01-01")]),
        ("Sept 2023", [("2023-09-01", "2023-10-01")]),
        ("How many times has Melanie gone to the beach in 2023?", [("2023-01-01", "2024-01-01")]),
        ("deadline 2023-06, review 2023-07-04", [("2023-06-01", "2023-07-01"), ("2023-07-04", "2023-07-05")]),
        ("会议在2023年6月3日开", [("2023-06-03", "2023-06-04")]),
        ("2024年的计划", [("2024-01-01", "2025-01-01")]),
        ("May 2023 and again in 2024", [("2023-05-01", "2023-06-01"), ("2024-01-01", "2025-01-01")]),
        # no year, no period; numbers that are not years; a day that does not exist
        ("I may come in May", []),
        ("version 3.2023 on port 2023:80, 12000 rows", []),
        ("on 2023-02-30", []),
    ],
)
def test_named_periods(query: str, expected: list[tuple[str, str]]) -> None:
    assert _days(*named_periods(query)) == expected


def test_in_period_prefers_what_was_observed_then() -> None:
    june, july = datetime(2023, 6, 3, 12, tzinfo=UTC), datetime(2023, 7, 9, tzinfo=UTC)
    scores = {"then": 0.6, "later": 1.0, "later2": 0.8, "untimed": 0.9}
    observed = {"then": june, "later": july, "later2": july}
    (period,) = named_periods("what did she adopt in June 2023?")
    out = in_period(scores, observed, [period], share=0.25)
    raw = {"then": 0.75 * 0.6 + 0.25, "later": 0.75, "later2": 0.6, "untimed": 0.675}
    assert out == pytest.approx({k: v / raw["later"] for k, v in raw.items()})
    assert out["then"] > out["later2"] and out["later"] > out["untimed"] > out["later2"]  # the rest keep their order
    assert in_period(scores, observed, [], share=0.25) is scores
    assert in_period(scores, observed, [period], share=0.0) is scores
    # a day is a day, and a period is half-open: the first instant of July is not June
    (day,) = named_periods("on 3 June 2023")
    assert in_period({"a": 0.5, "b": 1.0}, {"a": june}, [day], share=0.5) == pytest.approx({"a": 1.0, "b": 2 / 3})
    first_of_july = {"a": datetime(2023, 7, 1, tzinfo=UTC), "b": datetime(2023, 6, 30, 23, 59, tzinfo=UTC)}
    assert in_period({"a": 1.0, "b": 0.5}, first_of_july, [period], share=0.5) == pytest.approx(
        {"a": 0.5 / 0.75, "b": 1.0}
    )


def test_explain_match_names_the_words_the_meaning_or_the_context() -> None:
    from scoring.relevance import explain_match

    both = explain_match(matched=["replica", "lag"], lexical=7.125, vector=0.614)
    assert both == "words: replica, lag (BM25 7.12); meaning: cosine 0.61"
    assert explain_match(matched=[], lexical=None, vector=0.5) == "meaning: cosine 0.50"
    assert explain_match(matched=[], lexical=2.0, vector=None) == "words: the query's terms (BM25 2.00)"
    neighbour = explain_match(matched=[], lexical=None, vector=None)
    assert neighbour == "context: next to a matching turn of its conversation"
