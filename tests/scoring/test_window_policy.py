"""The window's policy: placement and pinning, the standing kinds of item, and the value model's shapes."""

from __future__ import annotations

import itertools

import pytest

from scoring.window_policy import (
    DEFAULT_MODEL,
    SECTION_WEIGHTS,
    STANDING_STATUSES,
    STANDING_TYPES,
    Omission,
    Omitted,
    ValueModel,
    older_items_wanted,
    place_item,
    related_groups,
    tool_results_in_history,
    window_budget,
)

TYPES = ("rule", "goal", "constraint", "preference", "fact", "decision", "entity", "plan", "tool_result", "summary",
         "episode")  # fmt: skip
STATUSES = ("available", "verified", "missing")
AUTHORITIES = ("system", "user", "tool", "summary", "inferred")


def test_every_item_that_is_or_may_be_pinned_is_standing() -> None:
    """The service reads the standing kinds of item for every window (and the rest only when retrieved or
    among the newest): whatever ``place_item`` pins, or the service pins as the current goal / plan, must be
    of a standing type or status, or a pinned item could miss a window."""
    for t, status, authority, hard in itertools.product(TYPES, STATUSES, AUTHORITIES, (False, True)):
        section, pinned, _ = place_item(type=t, status=status, authority=authority, hard=hard, scope="user")
        assert section in SECTION_WEIGHTS
        if pinned or t in ("goal", "plan"):
            assert t in STANDING_TYPES or status in STANDING_STATUSES, (t, status, authority, hard)


def test_relevance_multiplies_and_is_monotone() -> None:
    m = DEFAULT_MODEL
    factors = [m.relevance_factor(r / 20) for r in range(21)]
    assert factors == sorted(factors) and factors[0] == m.relevance_floor and factors[-1] == 1.0
    assert m.relevance_factor(-1) == m.relevance_floor and m.relevance_factor(3) == 1.0
    linear = ValueModel(relevance_sharpness=0)
    assert abs(linear.relevance_factor(0.5) - (linear.relevance_floor + (1 - linear.relevance_floor) / 2)) < 1e-12


def test_merit_orders_a_users_statement_above_a_guess_and_fresh_above_stale() -> None:
    m = DEFAULT_MODEL
    user = m.item_value("facts", authority_rank=3, confidence=0.9, age_days=1)
    guess = m.item_value("facts", authority_rank=0, confidence=0.9, age_days=1)
    stale = m.item_value("facts", authority_rank=3, confidence=0.9, age_days=365)
    assert user > guess and user > stale


def test_level_shares() -> None:
    m = ValueModel(extractive_exponent=0.5, key_fields_exponent=1.0, index_share=0.05)
    texts = ("a long original text", "condensed", "summary", "key", "[ctx: index]")
    shares = m.level_shares(texts, (100, 25, 16, 9, 12))
    assert shares[0] == 1.0 and abs(shares[1] - 0.5) < 1e-12 and abs(shares[2] - 0.4) < 1e-12
    assert abs(shares[3] - 0.09) < 1e-12 and shares[4] == 0.05
    # a short item whose levels are its own text keeps all its value at each of them
    assert m.level_shares(("hi",) * 5, (1,) * 5) == (1.0,) * 5
    # an index line longer than the text was replaced by the shortest text: worth what that text is
    assert m.level_shares(("abc", "abc", "abc", "ab", "ab"), (4, 4, 4, 2, 2))[4] == 0.5


def test_longer_items_are_worth_more_but_not_per_token_by_default() -> None:
    m = DEFAULT_MODEL
    assert m.size_factor(64) > m.size_factor(32) > m.size_factor(8)
    assert m.size_factor(64) / 64 == m.size_factor(32) / 32  # exponent 1: value per token by relevance alone
    assert ValueModel(length_exponent=0).size_factor(500) == 1.0


def test_the_budget_is_max_tokens_or_the_smaller_of_reserve_and_watermark() -> None:
    assert window_budget(max_tokens=900, context_limit=None, reserve_tokens=0, watermark=0.6) == 900
    # 128k context, 4k for the answer: the watermark's 60 % binds
    assert window_budget(max_tokens=None, context_limit=128_000, reserve_tokens=4_000, watermark=0.6) == 76_800
    # a large reserve binds instead
    assert window_budget(max_tokens=None, context_limit=10_000, reserve_tokens=6_000, watermark=0.6) == 4_000
    with pytest.raises(ValueError, match="max_tokens or context_limit"):
        window_budget(max_tokens=None, context_limit=None, reserve_tokens=0, watermark=0.6)


def test_older_items_are_read_only_with_room_and_nothing_cut() -> None:
    assert older_items_wanted(room=800, cut=0, has_older=True) == 100  # a few short items per 8 tokens
    assert older_items_wanted(room=10**9, cut=0, has_older=True) == 1_000  # bounded
    assert older_items_wanted(room=63, cut=0, has_older=True) == 0  # too little room
    assert older_items_wanted(room=800, cut=0.5, has_older=True) == 0  # something was already given up
    assert older_items_wanted(room=800, cut=0, has_older=False) == 0


def test_tool_results_kept_in_the_history_are_named_once_with_their_message() -> None:
    messages = [
        {"role": "user", "content": "weather?"},
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 21}'},
        {"role": "tool", "tool_call_id": "c2", "content": "  "},
        {"role": "tool", "tool_call_id": "c3", "content": '{"temp": 21}'},
        {"role": "tool", "tool_call_id": "c4", "content": "dropped from the history"},
    ]
    said = tool_results_in_history(messages, kept=[0, 1, 2, 3])
    assert said == {'{"temp": 21}': "left out: the same tool result is in the history (messages[1])"}


def test_related_items_form_groups_named_by_their_smallest_id() -> None:
    ids = ["c", "a", "b", "d", "e"]
    groups = related_groups(ids, {"c": ["a"], "b": ["c", "zz"], "d": []})  # zz is not among the items
    assert groups == {"a": "a", "b": "a", "c": "a"}  # d and e stand alone: no group


def test_an_omission_counts_under_its_kind() -> None:
    over = Omission("i1", "dropped: over budget (facts); its next step …", Omitted.OVER_BUDGET, "facts")
    assert over.label == "dropped: over budget (facts)"
    echo = Omission("i2", "left out: the same tool result is in the history (messages[3])", Omitted.IN_HISTORY)
    assert echo.label == "left out: the same tool result is in the history"
