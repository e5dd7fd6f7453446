"""Values of the ``rules`` extractor (``scoring/extract_rules/``): amounts and numbers (English and
Chinese), the object phrase cut out of a clause, slot strings, profile keys (``slug``) and profile hints.
Pure: standard library only, no state."""

# Chinese full-width punctuation (，。：！？) is what this module reads: it is not a typo for ASCII.
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from typing import Final

from scoring.extract_rules.records import _I, _Body, _Context, _Hit, _slot
from scoring.extraction import Dimension, Polarity, ProfileHint

# A profile key names an entry (schemas/profiles.py): short, from the words; the value at most 200 chars.
_MAX_PROFILE_KEY: Final = 64
_MAX_PROFILE_VALUE: Final = 200


# ---------------------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_CN_DIGITS: Final = {
    "零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
}  # fmt: skip
_CN_UNITS: Final = {"十": 10, "百": 100, "千": 1000}
_EN_NUMBERS: Final = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "a dozen": 12, "a couple of": 2, "a couple": 2,
}  # fmt: skip
_AMOUNT = re.compile(
    r"(?<![a-z\d.,])(?P<cur>[$€£¥￥]|(?:us|au|ca|hk|s)\$|rmb|usd|eur|gbp|cny)?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千万]*[十百千万][零〇一二两三四五六七八九]?)"
    r"\s?(?P<mult>k\b|m\b|w\b|thousand\b|grand\b|million\b|万|千)?"
    r"\s?(?P<unit>dollars?\b|bucks\b|usd\b|eur\b|euros?\b|pounds?\b|gbp\b|rmb\b|cny\b|yuan\b|元|块钱?|美元|美金|欧元|英镑|刀)?"
    r"(?![a-z\d])",  # "1e400", "8kids", "3D" are no amounts
    _I,
)
_AMOUNT_NEGATED = re.compile(r"(?:\bnot|n't|不是|并非|而非|而不是)\s*(?:about|around|exactly|even|just)?\s*$", _I)
_MULTIPLIERS: Final = {
    "k": 1e3,
    "thousand": 1e3,
    "grand": 1e3,
    "千": 1e3,
    "m": 1e6,
    "million": 1e6,
    "w": 1e4,
    "万": 1e4,
}
_NUMBER = (
    r"(?:\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen"
    r"|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|a\s+dozen|a\s+couple(?:\s+of)?)"
)
_ZH_NUMBER = r"(?:\d{1,3}|[一二两三四五六七八九十]{1,3})"


