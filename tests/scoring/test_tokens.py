"""The dependency-free token estimate: exact arithmetic of the documented weights, no fixtures."""

# ruff: noqa: RUF001 - the CJK sample text uses fullwidth punctuation on purpose.

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.tokens import WEIGHTS, estimate_tokens


def _reference(text: str) -> int:
    # The rule as the docstring states it, one character at a time.
    weighted = 0.0
    for char in text:
        code = ord(char)
        if code < 0x80:
            weighted += WEIGHTS.ascii
        elif code >= 0x3000 and not 0xD800 <= code <= 0xDFFF:
            weighted += WEIGHTS.cjk
        else:
            weighted += WEIGHTS.other
    return max(1, math.ceil(weighted)) if text else 0


def test_weights_are_the_documented_ones() -> None:
    assert WEIGHTS == (0.25, 1.5, 1.0)


def test_empty_text_costs_nothing() -> None:
    assert estimate_tokens("") == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("x" * 400, 100),
        (" " * 401, 101),
    ],
)
def test_ascii_costs_a_quarter_token_a_character(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我们的运维团队很小", 14),  # 9 Han x 1.5 = 13.5
        ("ひらがな", 6),  # Hiragana
        ("カタカナ", 6),  # Katakana
        ("안녕하세요", 8),  # Hangul syllables: 7.5
        ("，。", 3),  # fullwidth comma, ideographic full stop
        ("𠀀", 2),  # CJK Extension B, outside the BMP
    ],
)
def test_cjk_costs_one_and_a_half_tokens_a_character(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Привет", 6),  # Cyrillic
        ("Привет, мир", 10),  # 9 Cyrillic + 2 ASCII = 9.5
        ("é", 1),
        ("—", 1),  # general punctuation stays below U+3000
        ("\ud800", 1),  # a lone surrogate cannot be encoded; it counts as one "other" character
    ],
)
def test_other_non_ascii_costs_one_token_a_character(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_mixed_text_sums_the_classes() -> None:
    # 6 ASCII x 0.25 + 2 Han x 1.5 = 4.5
    assert estimate_tokens("Hello 世界") == 5
    # 10 ASCII x 0.25 + 3 Han x 1.5 + 1 em dash x 1.0 = 8.0
    assert estimate_tokens("PostgreSQL—数据库") == 8


@given(st.text())
def test_matches_the_character_by_character_rule(text: str) -> None:
    assert estimate_tokens(text) == _reference(text)


@given(st.text(min_size=1), st.text())
def test_is_monotonic_in_length_and_positive(head: str, tail: str) -> None:
    assert 1 <= estimate_tokens(head) <= estimate_tokens(head + tail)


@given(st.text(), st.text())
def test_is_subadditive(left: str, right: str) -> None:
    # Rounding up once can only save a token over rounding two halves up separately.
    assert estimate_tokens(left + right) <= estimate_tokens(left) + estimate_tokens(right)
