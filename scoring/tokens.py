"""Dependency-free token estimate (docs/design.md §3.7), the fallback when no exact BPE tokenizer is available.

Characters fall into three classes, each with a fixed cost in tokens (``WEIGHTS``):

- ASCII (U+0000-U+007F): 0.25 a character, i.e. four characters a token. Measured on English prose,
  o200k_base and cl100k_base spend one token per 4.5-6 characters (so the estimate runs ~1.5x high);
  on code and JSON one per 3-3.6 characters (the estimate runs 0.7-0.9x low).
- CJK range (code points from U+3000 up): 1.5 a character. This covers CJK punctuation, kana, Han
  (with its extensions), Hangul syllables and fullwidth forms, and also the rarer blocks that share
  those ranges: Yi, private use, variation selectors, emoji and every other supplementary-plane
  character. Measured on Chinese, Japanese and Korean prose: ~0.8-1.2 tokens a character in
  cl100k_base, ~0.5-0.7 in o200k_base; emoji 1-3. 1.5 sits at or above all of them, so CJK text is
  over-counted (1.3-1.6x against cl100k_base, 1.9-2.7x against o200k_base) rather than under-counted.
- Any other character (U+0080-U+2FFF: Latin with diacritics, Greek, Cyrillic, Arabic, Hebrew, Indic
  scripts, Thai, general punctuation such as “ ” — …): 1.0. cl100k_base spends ~0.5 (Cyrillic) to ~1.0
  (Devanagari, Thai) tokens on such a character, o200k_base ~0.25-0.4, so 1.0 is an upper bound.

The rough edges are deliberate: the estimate prefers counting too many tokens to too few, because an
overrun budget breaks the caller while an under-used one only wastes room. Classing by code point
(rather than by Unicode block) lets the count run on byte tables in C: a 32,000-character string
costs well under a millisecond, and pure ASCII text costs O(1).
"""

from __future__ import annotations

import math
from typing import Final, NamedTuple


class TokenWeights(NamedTuple):
    """Tokens a character costs, by class. Multiples of 1/4, so the weighted sum is exact in floats."""

    ascii: float
    cjk: float
    other: float


WEIGHTS: Final = TokenWeights(ascii=0.25, cjk=1.5, other=1.0)

# In UTF-8 every character has exactly one byte outside 0x80-0xBF, and its value gives the character's
# range: < 0x80 is ASCII, 0xE3-0xEF starts U+3000-U+FFFF, 0xF0-0xF4 starts U+10000 and up. Deleting
# every other byte and taking the length counts a class without a Python-level loop.
_DROP_ALL_BUT_ASCII: Final = bytes(range(0x80, 0x100))
_DROP_ALL_BUT_CJK_LEADS: Final = bytes(b for b in range(0x100) if not 0xE3 <= b <= 0xF4)


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of ``text``: 0.25 per ASCII character, 1.5 per character from U+3000 up
    (CJK and wider), 1.0 per other character, rounded up; 0 for "" and at least 1 otherwise.

    The weights come from measuring o200k_base and cl100k_base (see the module docstring): English,
    code, CJK and mixed text land within 0.5x-3x of the o200k_base count (measured 0.7x-2.7x);
    Cyrillic and Indic text run higher, up to ~4x.
    """
    length = len(text)
    if length == 0:
        return 0
    if text.isascii():
        return max(1, math.ceil(length * WEIGHTS.ascii))
    # Lone surrogates cannot be encoded; dropping them counts each one as an "other" character.
    utf8 = text.encode("utf-8", "ignore")
    ascii_chars = len(utf8.translate(None, _DROP_ALL_BUT_ASCII))
    cjk_chars = len(utf8.translate(None, _DROP_ALL_BUT_CJK_LEADS))
    other_chars = length - ascii_chars - cjk_chars
    weighted = ascii_chars * WEIGHTS.ascii + cjk_chars * WEIGHTS.cjk + other_chars * WEIGHTS.other
    return max(1, math.ceil(weighted))