def _cn_number(s: str) -> int | None:
    """A Chinese numeral (五千, 一万五, 三千五, 十二) as an integer; a trailing digit after a unit is the
    next unit down, as it is said (三千五 = 3500)."""
    total = section = digit = 0
    last_unit = 1
    for ch in s:
        if ch in _CN_DIGITS:
            digit = _CN_DIGITS[ch]
        elif ch in _CN_UNITS:
            unit = _CN_UNITS[ch]
            section += (digit or (1 if unit == 10 else 0)) * unit
            digit, last_unit = 0, unit
        elif ch == "万":
            total += (section + digit) * 10_000
            section = digit = 0
            last_unit = 10_000
        else:
            return None
    if digit:
        section += digit * (last_unit // 10 if last_unit >= 100 else 1)
    value = total + section
    return value or None


def _number(s: str) -> int | None:
    """A small count: digits, an English number word or a Chinese numeral."""
    s = s.strip().lower()
    if s.isdigit():
        return int(s)
    if s in _EN_NUMBERS:
        return _EN_NUMBERS[s]
    s = re.sub(r"\s+", " ", s)
    return _EN_NUMBERS.get(s) or (_cn_number(s) if _CJK.search(s) else None)


def _plain(x: float) -> int | float:
    """An integer when the amount is whole (8000, not 8000.0: the slot compares JSON values)."""
    return int(x) if x == int(x) else round(x, 2)


def _amount(text: str, start: int = 0) -> tuple[int | float, bool] | None:
    """The first amount from ``start`` that is not negated ("not 5,000", 不是5000), and whether it is
    plainly money (a currency or a multiplier: "$2,500", "8k", "5000元", "五千块")."""
    for m in _AMOUNT.finditer(text, start):
        raw = m.group("num")
        if not raw or _AMOUNT_NEGATED.search(text, max(0, m.start() - 24), m.start()):
            continue
        if raw[0].isdigit():
            value = float(raw.replace(",", ""))
        else:
            cn = _cn_number(raw)
            if cn is None:
                continue
            value = float(cn)
        mult = (m.group("mult") or "").lower()
        value *= _MULTIPLIERS.get(mult, 1.0)
        if not 0 < value < 1e15:  # no amount anyone budgets, and past it a float loses the units
            continue
        money = bool(m.group("cur") or m.group("unit") or mult)
        return _plain(value), money
    return None


_PRONOUN_EN = re.compile(
    r"^(?:it|it's|its|this|that|that's|these|those|them|him|her|you|your|yours|u|ya|everything|anything"
    r"|something|nothing|all|one|ones|how|what|when|where|why|who|which|whatever|stuff|things|so|more|much"
    r"|too|a\s+lot|lots|the\s+(?:way|idea|fact|thought|same|most|best|rest)|such|here|there|again|back"
    r"|well|better|best|now|then|doing|being|having|getting|seeing|hearing|talking|chatting|sharing)\b",
    _I,
)
_YOU_EN = re.compile(r"\b(?:you|your|yours|yourself|yourselves|you're|u|ur|ya)\b", _I)
_PRONOUN_ZH = re.compile(r"^(?:你|您|他|她|它|这|那|大家|一切|所有|自己|死|上你|着你|吧|啊|呀|了|的)")
# What trails an object and is not part of it: punctuation, particles, filler adverbs, emoticons. Stripped
# from the end a piece at a time, looking only at the last characters: a search over the whole phrase for
# a pattern anchored at its end would cost the square of its length.
_TRAIL_CHARS = " \t\r\n!.,~…！。，～、"
_TRAIL_WORD = re.compile(
    r"(?:(?<![\s,])[\s,]+(?:a\s+lot|so\s+much|very\s+much|too|as\s+well|also|lately|these\s+days|nowadays"
    r"|right\s+now|now|anymore|for\s+now|at\s+the\s+moment|tbh|lol|haha+|really|honestly|though|in\s+general"
    r"|generally|more|the\s+most|most|best|all\s+the\s+time|please|pls|thanks|thank\s+you|ever|at\s+all"
    r"|whatsoever|either|anyway|btw|then|instead|for\s+sure|actually)|\s*[:;]-?[()DPp]"
    r"|一些|一点|一下|得很|极了|死了|而已|[了的啊呀哦嘛啦哈呢吧])$",
    _I,
)


def _trim(s: str) -> str:
    """``s`` without what trails it ("sushi a lot lol!" → "sushi", "寿司啊！" → "寿司")."""
    while True:
        t = s.rstrip(_TRAIL_CHARS)
        tail = t[-40:]
        m = _TRAIL_WORD.search(tail)
        if m:
            t = t[: len(t) - len(tail) + m.start()]
        if t == s:
            return s
        s = t


_CUT_PREFERENCE_EN = re.compile(
    r"(?<!\s)\s+(?:because|since|but|when|whenever|while|although|though|which|who|whom|unless|until|so\s+that"
    r"|so|as\s+long\s+as|except|especially|particularly|than|rather\s+than|instead\s+of|more\s+than|over"
    r"|compared\s+to|if|where|and\s+(?:it|that|this|they|he|she|i|we)|(?:and\s+)?it's)\b.*$",
    _I | re.DOTALL,
)
_CUT_GOAL_EN = re.compile(
    r"(?<!\s)\s+(?:because|since|but|so\s+that|so|although|though|which|unless|while|whereas"
    r"|and\s+(?:it|that|this|they|he|she)|(?:and\s+)?it's)\b.*$",
    _I | re.DOTALL,
)
_CUT_ZH = re.compile(
    r"(?:因为|由于|但是|不过|可是|所以|而且|而不是|而非|虽然|尽管|胜过|多过|比起|[，,;；]).*$", re.DOTALL
)


def _phrase(raw: str, fold: str, start: int, *, max_words: int, preference: bool = False) -> str | None:
    """The object phrase from ``start`` as written: cut at a subordinate clause, trailing adverbs and
    punctuation dropped; None when it is a pronoun or refers to the listener (nothing to remember), or
    too long to be a thing rather than a clause."""
    rest_fold = fold[start:].strip()
    offset = start + (len(fold[start:]) - len(fold[start:].lstrip()))
    if not rest_fold:
        return None
    cjk = bool(_CJK.match(rest_fold))
    cut = _CUT_ZH if cjk else (_CUT_PREFERENCE_EN if preference else _CUT_GOAL_EN)
    m = cut.search(rest_fold)
    end = m.start() if m else len(rest_fold)
    phrase_fold = _trim(rest_fold[:end]).strip()
    if not phrase_fold:
        return None
    if cjk or _CJK.search(phrase_fold[:2]):
        if _PRONOUN_ZH.match(phrase_fold) or len(phrase_fold) > 24:
            return None
    else:
        words = phrase_fold.split()
        if _PRONOUN_EN.match(phrase_fold) or _YOU_EN.search(phrase_fold) or len(words) > max_words:
            return None
        if words[-1].lower() in {"it", "this", "that", "them", "these", "those", "there", "a", "an", "the", "to"}:
            return None
    return raw[offset : offset + len(phrase_fold)]


def slug(text: str) -> str:
    """A profile key from words: ASCII letters and digits joined by ``-``, accents folded ("Café au lait" →
    ``cafe-au-lait``); words with no ASCII form (Chinese) get ``t-`` and a hash of the case-folded text.
    The same function as the language-model extractor's, so both meet in one profile entry."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = re.findall(r"[a-z0-9]+", ascii_text)
    key = "-".join(words)[:_MAX_PROFILE_KEY].strip("-")
    if key:
        return key
    normal = " ".join(unicodedata.normalize("NFC", text).split())
    return "t-" + hashlib.sha256(normal.casefold().encode()).hexdigest()[:16]


def _low(phrase: str) -> str:
    """A string slot value: NFC, blanks collapsed, lower case, articles dropped."""
    text = " ".join(unicodedata.normalize("NFC", phrase).split()).lower()
    return re.sub(r"^(?:a|an|the|my|our)\s+", "", text)


def _profile(dimension: Dimension, value: str, polarity: Polarity = "like", *, key: str | None = None) -> ProfileHint:
    """The profile entry a preference or goal observes: keyed by its words unless a key is given."""
    value = " ".join(value.split())[:_MAX_PROFILE_VALUE]
    return ProfileHint(dimension=dimension, key=key or slug(value), value=value, polarity=polarity)


def _budget_after(patterns: Sequence[re.Pattern[str]], b: _Body, ctx: _Context) -> list[_Hit]:
    """A budget named by one of ``patterns`` (each language has its own), its amount after the match. A
    budget named with no amount after it says only that it is not an amount named there ("my budget isn't
    5000, …"), so that a bare amount next is its value."""
    for pattern in patterns:
        m = pattern.match(b.fold)
        if m:
            ctx.numeric_slot = "budget"
            found = _amount(b.fold, m.end())
            if found:
                return [_slot("budget", found[0], b)]
            ctx.denied = bool(_AMOUNT.search(b.fold, m.end()))
            return []
    return []
