"""Records in the making of the ``rules`` extractor (``scoring/extract_rules/``): what one clause states
(``_Hit``), a clause as the patterns see it (``_Body``), what a message said so far (``_Context``), and the
confidence each kind of statement gets. Pure: standard library only, no state."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from scoring.extraction import ProfileHint, RecordType

# Confidence per kind of statement. An explicit slot statement names the attribute and a typed value, so
# it is the least likely to be misread; a prohibition is explicit and verbatim; preferences and decisions
# are explicit but their object is a free phrase cut out of the clause; goals are often tentative; a
# keyless fact ("I have a dog") is plain but says less about what the user wants, and a reported past
# event ("I just got back from Rome") is the loosest reading of all. A correction was said on purpose.
CONF_SLOT: Final = 0.9
CONF_PROHIBITION: Final = 0.85
CONF_LIMIT: Final = 0.8
CONF_PREFERENCE: Final = 0.75
CONF_DECISION: Final = 0.75
CONF_GOAL: Final = 0.7
CONF_FACT: Final = 0.7
CONF_EVENT: Final = 0.6
CORRECTION_BONUS: Final = 0.05


_I = re.IGNORECASE


# ---------------------------------------------------------------------------------------------------------
# Records in the making
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hit:
    """What one clause states: a record without its quote."""

    type: RecordType
    confidence: float
    key: str | None = None
    value: Any = None
    hard: bool = False
    profile: ProfileHint | None = None
    absorbable: bool = False  # a keyless fact that may serve as the reason of a constraint after it
    follows: bool = False  # a rule about "them"/"it": only as the continuation of the constraint before it


@dataclass(frozen=True)
class _Body:
    """A clause as the patterns see it: ``fold`` (apostrophes and quotes folded, for matching) and ``raw``
    (as written, for values), the same length; ``lead`` the filler stripped before it."""

    fold: str
    raw: str
    lead: str
    correction: bool


@dataclass
class _Context:
    """What a message said so far that a later clause of it may lean on: the numeric slot last named, and
    whether its value was only denied ("my budget isn't 5000, …"), so that a bare amount next is its value."""

    numeric_slot: str | None = None
    denied: bool = False


@dataclass
class _Clause:
    start: int  # first character of the statement in the text (after filler)
    end: int  # after its last character (closing punctuation excluded)
    body: _Body
    question: bool = False
    blocked: bool = False  # quoted, reported or masked: says nothing about the writer
    hits: tuple[_Hit, ...] = ()


_Matcher = Callable[[_Body, _Context], list[_Hit]]


# A budget stated as a prohibition ("must not cost more than", "can't spend over", 不能超过, 别超过) is one:
# hard, like every prohibition (docs/design.md §3.9); "my budget is 5,000" or "up to 500" is a soft limit.
_PROHIBITIVE = re.compile(
    r"\b(?:can'?t|cannot|can\s+not|must\s+not|mustn'?t|never|do\s+not|don'?t|may\s+not)\b|不能|不可以|不要|别|禁止|千万|绝不",
    _I,
)


def _slot(key: str, value: Any, b: _Body, type_: RecordType = "fact") -> _Hit:
    """A slot statement; a budget is a constraint, hard when it is said as a prohibition."""
    conf = min(1.0, CONF_SLOT + (CORRECTION_BONUS if b.correction else 0.0))
    if key == "budget":
        return _Hit("constraint", conf, key="budget", value=value, hard=bool(_PROHIBITIVE.search(b.fold)))
    return _Hit(type_, conf, key=key, value=value)


def _bonus(conf: float, b: _Body) -> float:
    """A confidence, raised for a correction (said on purpose)."""
    return min(1.0, conf + (CORRECTION_BONUS if b.correction else 0.0))


def _hard(b: _Body) -> _Hit:
    """A prohibition (or an obligation): a hard constraint."""
    return _Hit("constraint", _bonus(CONF_PROHIBITION, b), hard=True)


def _fact(b: _Body, conf: float) -> _Hit:
    """A keyless fact; it may be the reason of a constraint after it in its sentence."""
    return _Hit("fact", _bonus(conf, b), absorbable=True)
