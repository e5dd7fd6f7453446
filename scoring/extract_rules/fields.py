"""The two patterns of the ``rules`` extractor (``scoring/extract_rules/``) read in English and Chinese alike:
a labelled field ("Budget: 8000", 预算：5000) and a bare amount that corrects the numeric slot named earlier
in the message ("Actually, make it 8,000", 改成 8000). Pure: standard library only, no state."""

# Chinese full-width punctuation (，。：！？) is what this module reads: it is not a typo for ASCII.
# ruff: noqa: RUF002, RUF003

from __future__ import annotations

import re
from typing import Any

from scoring.extract_rules.chinese_slots import _BARE_AMOUNT_ZH, _CHANGE_VERB_ZH
from scoring.extract_rules.english_slots import _BARE_AMOUNT_EN, _CHANGE_VERB_EN, _languages, _name
from scoring.extract_rules.records import _I, _Body, _Context, _Hit, _slot
from scoring.extract_rules.values import _NUMBER, _PRONOUN_EN, _ZH_NUMBER, _amount, _low, _number, _trim
from scoring.extract_rules.vocabulary import _DIETS, _LABELLED, _LABELS


def _labelled(b: _Body, ctx: _Context) -> list[_Hit]:
    """A labelled field: "Budget: 8,000", "Diet: vegan", "Location: Berlin", "Name: Sam", 预算：5000."""
    m = _LABELLED.match(b.fold)
    if not m:
        return []
    key = _LABELS[re.sub(r"\s+", " ", m.group("label").lower())]
    raw = b.raw[m.start("v") :]
    value: Any = None
    if key == "budget":
        ctx.numeric_slot = "budget"
        found = _amount(b.fold, m.start("v"))
        value = found[0] if found else None
    elif key in ("age", "team_size"):
        ctx.numeric_slot = key
        n = re.match(r"\s*(" + _NUMBER + r"|" + _ZH_NUMBER + r")\b", m.group("v"), _I)
        value = _number(n.group(1)) if n else None
    elif key == "diet":
        value = _DIETS.get(" ".join(m.group("v").lower().split()))
    elif key == "language":
        value = _languages(m.group("v"))
    elif key == "name":
        value = (_name(raw, capitalised=False) or "").lower() or None
    else:
        phrase = _trim(raw.strip()).strip()
        value = _low(phrase) if phrase and len(phrase) <= 60 and not _PRONOUN_EN.match(phrase) else None
    return [_slot(key, value, b)] if value is not None else []


def _bare_amount(b: _Body, ctx: _Context) -> list[_Hit]:
    """A bare amount that corrects the numeric slot named earlier in the message: "Actually, make it
    8,000", "No — 8k", "改成 8000". Without such a slot there is nothing to say what the number is."""
    if ctx.numeric_slot is None:
        return []
    m = _BARE_AMOUNT_EN.match(b.fold) or _BARE_AMOUNT_ZH.match(b.fold)
    if not m:
        return []
    said_change = b.correction or _CHANGE_VERB_EN.search(b.fold) or _CHANGE_VERB_ZH.search(b.fold)
    said_change = said_change or ctx.denied or re.search(r"\b(?:but|rather|instead)\b|而是", b.lead, _I)
    found = _amount(m.group("amount"))
    if not said_change or not found:
        return []
    ctx.denied = False
    value = found[0] if ctx.numeric_slot == "budget" else int(found[0])
    return [_slot(ctx.numeric_slot, value, b)]
