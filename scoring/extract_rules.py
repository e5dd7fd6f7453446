"""The ``rules`` extractor (docs/design.md §3.9): the records one user message states about its writer, by
deterministic patterns, in English and Chinese. Pure: standard library only, no I/O, no state.

``extract(text)`` reads one ``user`` message and proposes ``Proposal`` records (``scoring/extraction.py``
checks them before anything is stored). How a message is read:

1. **Masked text.** Code (fenced and inline), quoted lines (``> …``), the lines of a pasted dialogue
   ("Sarah: …", "Assistant: …"; not headers such as "Budget: …" or "Note: …") and text inside double
   quotation marks ("…", “…”, 「…」, 『…』) are someone else's words or not words at all: nothing
   anchored there is extracted. Code and those lines are blanked before splitting; quotations only block a
   statement that starts inside them.
2. **Sentences and clauses.** A sentence ends at ``. ! ? 。 ！ ？ ; ；``, an ellipsis or a newline; a clause
   at a comma, colon or dash, and before "and/but/so/because … I/we/my/our". A clause that only says
   "No," / "Actually," / "不对，" marks the next clause as a correction.
3. **Filters** (precision before recall: an invented memory is the worst failure):
   - a *hypothetical* sentence (if, suppose, imagine, what if, wish, for example, 如果, 假如, 要是, 假设,
     比如…) yields nothing; hedges ("if possible", 可以的话) and concessives ("even if") are not
     hypotheses. A condition on the assistant ("If you recommend something, don't pick Redis") keeps the
     sentence's *constraints* only: a rule about what the assistant does is meant whatever it recommends;
   - a *question* clause yields nothing: it ends with ``?``/``？``, opens with an inverted auxiliary or a
     wh-word ("do you…", "should I…", "what's my…"), ends with 吗/嘛/么, holds an A-not-A form
     (是不是, 要不要…) or a Chinese question word; a sentence ending in ``?`` whose first clause is a
     question or whose last is a tag ("…, right?", 对吧) is a question throughout;
   - *reported* speech and hearsay yield nothing: the clauses after a frame such as "he said," / "the docs
     say:" / "Translate this:" / "according to …," / "apparently," / 他说， / 据说， and a sentence that
     ends with one ("…, my boss said");
   - every pattern is *anchored* at the start of its clause (after filler such as "Oh," / "So" / 嗯):
     the subject is I/we/我/我们, "my/our <attribute>", "let's", a thing required ("The laptop must weigh
     at most 1.5 kg", 接口不能返回空值), or none (an imperative). So "my friend
     hates cats", "he wants…", "people like sushi", "Redis is fast", 我朋友讨厌猫 match nothing, and
     neither does a negated fact ("I'm not vegetarian", 我不是素食者): a positive pattern never admits a
     negation between its subject and its verb.
4. **Patterns**, tried in order, the first that matches a clause wins: labelled fields ("Budget: 8000"),
   budget, limits, a corrected amount, slot facts, preferences, constraints, decisions, goals, other
   facts. A slot fact (``SLOTS``) gets its ``key`` and a typed
   ``value`` (a number, or a lower-case string), so that a later statement of the slot supersedes the
   earlier one by the conflict rules (§3.2); within one message the last statement of a slot is the one
   proposed. "not X but Y" / 不是X而是Y is read as Y; a bare amount after a correction ("Actually, make
   it 8,000", 改成 8000) takes the numeric slot named earlier in the same message.
5. **Constraint context.** A constraint's quote spans the clauses before it in its sentence that state
   nothing else (its reason: "We have a small ops team, so don't recommend …") and the constraint
   clauses that follow it: one constraint per run, hard if any part is a prohibition.

Every quote is a span of ``text`` (trimmed of surrounding blanks, leading filler and closing punctuation).
Everything here is general English and Chinese usage; no rule names a particular conversation.
"""

# Chinese full-width punctuation (，。：！？) is what this module reads: it is not a typo for ASCII.
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Final

from scoring.extract_lexicon import (
    ACTIVITY_VERBS_ZH,
    EVENT_VERBS_ZH,
    HABIT_PAST_ZH,
    NOT_ACTIVITY_EN,
    NOT_EVENT_VERBS_EN,
    OPENER_EN,
    OPENER_ZH,
    PARTICIPLE_IRREGULAR_EN,
    PAST_IRREGULAR_EN,
    QUALITY_NOUNS_EN,
    TIME_LEAD_EN,
    TIME_LEAD_ZH,
)
from scoring.extraction import MAX_QUOTE_CHARS, Dimension, Polarity, ProfileHint, Proposal, RecordType

VERSION: Final = "rules/1"

SLOTS: Final[dict[str, str]] = {
    "budget": "how much the user means to spend: a number (8,000 / 8k / $2,500 / 5000元 / 五千 → 8000 …)",
    "location": "where the user lives now (I live in / I moved to / 我住在): a lower-case place",
    "hometown": "where the user comes from (I'm from / I grew up in / 我是…人 / 我来自): a lower-case place",
    "diet": "the user's diet: vegetarian, vegan, pescatarian, halal, kosher, keto, paleo, gluten-free …",
    "role": "the user's occupation (I'm a nurse / I work as / 我是程序员): a lower-case phrase",
    "employer": "who the user works for (I work at / for …): a lower-case name",
    "name": "what the user is called (my name is / call me / 我叫): a lower-case name",
    "language": "the language(s) the user speaks or wants answers in: lower-case English names",
    "team_size": "how many people are in the user's team: a number",
    "timezone": "the user's time zone (UTC+8, PST, pacific time, 东八区): a lower-case string",
    "age": "the user's age in years: a number",
}

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

# A profile key names an entry (schemas/profiles.py): short, from the words; the value at most 200 chars.
_MAX_PROFILE_KEY: Final = 64
_MAX_PROFILE_VALUE: Final = 200

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


# ---------------------------------------------------------------------------------------------------------
# Masking, sentences, clauses
# ---------------------------------------------------------------------------------------------------------

# Curly apostrophes and quotes fold to straight ones, one character for one, so offsets stay valid.
_FOLD = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "＇": "'", "“": '"', "”": '"', "＂": '"'})

_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_QUOTED_LINE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
# A pasted dialogue's line ("Sarah: I love hiking", "Assistant: …") is someone else's: a name or a role
# before a colon at the start of a line. Headers the user writes about themselves ("Budget: 8000",
# "Note: …", "Requirements: …") are not speakers.
_SPEAKER_LINE = re.compile(
    r"^[ \t]*(?P<label>(?:assistant|ai|bot|chatgpt|gpt|claude|gemini|copilot|system|agent|model|he|she|they"
    r"|interviewer|customer|support)|[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)[ \t]*[:：].*$",
    re.MULTILINE,
)
_HEADER = re.compile(
    r"(?:budget|name|location|diet|role|goals?|notes?|update|edit|ps|fyi|btw|reminder|context|background|info"
    r"|important|correction|requirements?|constraints?|preferences?|summary|question|answer|me|i|also|tldr"
    r"|deadline|timezone|age|language|team|stack|plan|decision|todo|re|subject|status|example|about\s+me"
    r"|warning|caveat|rules?|hint|tip|update\s+\d+|edit\s+\d+)",
    _I,
)
_QUOTATION = re.compile(r'"[^"\n]*"|“[^”]*”|「[^」]*」|『[^』]*』')

_SENTENCE_END = re.compile(r"\n+|[。！？；;!?…]+|\.{2,}|\.(?=\s|$)")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|mr|mrs|ms|dr|prof|vs|st|approx|no|inc|ltd|jr|sr)|\b[a-z])$", _I)

_CLAUSE_SEP = re.compile(
    r"(?<!\d),|,(?!\d)|[，；;:：]|\s[-–—]{1,2}\s|[–—]{1,2}|\s\(|\)"
    r"|(?<!\s)\s+(?=(?:and|but|so|because|though|although|while|whereas|or)\s+"
    r"(?:i|we|i'm|i've|i'd|i'll|we're|we've|we'd|we'll|my|our|let's)\b)",
    _I,
)

_BULLET = re.compile(r"(?:[-*•·+]+|\d{1,2}[.)])\s+")
# Patterns matched from a position inside a string (``pattern.match(s, pos)``, here and below) do not
# start with ``^``, which would only match at the string's start.
#
# Filler before a statement. The first kind goes whether or not punctuation follows ("So I live…"); the
# second only before punctuation, for it also opens statements of its own ("No Redis", "Right-sized…").
_FILLER_EN = re.compile(
    r"(?:(?:oh|ah|aw+|well|yeah|yes|yep|yup|ok|okay|so|and|but|also|plus|honestly|frankly|personally"
    r"|basically|anyway|anyways|btw|fyi|by\s+the\s+way|just\s+so\s+you\s+know|for\s+the\s+record"
    r"|to\s+be\s+honest|tbh|hey|hi|hello|um+|uh+|hmm+|lol|haha+|now|alright|then|however|still|besides|just"
    r"|and\s+also|oh\s+and|actually|in\s+fact|sorry|oops|i\s+mean|i\s+meant|scratch\s+that|to\s+clarify"
    r"|on\s+second\s+thought|remember(?:\s+that)?|keep\s+in\s+mind(?:\s+that)?|(?:please\s+)?note\s+that"
    r"|for\s+context|don't\s+forget(?:\s+that)?|as\s+i\s+(?:said|mentioned)|like\s+i\s+said|you\s+know)\b[\s,.!:;-]*"
    r"|(?:no|nope|nah|not\s+quite|wrong|right|sure|rather|instead|wait|correction|update|note|edit|ps|p\.s\.)"
    r"(?:\s*[,.!:;-]+\s*|\s+-+\s+|\s*$))+",
    _I,
)
_FILLER_ZH = re.compile(
    r"(?:(?:嗯+|哦+|噢|喔|啊+|呃|额|唉|哈+|对了|另外|还有|而且|并且|但是|不过|可是|所以|因此|因为|那么|好的|好吧|其实|"
    r"实际上|事实上|说实话|老实说|说真的|顺便说一下|顺便提一下|顺便|现在|目前|最近|平时|总之|反正|然后|是的|没错|嗯嗯|"
    r"也就是说|更正一下|更正|纠正一下|纠正|不对|说错了|我是说|我的意思是|改一下|哦不|抱歉|不好意思|请记住|记住|记得|"
    r"别忘了|提醒一下|跟你说一下|告诉你)[\s，,、。!！~～]*"
    r"|(?:对|好|行|但|不是|不|那|是)(?:[\s，,、。!！~～]+|$))+"
)
# Words in the stripped lead (or a clause of their own) that make what follows a correction.
_CORRECTION = re.compile(
    r"\b(?:actually|in\s+fact|correction|sorry|oops|wait|i\s+mean|i\s+meant|scratch\s+that|rather"
    r"|to\s+clarify|on\s+second\s+thought|instead|no|nope|nah|not\s+quite|wrong|update)\b"
    r"|其实|实际上|事实上|更正|纠正|不对|说错了|我是说|我的意思是|改一下|哦不|不是",
    _I,
)
# A frame that opens the writer's own news ("wanted to let you know I…", "I'm happy to say we…", 跟你说，我…):
# filler, but only before a first-person statement.
_OPENER = re.compile(
    r"(?:" + OPENER_EN + r")[\s,.!:;-]*(?=(?:i|we|my|our|me)\b)|(?:" + OPENER_ZH + r")[\s，,、。!！~～：:]*(?=我)", _I
)
# A time before the subject ("Yesterday I…", "Last week we…", 上周我…): kept in the quote, which it dates, and
# skipped by the patterns, which read the statement after it.
_TIME_LEAD = re.compile(
    r"(?:" + TIME_LEAD_EN + r")\s*,?\s*(?=(?:i|we|i'm|i've|we're|we've|my\s+[\w'-]+\s+and\s+i|me\s+and)\b)"
    r"|" + TIME_LEAD_ZH + r"[，,]?\s*(?=我)",
    _I,
)
# A subject of several people that includes the writer ("my wife and I", "me and my kids", 我和我老婆): read
# as "we" / 我们. A name before "and I" is capitalised.
_WE_SUBJECT_EN = re.compile(
    r"^(?:(?:my|our)\s+(?:[\w'-]+\s+){0,2}?[\w'-]+\s+and\s+(?:i|me)|me\s+and\s+(?:my|our|the)\s+(?:[\w'-]+\s+)??[\w'-]+"
    r"|i\s+and\s+(?:my|our)\s+[\w'-]+)(?=\s+[a-z])",
    _I,
)
_WE_SUBJECT_NAME = re.compile(r"^[A-Z][a-z]+\s+and\s+(?:I|me)(?=\s+[a-z])")
# A first person left out, as chat does ("Love experimenting with spices", "Just got some new shoes", "Been
# painting a lot"): read with the subject it implies. A past form needs "just"/"recently"/"finally" (a bare
# "Got it" / "Made my day" is no report), a liking names its object.
_ELLIDED_EN = re.compile(
    r"^(?:(?P<like>(?:really\s+|absolutely\s+|totally\s+)?(?:love|adore|enjoy)\s+(?!(?:you|your|it|that|this|them|ya|u|the|and|or|is|was)\b))"
    r"|(?P<past>(?:just|recently|finally)\s+(?!(?:" + NOT_EVENT_VERBS_EN + r")\b)"
    r"(?:[a-z]+[^e\W]ed|" + PAST_IRREGULAR_EN + r")\s)"
    r"|(?P<been>(?:always\s+|recently\s+|also\s+)?been\s+(?:[a-z]+ing|into|interested|passionate|a\s+fan)\b)"
    r"|(?P<ing>(?:planning|hoping|aiming|saving\s+up)\s+(?:to|on|for)\b))",
    _I,
)

# "not X but Y" / 不是X而是Y: the clause is read as if it said Y.
_NOT_BUT_EN = re.compile(r"\bnot\s+(?!only\b)(?:\S+\s+){0,5}?\S+\s*,?\s*but\s+(?:rather\s+)?(?=\S)", _I)
_NOT_BUT_ZH = re.compile(r"不是[^，,。]{1,20}?[，,]?\s*而是")
_BUT_CONTINUES = re.compile(
    r"\s*(?:but\s+(?!(?:i|we|my|our|it|he|she|they|you|that|this|there|let's)\b|i'|we')|而是)", _I
)


def _masked(fold: str) -> tuple[str, list[tuple[int, int]]]:
    """The text with code, quoted lines and dialogue lines blanked (same length), and the spans of
    quotations."""
    work = list(fold)
    spans = [m.span() for m in _CODE.finditer(fold)] + [m.span() for m in _QUOTED_LINE.finditer(fold)]
    spans += [m.span() for m in _SPEAKER_LINE.finditer(fold) if not _HEADER.fullmatch(m.group("label"))]
    for start, end in spans:
        for i in range(start, end):
            if work[i] != "\n":
                work[i] = " "
    blanked = "".join(work)
    quotes = [(m.start(), m.end()) for m in _QUOTATION.finditer(blanked)]
    return blanked, quotes


def _sentences(work: str) -> Iterator[tuple[int, int]]:
    """Sentence spans, each with its closing punctuation. A period ends a sentence before a blank or the
    end, unless it closes an abbreviation or an initial ("e.g.", "Dr.", "J.")."""
    start = 0
    for m in _SENTENCE_END.finditer(work):
        if m.group() == "." and _ABBREVIATION.search(work, max(0, m.start() - 8), m.start()):
            continue
        if work[start : m.start()].strip():
            yield start, m.end()
        start = m.end()
    if work[start:].strip():
        yield start, len(work)


def _pieces(work: str, start: int, end: int) -> list[tuple[int, int]]:
    """A sentence cut at clause separators; kept whole: "not X, but Y", a labelled field, and a comma
    inside a phrase ("a safe, inclusive space", "sushi, ramen and pizza")."""
    spans: list[tuple[int, int]] = []
    commas: list[bool] = []  # whether the span after each cut follows a plain comma
    pos = start
    for m in _CLAUSE_SEP.finditer(work, start, end):
        spans.append((pos, m.start()))
        commas.append(m.group().strip() == ",")
        pos = m.end()
    spans.append((pos, end))
    merged: list[tuple[int, int]] = []
    for i, (s, e) in enumerate(spans):
        piece = work[s:e]
        listed = _LIST_GOES_ON.match(piece) or not _FILLER_EN.match(piece.lstrip())
        inside = i > 0 and commas[i - 1] and _PHRASE_GOES_ON.match(piece) and listed
        if merged and (inside or _continues(work[merged[-1][0] : merged[-1][1]], piece)):
            merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
    return merged


# After a comma, a lower-case word that cannot open a clause continues the phrase before it.
_PHRASE_GOES_ON = re.compile(
    r"\s*(?:(?:and|or)\s+)?(?![a-z]+'[a-z]+\b)(?!(?:i|we|you|he|she|they|it|my|our|your|his|her|their|this|that|these|those|there"
    r"|so|but|and|or|nor|because|since|though|although|while|when|whenever|if|unless|until|then|also|plus"
    r"|especially|except|not|no|never|please|let|lets|what|how|why|where|who|which|whose|can|could|would|should"
    r"|will|shall|may|might|must|do|does|did|is|are|am|was|were|have|has|had|thanks|thank|right|avoid|stop"
    r"|make|keep|use|give|tell|show|call|just|only|maybe|perhaps|probably|otherwise|instead|rather|as|like|for"
    r"|to|which|yet|still|even|anyway|alright|sure|yes|yeah|ok|okay|lol|haha|hmm|um|uh|oh|ah|wow|btw|fyi|tbh"
    r"|imo|imho|plus|too|either|neither|both|all|each|every|some|any|most|many|much|more|less|same|such|other"
    r"|another|one|two|three|four|five|six|seven|eight|nine|ten|at|in|on|by|with|from|about|after|before"
    r"|around|over|under|up|down|out|off|again|now|today|tomorrow|yesterday|here|ever|always|often|usually"
    r"|sometimes|mostly|mainly|largely|partly|generally|typically|ideally|preferably|honestly|personally"
    r"|definitely|basically|actually|really|however|though|whatever|whichever|except|wanted|needed|guess"
    r"|thought)\b)[a-z]",
)
# ", and awesome food" closes a list ("the energy, diversity, and awesome food of this city").
_LIST_GOES_ON = re.compile(
    r"\s*(?:and|or)\s+(?!(?:i|we|you|he|she|they|it|my|our|your|so|then|also|now|not|no)\b)[a-z]"
)
# The first half of a subject of several people, cut before its "and I" / "and my …".
_SUBJECT_PART = re.compile(
    r"(?:(?:so|and|but|oh|well|also|then|now|yesterday|today|recently|just)\s+)*(?:(?:my|our)\s+(?:[\w'-]+\s+){0,2}?[\w'-]+|me)",
    _I,
)
_AND_ME = re.compile(r"\s*and\s+(?:i|me|my|our)\b", _I)
_NEGATION = re.compile(r"\bnot\b|n't\b|不是", _I)
_DECIDED_END = re.compile(r"(?:定了|决定了)\s*$")
_ENDS_QUESTION = re.compile(r"[?？][\s\"'”」』)）]*$")
_QUESTION_MARK = re.compile(r"[?？]")
_COLON_NEXT = re.compile(r"\s*[:：]")


def _continues(before: str, piece: str) -> bool:
    """Whether ``piece`` completes the clause before it: "not X, but Y" / 不是X，而是Y, 定了，用X, and a
    slot's label ("Budget: 8000")."""
    if _BUT_CONTINUES.match(piece) and _NEGATION.search(before):
        return True
    if _AND_ME.match(piece) and _SUBJECT_PART.fullmatch(before.strip()):
        return True  # "my wife | and I …", "me | and my kids …": one subject
    return bool(_DECIDED_END.search(before) or _LABEL.fullmatch(before.strip()))


def _strip_lead(work: str, s: int, e: int) -> tuple[int, int, str]:
    """The span without blanks, bullets, filler and closing punctuation, and the filler removed."""
    while s < e and work[s].isspace():
        s += 1
    m = _BULLET.match(work, s, e)
    if m:
        s = m.end()
    lead_start = s
    moved = True
    while moved:
        moved = False
        for pattern in (_FILLER_EN, _FILLER_ZH, _OPENER):
            m = pattern.match(work, s, e)
            if m and m.end() > s:
                s, moved = m.end(), True
    lead = work[lead_start:s]
    while e > s and (work[e - 1].isspace() or work[e - 1] in ".,;:!?。，；：！？、…~～\"'）)」』"):
        e -= 1
    return s, e, lead


# ---------------------------------------------------------------------------------------------------------
# Mood: hypotheses, questions, reported speech
# ---------------------------------------------------------------------------------------------------------

_HEDGE = re.compile(
    r"\b(?:if\s+(?:possible|you\s+can|you\s+could|you\s+don't\s+mind|you\s+like|you\s+want|you\s+please"
    r"|that's\s+ok(?:ay)?|that\s+works|needed|necessary|any|so)|even\s+if)\b"
    r"|如果可以的话|如果可以|可以的话|如果可能的话|如果可能|可能的话|方便的话|如果方便|就算|即使|哪怕",
    _I,
)
_HYPOTHESIS = re.compile(
    r"\b(?:if|suppose|supposing|imagine|imagining|assuming|assume|hypothetically|in\s+theory"
    r"|let's\s+say|let\s+us\s+say|pretend|as\s+if|as\s+though|wish|for\s+example|for\s+instance"
    r"|e\.g|say\s+(?:i|we)\s+(?:had|have|were|was|wanted|lived|moved|went))\b"
    r"|(?:^|,\s*)(?:were|had)\s+(?:i|we)\b"
    r"|如果|假如|要是|假设|假使|倘若|万一|若是|如若|设想|想象一下|想像一下|假定|比如|例如|譬如|的话|要不是",
    _I,
)
# A condition on what the assistant does: the user's rules under it still stand.
_YOU_CONDITION = re.compile(
    r"\bif\s+you\b|如果你|如果您|要是你|假如你|你要是|你如果|当你",
    _I,
)
_INVERTED = re.compile(
    r"^(?:do|does|did|can|could|should|would|will|shall|is|are|am|was|were|have|has|had|may|might|must"
    r"|don't|doesn't|didn't|can't|couldn't|won't|wouldn't|shouldn't|isn't|aren't|wasn't|weren't|haven't"
    r"|hasn't)\s+(?:i|we|you|he|she|they|it|my|our|your|his|her|their|the|this|that|these|those|there"
    r"|anyone|anybody|someone|somebody|people|u|ya)\b",
    _I,
)
_WH = re.compile(
    r"^(?:what|where|when|why|how|who|whom|which|whose)(?:'s|'re|'d|\s+(?:is|are|was|were|do|does|did|can"
    r"|could|should|would|will|am|have|has|about|if|kind|type|sort|much|many|long|often|else|exactly))\b",
    _I,
)
_TAG = re.compile(
    r"^(?:right|correct|yes|yeah|no|true|isn't\s+it|aren't\s+i|don't\s+i|didn't\s+i|am\s+i\s+right"
    r"|对吧|是吧|对不对|是不是|没错吧|对吗|是吗)$",
    _I,
)
_ZH_QUESTION = re.compile(
    r"[吗嘛么][啊呀~～]*$|是不是|要不要|能不能|可不可以|会不会|有没有|用不用|好不好|行不行|对不对|该不该|应不应该|"
    r"喜不喜欢|想不想|需不需要|是否|什么|怎么|为什么|为啥|哪里|哪儿|哪个|哪些|谁|多少|如何|咋|啥"
)
_FRAME_VERB = re.compile(
    r"\b(?:said|says|say|told|tells|tell|asked|asks|wrote|writes|thinks|thought|believes|believed|mentioned"
    r"|mentions|claims|claimed|according\s+to|suggested|suggests|recommended|recommends|insisted|insists"
    r"|warned|warns|replied|replies|added|goes|went\s+like|was\s+like|is\s+like|texted|posted|tweeted"
    r"|announced|explained|argued|noted|stated|reckons|translate|summari[sz]e|rewrite|paraphrase"
    r"|proofread|reword|repeat|quote|spell-check|spellcheck)\b"
    r"|说道|说过|说了|说|表示|认为|觉得|提到|告诉我们|告诉我|写道|建议|问道|问|翻译|总结|改写|润色|据说|听说",
    _I,
)
_FIRST_PERSON_START = re.compile(r"^(?:i|we|i'm|i've|i'd|i'll|we're|we've|we'd|we'll)\b|^我", _I)
# Hearsay and sources: what follows is someone else's claim, not the writer's statement.
_FRAME_START = re.compile(
    r"^(?:according\s+to|per\s+the|as\s+(?:\w+\s+){1,3}(?:says?|said|puts\s+it)|apparently|reportedly|supposedly"
    r"|allegedly|rumou?r\s+has\s+it|they\s+say|people\s+say|i\s+(?:heard|read)|i've\s+(?:heard|read))\b"
    r"|^(?:根据|据说|据|按照|照|听说|网上说|听人说)",
    _I,
)
_FRAME_AT_END = re.compile(
    r"(?:\b(?:said|says|say|told\s+(?:me|us)|tells\s+(?:me|us)|wrote|writes|thinks|believes|mentioned"
    r"|claims|claimed|insisted|insists|warned|warns|replied|replies|added|goes|was\s+like|is\s+like)"
    r"|说道|说过|说了|说|表示|认为|提到|告诉我们|告诉我|写道|问道|问)$",
    _I,
)


# A frame that introduces the writer's own words, not someone else's.
_OWN_NEWS = re.compile(
    r"(?:i\s+)?(?:have\s+to|must|gotta|got\s+to|should)\s+say|let\s+me\s+(?:tell\s+you|say)|i\s+can\s+say"
    r"|(?:我)?(?:想|要|得)?(?:跟你|和你|给你|跟你们)(?:说|讲)(?:一下|一声)?|我(?:想|要|得)说",
    _I,
)


def _mood(sentence: str) -> str:
    """``real``; ``assistant_condition`` when every hypothesis is a condition on the assistant ("If you
    recommend something, …": only its constraints stand); else ``hypothetical`` (nothing stands)."""
    text = _HEDGE.sub(lambda m: " " * len(m.group()), sentence)
    hypotheses = [m.span() for m in _HYPOTHESIS.finditer(text)]
    if not hypotheses:
        return "real"
    on_you = [m.span() for m in _YOU_CONDITION.finditer(text)]
    if all(any(s <= hs < e for s, e in on_you) for hs, _ in hypotheses):
        return "assistant_condition"
    return "hypothetical"


def _is_question(body: str, ends_q: bool) -> bool:
    """A clause that asks: a question mark, an inverted auxiliary or wh-opening, 吗/嘛, A-not-A, 什么…"""
    if ends_q or _INVERTED.match(body) or _WH.match(body):
        return True
    return bool(_CJK.search(body) and _ZH_QUESTION.search(body))


def _is_frame(body: str) -> bool:
    """A clause that introduces someone else's words: "he said," / "the docs say:" / "according to the
    docs," / 他说， / 据说，."""
    if _FRAME_START.match(body):
        return True
    if _OWN_NEWS.fullmatch(body):
        return False  # "I have to say," / 跟你说，: the writer's own words follow
    return bool(_FRAME_AT_END.search(body)) and not _FIRST_PERSON_START.match(body)


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
_YOU_EN = re.compile(r"\b(?:you|your|yours|you're|u|ur|ya)\b", _I)
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


# ---------------------------------------------------------------------------------------------------------
# Shared vocabularies
# ---------------------------------------------------------------------------------------------------------

_ADV_EN = (
    r"(?:(?:really|absolutely|just|also|totally|kind\s+of|kinda|sort\s+of|do|still|definitely|genuinely"
    r"|especially|truly|personally|honestly|generally|usually|always|mostly|both|all|too|actually|seriously"
    r"|simply|quite|rather|particularly|now|currently|already|so|certainly|strongly|even|mainly|only"
    r"|pretty\s+much|basically|obviously|clearly|originally|finally|recently|officially|happily|proudly)\s+){0,3}"
)
_SUBJ = r"(?:i|we)"
_BE = r"(?:i\s+am|i'm|im|we\s+are|we're)"
# The subject and its adverbs; a contraction ("I'm", "I'd", "we've") follows the subject directly.
_SUBJ_ADV_EN = _SUBJ + r"(?:\s+|(?='))" + _ADV_EN
_ZH_SUBJ = r"(?:我们|咱们|我)"
_ZH_ADV = (
    r"(?:(?:也都|都|也|还是|还|一直|真的|确实|特别|非常|很|最近|最|比较|更加|更|超级|超|挺|蛮|平时|一般|现在|目前|"
    r"其实|本来|向来|从来都|从来|总是|基本上|主要|只|就|已经|真|太|十分|相当|尤其|一向|始终|通常|本身|自己|刚刚|刚|"
    r"今年|个人|是)){0,4}"
)

_DIETS: Final = {
    "vegetarian": "vegetarian", "vegan": "vegan", "pescatarian": "pescatarian", "pescetarian": "pescatarian",
    "halal": "halal", "kosher": "kosher", "keto": "keto", "paleo": "paleo", "gluten-free": "gluten-free",
    "gluten free": "gluten-free", "dairy-free": "dairy-free", "dairy free": "dairy-free",
    "lactose intolerant": "lactose-free", "lactose-intolerant": "lactose-free", "celiac": "gluten-free",
    "coeliac": "gluten-free", "plant-based": "vegan", "plant based": "vegan",
    "素食者": "vegetarian", "素食主义者": "vegetarian", "吃素的": "vegetarian", "吃素": "vegetarian",
    "素食": "vegetarian", "纯素食者": "vegan", "纯素主义者": "vegan", "纯素": "vegan", "清真": "halal",
    "吃清真": "halal", "穆斯林": "halal",
}  # fmt: skip
# A diet word that names the writer's diet, not a thing ("a vegan chef", "a vegetarian restaurant").
_DIET_EN = (
    r"(?P<diet>vegetarian|vegan|pescatarian|pescetarian|halal|kosher|keto|paleo|gluten[- ]free|dairy[- ]free"
    r"|lactose[- ]intolerant|celiac|coeliac|plant[- ]based)(?![\w-]|\s+(?:restaurants?|recipes?|cookbooks?"
    r"|dish(?:es)?|meals?|options?|blog(?:ger)?|chefs?|cooks?|cooking|places?|caf[eé]s?|menus?|friendly|products?"
    r"|brands?|company|business|shop|store|bakery|influencer|activist))"
)

_LANGUAGES: Final = {
    "english": "english", "chinese": "chinese", "mandarin": "mandarin", "cantonese": "cantonese",
    "spanish": "spanish", "french": "french", "german": "german", "japanese": "japanese", "korean": "korean",
    "portuguese": "portuguese", "italian": "italian", "russian": "russian", "arabic": "arabic",
    "hindi": "hindi", "dutch": "dutch", "swedish": "swedish", "norwegian": "norwegian", "danish": "danish",
    "finnish": "finnish", "polish": "polish", "turkish": "turkish", "greek": "greek", "hebrew": "hebrew",
    "vietnamese": "vietnamese", "thai": "thai", "indonesian": "indonesian", "malay": "malay",
    "ukrainian": "ukrainian", "czech": "czech", "hungarian": "hungarian", "romanian": "romanian",
    "persian": "persian", "farsi": "persian", "urdu": "urdu", "bengali": "bengali", "tamil": "tamil",
    "tagalog": "tagalog", "swahili": "swahili",
    "中文": "chinese", "汉语": "chinese", "普通话": "mandarin", "国语": "mandarin", "粤语": "cantonese",
    "广东话": "cantonese", "英语": "english", "英文": "english", "日语": "japanese", "日文": "japanese",
    "韩语": "korean", "韩文": "korean", "法语": "french", "德语": "german", "西班牙语": "spanish",
    "俄语": "russian", "葡萄牙语": "portuguese", "意大利语": "italian", "阿拉伯语": "arabic",
}  # fmt: skip
_LANGUAGE_EN = "|".join(sorted((k for k in _LANGUAGES if k.isascii()), key=len, reverse=True))
_LANGUAGE_ZH = "|".join(sorted((k for k in _LANGUAGES if not k.isascii()), key=len, reverse=True))

_OCCUPATIONS_EN = (
    r"engineer|developer|programmer|coder|designer|teacher|professor|lecturer|student|nurse|doctor|physician"
    r"|surgeon|dentist|pharmacist|therapist|counsell?or|psychologist|psychiatrist|lawyer|attorney|accountant"
    r"|analyst|scientist|researcher|consultant|manager|architect|writer|author|journalist|editor|artist"
    r"|painter|musician|photographer|chef|cook|baker|farmer|pilot|driver|mechanic|electrician|plumber"
    r"|carpenter|firefighter|police\s+officer|officer|soldier|entrepreneur|founder|co-?founder|freelancer"
    r"|contractor|intern|administrator|sysadmin|technician|salesperson|marketer|recruiter|librarian"
    r"|veterinarian|vet|social\s+worker|paramedic|cashier|waiter|waitress|bartender|barista|cto|ceo|cfo|coo"
    r"|vp|director|product\s+owner|pm|tester|homemaker|housewife|tutor|coach|trainer|instructor|principal"
    r"|clerk|secretary|receptionist|banker|trader|investor|broker|realtor|economist|mathematician"
    r"|statistician|physicist|chemist|biologist|translator|interpreter|actor|actress|singer|dancer"
    r"|pianist|guitarist|composer|illustrator|animator|filmmaker|producer|blogger|youtuber|streamer"
    r"|influencer|caregiver|midwife|optometrist|surveyor|auditor|lead|devops|sre|data\s+engineer"
    r"|full[- ]stack\s+dev|dev|postdoc|phd\s+student|grad\s+student|undergrad|resident|intern"
)
_OCCUPATIONS_ZH = (
    r"程序员|工程师|开发者|开发|设计师|老师|教师|教授|讲师|学生|研究生|博士生|博士|大学生|高中生|中学生|医生|护士|"
    r"律师|会计师|会计|研究员|作家|记者|编辑|厨师|司机|产品经理|项目经理|经理|架构师|分析师|销售|运维|测试|前端|"
    r"后端|全栈|创业者|自由职业者|公务员|警察|军人|主管|总监|老板|实习生|顾问|画家|摄影师|音乐人|歌手|演员|翻译|"
    r"导游|农民|工人|药剂师|咨询师|心理咨询师|设计|运营|产品|数据科学家|科学家|飞行员|律师助理|全职妈妈|全职爸爸|"
    r"家庭主妇|退休人员|退休教师|创始人|合伙人|CTO|CEO"
)
_PEOPLE_EN = (
    r"friend|friends|wife|husband|partner|spouse|boyfriend|girlfriend|fiance|fiancee|mom|mum|mother|dad"
    r"|father|parents|parent|son|sons|daughter|daughters|kid|kids|child|children|baby|brother|brothers"
    r"|sister|sisters|sibling|siblings|boss|manager|colleague|colleagues|coworker|coworkers|co-worker"
    r"|teammate|teammates|team|roommate|neighbor|neighbour|cousin|aunt|uncle|grandma|grandpa|grandmother"
    r"|grandfather|grandparents|family|client|clients|customer|customers|doctor|teacher|therapist|mentor"
    r"|ex|bestie|bff|buddy|pal|dog|cat|pet|puppy|kitten|niece|nephew|in-laws|students|users"
)
_DISCOURSE_EN = (
    r"point|question|guess|thought|thoughts|idea|concern|problem|issue|bad|pleasure|apologies|fault|turn"
    r"|mistake|understanding|impression|sense|feeling|hope|worry|take|opinion|answer|reply|bet|advice"
    r"|suggestion|recommendation|request|ask|god|gosh|goodness|word|heart|mind|dear|friend|man|dude"
)
_PEOPLE_ZH = (
    r"朋友|好友|妈妈|妈|母亲|爸爸|爸|父亲|父母|老婆|老公|妻子|丈夫|爱人|太太|先生|孩子|儿子|女儿|宝宝|老板|同事|"
    r"男朋友|女朋友|男友|女友|对象|哥哥|姐姐|弟弟|妹妹|家人|爷爷|奶奶|外公|外婆|室友|邻居|同学|老师|领导|经理|客户|"
    r"猫|狗|宠物|团队|组员|下属|上司|闺蜜|兄弟"
)
_WE_SUBJECT_ZH = re.compile(r"^我(?:和|跟|与|同)(?:我的?|我们的?)?(?:" + _PEOPLE_ZH + r")(?:们)?(?:一起)?(?=\S)")


# "Budget: 8000", "Location - Berlin", 预算：5000: a slot written as a labelled field.
_LABELS: Final = {
    "budget": "budget", "name": "name", "location": "location", "city": "location", "diet": "diet",
    "role": "role", "job": "role", "occupation": "role", "timezone": "timezone", "time zone": "timezone",
    "age": "age", "language": "language", "languages": "language", "team size": "team_size",
    "hometown": "hometown", "employer": "employer", "company": "employer",
    "预算": "budget", "名字": "name", "姓名": "name", "城市": "location", "所在地": "location", "饮食": "diet",
    "职业": "role", "时区": "timezone", "年龄": "age", "语言": "language", "团队规模": "team_size",
    "公司": "employer",
}  # fmt: skip
_LABEL_WORDS = "|".join(sorted((re.escape(k).replace(r"\ ", r"\s+") for k in _LABELS), key=len, reverse=True))
_LABEL = re.compile(r"(?:my\s+|our\s+|我的|我们的)?(?P<label>" + _LABEL_WORDS + r")", _I)
_LABELLED = re.compile(r"^(?:my\s+|our\s+|我的|我们的)?(?P<label>" + _LABEL_WORDS + r")\s*[:：=]\s*(?P<v>\S.*)$", _I)


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


# ---------------------------------------------------------------------------------------------------------
# English patterns
# ---------------------------------------------------------------------------------------------------------

_Matcher = Callable[[_Body, _Context], list[_Hit]]

# budget
_BUDGET_EN = [
    re.compile(
        r"^(?:(?:my|our|the)\s+)?(?:total\s+|max(?:imum)?\s+|overall\s+|monthly\s+|annual\s+|yearly\s+|new\s+)?"
        r"budget\s*(?:(?:is|'s|will\s+be|of|is\s+now|has\s+changed\s+to|changed\s+to|now|should\s+be"
        r"|is\s+going\s+to\s+be|isn't|is\s+not)\b|[=:])",
        _I,
    ),
    re.compile(
        r"^" + _SUBJ + r"\s+(?:have|'ve\s+got|have\s+got|got)\s+(?:a|an|the)\s+(?:\w+\s+){0,2}budget\s+of\b", _I
    ),
    re.compile(r"^" + _BE + r"\s+on\s+a\s+(?:\w+\s+)?budget\s+of\b", _I),
    re.compile(
        r"^(?:(?:let's|please)\s+)?(?:make|set|change|update|raise|lower|increase|decrease|bump|drop|cut|move"
        r"|adjust|put)\s+(?:the|my|our)\s+budget\b",
        _I,
    ),
    re.compile(
        r"^" + _SUBJ_ADV_EN + r"(?:can|could|want\s+to|plan\s+to|am\s+willing\s+to|'m\s+willing\s+to"
        r"|are\s+willing\s+to|'re\s+willing\s+to|am\s+happy\s+to|'m\s+happy\s+to|'d\s+like\s+to)\s+"
        r"(?:only\s+)?(?:spend|pay|afford)\b",
        _I,
    ),
    re.compile(
        r"^" + _SUBJ_ADV_EN + r"(?:can't|cannot|can\s+not|don't\s+want\s+to|do\s+not\s+want\s+to|won't"
        r"|will\s+not|'d\s+rather\s+not|would\s+rather\s+not|must\s+not|shouldn't|should\s+not)\s+"
        r"(?:spend|pay|afford|go)\s+(?:more\s+than|over|above|beyond|past)\b",
        _I,
    ),
]
# limits, budget when the amount is money
_LIMIT_EN = re.compile(
    r"^(?:please\s+|let's\s+)?(?:(?:keep|limit)\s+(?:it|them|things|answers|replies|responses|the\s+\w+|your\s+\w+|yourself)"
    r"\s+(?:to\s+)?|(?:at\s+most|no\s+more\s+than|not\s+more\s+than|max(?:imum)?|up\s+to|fewer\s+than|less\s+than"
    r"|under|below|within|nothing\s+(?:over|above|more\s+than))\s*:?\s*)+(?=[$€£¥\d]|" + _NUMBER + r"\b)",
    _I,
)
_BARE_AMOUNT_EN = re.compile(
    r"^(?:(?:but|rather|instead|it's|it\s+is|make\s+it|make\s+that|change\s+it\s+to|set\s+it\s+to|i\s+meant"
    r"|i\s+mean|(?:it\s+)?should\s+be|more\s+like|let's\s+say|now)\s+)*(?P<amount>[$€£¥]?\s?[\d.,]+\s?(?:k|m|thousand|grand|million)?"
    r"\s?(?:dollars?|bucks|usd|eur|euros?|pounds?|gbp|rmb|yuan)?)(?:\s+(?:instead|then|actually|please|now|total))?$",
    _I,
)
_CHANGE_VERB_EN = re.compile(r"\b(?:make|change|set|meant|mean|instead|rather|should\s+be|more\s+like)\b", _I)
_MONEY_WORD = re.compile(
    r"\b(?:budget|spend|spending|afford|pay|price|cost|costs|dollars?|bucks|euros?|pounds?|yuan|usd|eur|gbp)\b"
    r"|预算|花|价格|价位|费用|成本|钱|元|块|美元|欧元|英镑",
    _I,
)


def _budget_en(b: _Body, ctx: _Context) -> list[_Hit]:
    """A budget: "my budget is 5,000", "we have a budget of $2k", "make the budget 8000", "I can spend up
    to 500", "I can't spend more than $500" (a limit on spending is the budget, not a prohibition)."""
    for pattern in _BUDGET_EN:
        m = pattern.match(b.fold)
        if m:
            ctx.numeric_slot = "budget"
            found = _amount(b.fold, m.end())
            if found:
                return [_slot("budget", found[0], b)]
            ctx.denied = bool(_AMOUNT.search(b.fold, m.end()))
            return []
    return []


def _limit_en(b: _Body, ctx: _Context) -> list[_Hit]:
    """A limit: "at most 3 options", "no more than 2 hours", "keep it under 500 words" (soft); the budget
    when the amount is money ("under $500", "no more than 2k dollars")."""
    m = _LIMIT_EN.match(b.fold)
    if not m:
        return []
    found = _amount(b.fold, m.end())
    if found and (found[1] or _MONEY_WORD.search(b.fold)):
        ctx.numeric_slot = "budget"
        return [_slot("budget", found[0], b)]
    return [_Hit("constraint", CONF_LIMIT, hard=False)]


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


# slot facts
_DIET_EN_RE = [
    re.compile(
        r"^"
        + _BE
        + r"\s+"
        + _ADV_EN
        + r"(?:a\s+|an\s+)?(?:strict\s+|full\s+|complete\s+|total\s+)?"
        + _DIET_EN
        + r"\b",
        _I,
    ),
    re.compile(
        r"^" + _SUBJ_ADV_EN + r"(?:eat|follow|keep|went|became|turned|have\s+gone|'ve\s+gone|switched\s+to"
        r"|am\s+on|'m\s+on|are\s+on|'re\s+on|stick\s+to|live)\s+(?:a\s+|an\s+)?(?:strictly\s+|only\s+|strict\s+)?"
        + _DIET_EN
        + r"\b",
        _I,
    ),
    re.compile(r"^(?:my|our)\s+diet\s+is\s+" + _ADV_EN + r"(?:a\s+|an\s+)?" + _DIET_EN + r"\b", _I),
]
_PLACE_STOP = re.compile(
    r"(?<!\s)\s+(?:with|for|since|now|and|but|because|near|by|these|this|last|next|at|where|which|who|as|so|right"
    r"|anymore|though|too|when|after|before|recently|ago|yesterday|today|tomorrow|in\s+\d{4}|in\s+(?:january"
    r"|february|march|april|may|june|july|august|september|october|november|december)|a\s+few|\d+\s+(?:years?"
    r"|months?|weeks?|days?)|full[- ]time|part[- ]time|currently|lol|haha|btw|until|while|,)\b.*$",
    _I | re.DOTALL,
)
_LOCATION_EN = re.compile(
    r"^" + _SUBJ_ADV_EN + r"(?:live|'m\s+living|am\s+living|'re\s+living|are\s+living|reside|'m\s+based"
    r"|am\s+based|'re\s+based|are\s+based|'m\s+located|am\s+located|'re\s+located|are\s+located"
    r"|(?:'ve|have)\s+(?:just\s+|recently\s+|finally\s+)?(?:moved|relocated)|moved|relocated|settled|'ve\s+settled"
    r"|'m\s+moving|am\s+moving|'re\s+moving|are\s+moving)\s+(?:in|to|at|out\s+to)\s+(?P<v>\S.*)$",
    _I,
)
_HOMETOWN_EN = [
    re.compile(r"^" + _BE + r"\s+" + _ADV_EN + r"(?:originally\s+)?from\s+(?P<v>\S.*)$", _I),
    re.compile(
        r"^i\s+" + _ADV_EN + r"(?:grew\s+up|was\s+born(?:\s+and\s+raised)?|was\s+raised)\s+in\s+(?P<v>\S.*)$", _I
    ),
    re.compile(r"^(?:my|our)\s+(?:hometown|home\s+town|home\s+country|homeland)\s+is\s+(?P<v>\S.*)$", _I),
]
_NAME_EN = [
    re.compile(r"^my\s+(?:first\s+|full\s+|real\s+|last\s+)?name(?:'s|\s+is)\s+(?P<v>\S.*)$", _I),
    re.compile(r"^(?:you\s+can\s+|please\s+|just\s+)?call\s+me\s+(?P<v>\S.*)$", _I),
    re.compile(r"^i\s+(?:go\s+by|'m\s+called|am\s+called|'m\s+named|am\s+named)\s+(?P<v>\S.*)$", _I),
]
_NAME_STOP = re.compile(r"(?<!\s)\s+(?:and|but|by|from|at|please|if|because|instead|though|lol|haha|btw)\b.*$", _I)
_NAME_WORD = re.compile(r"^[^\W\d_][\w'.-]*$")
_ROLE_EN = [
    re.compile(
        r"^"
        + _BE
        + r"\s+"
        + _ADV_EN
        + r"(?:a|an|the|our|their)\s+(?P<v>(?:[\w-]+\s+){0,3}?(?:"
        + _OCCUPATIONS_EN
        + r")s?)\b"
        r"(?:\s+(?:at|for|with|in)\s+(?P<org>\S.*))?",
        _I,
    ),
    re.compile(
        r"^i\s+"
        + _ADV_EN
        + r"work\s+as\s+(?:a|an|the)?\s*(?P<v>(?:[\w-]+\s+){0,3}?[\w-]+)(?:\s+(?:at|for|with)\s+(?P<org>\S.*))?$",
        _I,
    ),
    re.compile(
        r"^my\s+(?:job|role|position|title|occupation|profession|job\s+title)\s+is\s+(?:a|an|the)?\s*"
        r"(?P<v>(?:[\w-]+\s+){0,3}?[\w-]+)(?:\s+(?:at|for|with)\s+(?P<org>\S.*))?$",
        _I,
    ),
]
_STATUS_ROLE_EN = re.compile(
    r"^"
    + _BE
    + r"\s+"
    + _ADV_EN
    + r"(?P<v>retired|unemployed|self-employed|self\s+employed|between\s+jobs|a\s+stay-at-home\s+(?:mom|dad|parent))\b",
    _I,
)
_EMPLOYER_EN = re.compile(
    r"^(?:i\s+"
    + _ADV_EN
    + r"(?:work|'m\s+working|am\s+working)\s+(?:at|for)|i(?:'m|\s+am)\s+"
    + _ADV_EN
    + r"(?:employed|hired)\s+(?:at|by))\s+(?P<v>\S.*)$",
    _I,
)
_NOT_EMPLOYER = re.compile(
    r"^(?:home|night|nights|weekends?|the\s+moment|a\s+living|free|fun|now|it|this|that|hours|least|most|a\s+while)\b",
    _I,
)
_LANGUAGE_EN_RE = [
    re.compile(
        r"^" + _SUBJ_ADV_EN + r"(?:speak|'m\s+fluent\s+in|am\s+fluent\s+in|are\s+fluent\s+in)\s+(?P<v>.+)$",
        _I,
    ),
    re.compile(r"^(?:my|our)\s+(?:native|first|mother|primary|main|home)\s+(?:language|tongue)\s+is\s+(?P<v>.+)$", _I),
    re.compile(r"^" + _BE + r"\s+(?:a\s+)?native\s+(?P<v>(?:" + _LANGUAGE_EN + r"))\s+speakers?\b", _I),
    re.compile(
        r"^(?:please\s+)?(?:always\s+)(?:answer|reply|respond|write|talk|speak)\s+(?:to\s+me\s+)?in\s+(?P<v>.+)$", _I
    ),
    re.compile(
        r"^(?:please\s+)?(?:answer|reply|respond|write|talk|speak)\s+(?:to\s+me\s+)?in\s+(?P<v>(?:"
        + _LANGUAGE_EN
        + r"))\s+(?:from\s+now\s+on|by\s+default|going\s+forward|in\s+(?:the\s+)?future|moving\s+forward|always)\b",
        _I,
    ),
    re.compile(r"^" + _SUBJ_ADV_EN + r"prefer\s+(?:answers|replies|responses)\s+in\s+(?P<v>.+)$", _I),
]
_TEAM_EN = [
    re.compile(
        r"^(?:our|my)\s+(?:whole\s+|entire\s+|dev\s+|engineering\s+|ops\s+)?team\s+(?:is|has|'s)\s+(?:only\s+|just\s+|about\s+|around\s+)?"
        r"(?P<n>" + _NUMBER + r")\s*(?:people|persons|engineers|developers|devs|members|folks|strong|of\s+us)?\b",
        _I,
    ),
    re.compile(
        r"^we(?:'re|\s+are)\s+(?:only\s+|just\s+)?(?:a\s+)?(?:small\s+|tiny\s+)?team\s+of\s+(?P<n>" + _NUMBER + r")\b",
        _I,
    ),
    re.compile(
        r"^we\s+(?:only\s+|just\s+)?(?:have|'ve\s+got)\s+(?P<n>" + _NUMBER + r")\s+(?:people|engineers|developers|devs"
        r"|employees|staff|team\s+members)\b(?!\s+(?:who|that))",
        _I,
    ),
    re.compile(r"^there\s+are\s+(?:only\s+|just\s+)?(?P<n>" + _NUMBER + r")\s+of\s+us\b", _I),
]
_TZ_ABBREVIATIONS = (
    r"(?:utc|gmt|pst|pdt|pt|est|edt|et|cst|cdt|ct|mst|mdt|mt|akst|hst|bst|cet|cest|eet|eest|wet|west|ist|jst"
    r"|kst|hkt|sgt|aest|aedt|acst|awst|nzst|nzdt|msk|brt|art)"
)
_TIMEZONE_EN = [
    re.compile(r"^(?:my|our)\s+time\s*zone\s+is\s+(?P<v>.+)$", _I),
    re.compile(
        r"^"
        + _BE
        + r"\s+"
        + _ADV_EN
        + r"(?:in|on)\s+(?:the\s+)?(?P<v>(?:utc|gmt)\s*[+-]\s*\d{1,2}(?::\d\d)?|"
        + _TZ_ABBREVIATIONS
        + r"|(?:pacific|eastern|central|mountain|atlantic|alaska|hawaii|british|central\s+european|china|japan|india|"
        r"australian\s+eastern)\s+(?:standard\s+)?time)\b",
        _I,
    ),
]
_TZ_VALUE = re.compile(
    r"^(?:(?:utc|gmt)\s*[+-]\s*\d{1,2}(?::\d\d)?|"
    + _TZ_ABBREVIATIONS
    + r"|[a-z]+(?:\s+[a-z]+){0,2}\s+time|[a-z]+/[a-z_]+)$",
    _I,
)
_AGE_EN = [
    re.compile(r"^" + _BE + r"\s+(?P<n>\d{1,3})(?:\s+(?:years?|yrs?)\s+old|\s*y/?o|\s+now|\s+this\s+year)?$", _I),
    re.compile(r"^i\s+" + _ADV_EN + r"turned\s+(?P<n>\d{1,3})\b", _I),
    re.compile(r"^my\s+age\s+is\s+(?P<n>\d{1,3})\b", _I),
]


def _place(raw: str, fold: str, start: int) -> str | None:
    """A place phrase: up to the first word that starts another adverbial ("Berlin with my wife" →
    "Berlin"), at most five words, not a pronoun."""
    rest = fold[start:]
    cut = _PLACE_STOP.search(rest)
    end = cut.start() if cut else len(rest)
    place = _trim(rest[:end]).strip()
    if not place or len(place.split()) > 5 or _PRONOUN_EN.match(place) or _YOU_EN.search(place):
        return None
    offset = start + len(rest) - len(rest.lstrip())
    return raw[offset : offset + len(place)]


def _slots_en(b: _Body, ctx: _Context) -> list[_Hit]:
    """Slot facts in English: diet, location, hometown, name, role (and employer), language, team size,
    time zone, age."""
    f, r = b.fold, b.raw
    for p in _DIET_EN_RE:
        m = p.match(f)
        if m:
            return [_slot("diet", _DIETS[re.sub(r"\s+", " ", m.group("diet").lower())], b)]
    m = _LOCATION_EN.match(f)
    if m:
        place = _place(r, f, m.start("v"))
        return [_slot("location", _low(place), b)] if place else []
    for p in _HOMETOWN_EN:
        m = p.match(f)
        if m:
            place = _place(r, f, m.start("v"))
            return [_slot("hometown", _low(place), b)] if place else []
    for i, p in enumerate(_NAME_EN):
        m = p.match(f)
        if m:
            name = _name(r[m.start("v") :], capitalised=i > 0)
            return [_slot("name", name.lower(), b)] if name else []
    hits = _role_en(b)
    if hits:
        return hits
    m = _EMPLOYER_EN.match(f)
    if m:
        org = _org(r, f, m.start("v"))
        return [_slot("employer", org, b)] if org else []
    for p in _LANGUAGE_EN_RE:
        m = p.match(f)
        if m:
            langs = _languages(m.group("v"))
            return [_slot("language", langs, b)] if langs else []
    for p in _TEAM_EN:
        m = p.match(f)
        if m:
            ctx.numeric_slot = "team_size"
            n = _number(m.group("n"))
            return [_slot("team_size", n, b)] if n else []
    for p in _TIMEZONE_EN:
        m = p.match(f)
        if m:
            tz = _low(_trim(m.group("v")).strip())
            return [_slot("timezone", tz, b)] if _TZ_VALUE.match(tz) else []
    for p in _AGE_EN:
        m = p.match(f)
        if m:
            age = int(m.group("n"))
            ctx.numeric_slot = "age"
            return [_slot("age", age, b)] if 1 <= age <= 120 else []
    return []


def _name(rest: str, *, capitalised: bool) -> str | None:
    """One to three name words; after "call me"/"I go by" each must be capitalised (so "call me later" is
    not a name)."""
    rest = _NAME_STOP.sub("", rest.strip())
    rest = _trim(rest).strip()
    words = rest.split()
    if not 1 <= len(words) <= 3 or not all(_NAME_WORD.match(w) for w in words):
        return None
    if _PRONOUN_EN.match(rest) or re.match(r"^(?:not|no|a|an|the)\b", rest, _I):
        return None
    if capitalised and not all(w[0].isupper() for w in words):
        return None
    return rest


def _org(raw: str, fold: str, start: int) -> str | None:
    """An employer: a name up to the next adverbial, not "home"/"night" ("I work at home" is no employer)."""
    place = _place(raw, fold, start)
    if place:
        place = re.split(r"\s+in\s+", place, maxsplit=1, flags=_I)[0]
    if not place or _NOT_EMPLOYER.match(place):
        return None
    if place.lower() in ("myself", "my own company", "my own business", "a company", "a firm"):
        return "self-employed" if place.lower() != "a company" and place.lower() != "a firm" else None
    return _low(place)


def _role_en(b: _Body) -> list[_Hit]:
    """A role: "I'm a (senior) software engineer (at Acme)", "I work as a nurse", "my job is …", "I'm
    retired"; the employer too when it is named after "at"/"for"."""
    f, r = b.fold, b.raw
    m = _STATUS_ROLE_EN.match(f)
    if m:
        return [_slot("role", _low(m.group("v")).replace("self employed", "self-employed"), b)]
    for i, p in enumerate(_ROLE_EN):
        m = p.match(f)
        if not m:
            continue
        role = _low(r[m.start("v") : m.end("v")])
        if not role or _PRONOUN_EN.match(role) or re.search(r"\b(?:fan|bit|lot|little|kind|sort)\b", role):
            return []
        if i == 0 and re.match(r"^(?:big|huge|total|massive|great)\s", role):
            return []
        hits = [_slot("role", role, b)]
        # a student's school is not an employer
        if m.group("org") and not re.search(r"\b(?:student|undergrad|pupil)$", role):
            org = _org(r, f, m.start("org"))
            if org:
                hits.append(_slot("employer", org, b))
        return hits
    return []


def _languages(phrase: str) -> str | None:
    """The known language names in a phrase, in order, lower-case and joined ("English and Spanish" →
    "english, spanish"); None when it names none."""
    found = re.findall(r"\b(?:" + _LANGUAGE_EN + r")\b|" + _LANGUAGE_ZH, phrase, _I)
    names: list[str] = []
    for word in found:
        name = _LANGUAGES[word.lower()]
        if name not in names:
            names.append(name)
    return ", ".join(names) or None


# preferences
_LIKE_EN = re.compile(
    r"^" + _SUBJ_ADV_EN + r"(?:love|like|enjoy|adore|prefer|fancy|dig|"
    r"(?:am|'m|are|'re)\s+(?:really\s+|so\s+|very\s+|quite\s+)?(?:(?:a\s+)?(?:big\s+|huge\s+|massive\s+|great\s+)?fan\s+of"
    r"|into|passionate\s+about|crazy\s+about|obsessed\s+with|fond\s+of|keen\s+on|addicted\s+to|a\s+sucker\s+for"
    r"|partial\s+to|in\s+love\s+with|interested\s+in|all\s+about|hooked\s+on|fascinated\s+by|drawn\s+to|big\s+on)"
    r"|(?:'ve|\s+have)\s+" + _ADV_EN + r"(?:loved|enjoyed|liked|been\s+(?:really\s+|so\s+)?(?:into|passionate\s+about"
    r"|(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|fascinated\s+by|interested\s+in|obsessed\s+with|drawn\s+to))"
    r"|have\s+(?:a\s+)?(?:soft\s+spot|passion|real\s+passion|weakness|thing)\s+for|can't\s+get\s+enough\s+of|(?:'d|would)\s+(?:much\s+)?(?:prefer|rather\s+(?:have|use|go\s+with|do|eat|take)))"
    r"\s+(?P<o>\S.*)$",
    _I,
)
_DISLIKE_EN = re.compile(
    r"^" + _SUBJ_ADV_EN + r"(?:hate|dislike|detest|loathe|despise|abhor|can't\s+stand|cannot\s+stand"
    r"|can\s+not\s+stand|can't\s+bear|cannot\s+bear|(?:don't|do\s+not)\s+(?:really\s+|particularly\s+|much\s+|even\s+"
    r"|actually\s+)?(?:like|enjoy|love|care\s+for|fancy|dig)|(?:am|'m|are|'re)\s+(?:not\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of"
    r"|not\s+(?:really\s+)?into|not\s+fond\s+of|not\s+keen\s+on|not\s+crazy\s+about|sick\s+of|tired\s+of|fed\s+up\s+with"
    r"|no\s+fan\s+of|not\s+(?:really\s+|very\s+|that\s+)?interested\s+in)|(?:'d|would)\s+(?:much\s+)?(?:prefer|rather)\s+not(?:\s+to)?|prefer\s+not\s+to)\s+(?P<o>\S.*)$",
    _I,
)
# "I'm a huge Star Wars fan": the object between the article and "fan".
_FAN_EN = re.compile(
    r"^" + _BE + r"\s+" + _ADV_EN + r"(?:a|an)\s+(?:big|huge|massive|great|total|die-?hard|lifelong|long-?time|major)"
    r"\s+(?P<o>[\w'-]+(?:\s+[\w'-]+){0,3}?)\s+fan$",
    _I,
)
# What a liking of the other person's thing looks like: "their work", "the colour and texture", "the freedom
# it brings" — a compliment on what was just shown, nothing to remember about the writer.
_WEAK_LIKE_OBJECT = re.compile(
    r"^(?:their|his|her|its|theirs|hers)\b"
    r"|^the\s+(?:[\w-]+\s+)?(?:" + QUALITY_NOUNS_EN + r")\b(?!.*\b(?:of|in|at|from|about)\b)"
    r"|\b(?:it|they|he|she|this|that|you)\s+(?:brings?|has|have|gives?|makes?|creates?|adds?|shows?|had|gave|made"
    r"|brought|does|did|put|puts)\b",
    _I,
)
_FAVOURITE_EN = [
    re.compile(
        r"^(?:my|our)\s+(?:all[- ]time\s+|absolute\s+|very\s+)?fav(?:ou?rite|e|orite)?"
        r"(?:\s+(?P<k>[\w-]+(?:\s+[\w-]+)?))?\s+(?:is|are|'s|has\s+to\s+be)\s+(?P<o>\S.*)$",
        _I,
    ),
    re.compile(
        r"^(?P<o>(?:[\w'-]+\s+){0,3}[\w'-]+)\s+(?:is|are|'s)\s+(?:definitely\s+|probably\s+|still\s+|really\s+)?"
        r"(?:my|our)\s+(?:all[- ]time\s+|absolute\s+)?(?:fav(?:ou?rite|e|orite)?(?:\s+(?P<k>[\w-]+(?:\s+[\w-]+)?))?"
        r"|(?:(?:true|real|biggest|greatest|big|new)\s+)?(?:passion|thing|jam|happy\s+place|guilty\s+pleasure))$",
        _I,
    ),
]


def _preference_en(b: _Body, ctx: _Context) -> list[_Hit]:
    """A preference: "I (really) love/like/enjoy/prefer X", "I'm a big fan of X", "I'd rather have X" →
    like; "I hate/dislike/can't stand/don't like X", "I'm not a fan of X", "I'd rather not X" → dislike;
    "my favourite food is X", "X is my favourite" → like, keyed by what it is the favourite of."""
    f, r = b.fold, b.raw
    readings: tuple[tuple[Polarity, re.Pattern[str]], ...] = (("dislike", _DISLIKE_EN), ("like", _LIKE_EN))
    for polarity, pattern in readings:
        m = pattern.match(f)
        if m:
            obj = _phrase(r, f, m.start("o"), max_words=10, preference=True)
            if not obj or _WEAK_LIKE_OBJECT.search(obj):
                return []
            return [_Hit("preference", _bonus(CONF_PREFERENCE, b), profile=_profile("preference", obj, polarity))]
    m = _FAN_EN.match(f)
    if m:
        obj = r[m.start("o") : m.end("o")]
        if _PRONOUN_EN.match(obj) or _YOU_EN.search(obj):
            return []
        return [_Hit("preference", _bonus(CONF_PREFERENCE, b), profile=_profile("preference", obj))]
    for pattern in _FAVOURITE_EN:
        m = pattern.match(f)
        if m:
            obj = (
                _phrase(r, f, m.start("o"), max_words=6, preference=True) if m.start("o") > 0 else _clean_subject(r, m)
            )
            if not obj or (m.start("o") == 0 and _PRONOUN_EN.match(obj)):
                return []
            of = m.groupdict().get("k")
            key = slug("favorite " + of) if of else None
            return [_Hit("preference", _bonus(CONF_PREFERENCE, b), profile=_profile("preference", obj, key=key))]
    return []


def _clean_subject(raw: str, m: re.Match[str]) -> str | None:
    """The favourite named as the subject ("Sushi is my favourite"), unless it is a pronoun."""
    words = raw[m.start("o") : m.end("o")].strip()
    return None if _PRONOUN_EN.match(words) or _YOU_EN.search(words) else words


def _bonus(conf: float, b: _Body) -> float:
    """A confidence, raised for a correction (said on purpose)."""
    return min(1.0, conf + (CORRECTION_BONUS if b.correction else 0.0))


# constraints
_RESTRICT_VERBS_EN = (
    r"use|using|eat|drink|have|consume|touch|take|run|install|deploy|depend\s+on|rely\s+on|afford|spend"
    r"|pay|exceed|work|travel|fly|drive|handle|tolerate|share|store|send|access|support|adopt|migrate"
    r"|go\s+(?:above|over|beyond|past)|wear|smoke|buy|book|stay|attend|schedule|host|upload|expose|pick"
    r"|choose|own|keep|get|do|eat\s+out|commit|push|merge|deploy|ship|release|delete|drop|change|modify"
    r"|hire|fund|process|collect|call|email|text|contact|recommend|suggest|include|mention|add|allow"
    r"|accept|sign|open|enable|disable|switch|move|upgrade|downgrade|leave|go|travel|walk|lift|sit|stand"
    r"|climb|swim|cook|meet|visit|join|trust|show|give|write|print|post|publish|risk"
)
_FIRST_PERSON_LIMIT_EN = re.compile(
    r"^" + _SUBJ_ADV_EN + r"(?P<neg>can't|cannot|can\s+not|must\s+not|mustn't|must\s+never|may\s+not"
    r"|(?:are|'re|am|'m)\s+not\s+(?:allowed|permitted|supposed|able)\s+to|(?:aren't|can't\s+be)\s+(?:allowed|permitted)\s+to"
    r"|(?:are|'re|am|'m)\s+forbidden\s+to|never|don't|do\s+not|won't|will\s+not|refuse\s+to|can\s+only|could\s+only"
    r"|must|have\s+to|need\s+to|are\s+required\s+to|'re\s+required\s+to|am\s+required\s+to|'m\s+required\s+to"
    r"|should\s+(?:never|not)|shouldn't)\s+(?:ever\s+|really\s+|just\s+|only\s+)?(?P<verb>"
    + _RESTRICT_VERBS_EN
    + r")\b(?P<o>.*)$",
    _I,
)
_DONT_VERBS_EN = re.compile(
    r"^(?:eat|drink|use|touch|fly|drive|wear|smoke|own|eat\s+out|work|do|want|consume|take|travel|buy)$", _I
)
_AVOID_EN = re.compile(
    r"^(?:" + _SUBJ_ADV_EN + r"(?P<soft>try\s+to\s+|prefer\s+to\s+|would\s+like\s+to\s+|'d\s+like\s+to\s+)?"
    r"(?:have\s+to\s+|need\s+to\s+|must\s+|should\s+|want\s+to\s+)?|let's\s+)?(?:please\s+)?(?:always\s+)?"
    r"(?:avoid|stay\s+away\s+from|steer\s+clear\s+of|keep\s+away\s+from)\s+(?P<o>\S.*)$",
    _I,
)
_PROHIBIT_EN = re.compile(
    r"^(?:please\s+|pls\s+|and\s+|so\s+|but\s+|just\s+|also\s+)*(?:do\s+not|don't|dont|never(?:\s+ever)?|must\s+not"
    r"|mustn't|must\s+never|shall\s+not|should\s+never|you\s+(?:must|should)\s+(?:not|never)|you\s+shouldn't"
    r"|please\s+don't|please\s+never|let's\s+not|let's\s+never|(?P<stop>stop))\s+(?:ever\s+|again\s+|please\s+)?(?P<verb>[a-z]+)"
    r"(?P<o>.*)$",
    _I,
)
_PHATIC_EN = re.compile(
    r"^(?:worry|worries|forget|hesitate|mind|panic|sweat|cry|fret|stress|apologi[sz]e|overthink|rush|judge"
    r"|miss|doubt|underestimate|quit|lose|blame|beat|care|know|think|get|be|let|feel|give|look|go|stop|take"
    r"|you|i|we|it|that|this|say|tell|ask|believe|wait|hold|come|leave|try|start|change|ever|again|even"
    r"|listen|mention|thank|judge|laugh|bother|expect|feel|settle|regret|cry|lose|kid|push|sell|knock"
    r"|hate|even|worry)$",
    _I,
)
# Verbs after which "don't … me" is a rule about contacting the user ("don't call me before 9").
_TO_ME_VERBS = re.compile(r"^(?:give|send|show|call|email|text|contact|wake|remind|ping|book|cc|message|tag)$", _I)
_NO_X_EN = re.compile(
    r"^(?:and\s+|but\s+|so\s+|also\s+|please\s+)?no\s+(?P<o>\w[\w .&/+#'-]{0,40}?)"
    r"(?:\s*,?\s*(?:please|pls|thanks|thank\s+you|at\s+all|whatsoever|ever|either|anymore|again))*$",
    _I,
)
# "No X" that is an idiom, not a rule ("no worries", "no doubt", "no way", "no more than 3" is a limit).
_NO_X_BLOCK = re.compile(
    r"(?:more\s+than|longer|one|way|problems?|worr(?:y|ies)|ideas?|doubts?|kidding|wonder|matter|thanks?|pressure"
    r"|rush|big\s+deal|offen[cs]e|clues?|comments?|need|fun|luck|probs?|biggie|biggy|questions?|hard\s+feelings"
    r"|chance|reasons?|choice|time|excuses?|stress|sweat|jokes?|shit|sir|ma'am|thx|ty|i|we|you|he|she|they|it"
    r"|that|this|not|less|earlier|later|sooner|better|difference|harm|hurry|go|cap|lie|pun|judge?ment|dice"
    r"|sense|wonder|offence|biggie|rest|end|fear|hesitation|complaints?|regrets?|surprise|shame|pain|gain"
    r"|excuse|answer|reply|response|signal|service|power|money|idea|plans?|\d)\b",
    _I,
)
# A past form after "never"/"don't" is a report ("never been there", "never used it"), not an order.
_NOT_BASE_FORM = re.compile(
    r"^(?:\w+[^e\W]ed|\w{3,}ing|been|seen|done|gone|had|heard|felt|thought|tried|met|got|gotten|known|made|said"
    r"|told|taken|given|eaten|was|were|is|are|am|did|went|saw|ate|drank|knew|came|ran|left|found|lost|won)$",
    _I,
)
_ALWAYS_EN = re.compile(
    r"^(?:please\s+)?(?:always|you\s+must\s+always|make\s+sure\s+(?:to|you)\s+always)\s+(?P<verb>use|include|cite|add|write"
    r"|answer|reply|respond|test|check|ask|confirm|mention|give|show|put|format|prefer|quote|explain|list"
    r"|keep|run|double-check|comment|link|provide|start|end)\b(?P<o>.+)$",
    _I,
)
_ALLERGY_EN = [
    re.compile(
        r"^" + _BE + r"\s+" + _ADV_EN + r"(?:severely\s+|very\s+|deathly\s+|highly\s+)?allergic\s+to\s+(?P<o>\S.*)$", _I
    ),
    re.compile(
        r"^" + _SUBJ + r"(?:\s+have|'ve\s+got|\s+have\s+got)\s+(?:a|an)\s+(?:severe\s+|serious\s+|mild\s+)?"
        r"(?P<o>[\w-]+(?:\s+[\w-]+)?)\s+(?:allergy|intolerance)\b",
        _I,
    ),
    re.compile(
        r"^"
        + _SUBJ_ADV_EN
        + r"(?:(?:can't|cannot|can\s+not)\s+(?:eat|have|drink|consume|tolerate)|(?:don't|do\s+not|never)\s+(?:eat|drink"
        r"|consume))\s+(?P<o>\S.*)$",
        _I,
    ),
]
_KEEP_STYLE_EN = re.compile(
    r"^(?:please\s+)?(?:always\s+)?keep\s+(?:answers|replies|responses|things|explanations|your\s+\w+|code\s+\w+)\s+"
    r"(?:short|brief|concise|simple|formal|casual|in\s+\w+)\b",
    _I,
)


def _constraint_en(b: _Body, ctx: _Context) -> list[_Hit]:
    """A constraint: prohibitions ("don't/never recommend X", "avoid X", "stop suggesting X", "no X
    please", "must not", "we can't use X", "I don't eat pork", "I'm allergic to nuts") are hard; so are
    obligations ("we must use X", "always cite sources"). "I'd rather / try to avoid" is soft. Phatic
    imperatives ("don't worry", "never mind", "no problem") and task-local ones whose object is
    "it/this/that" are not constraints."""
    f = b.fold
    for p in _ALLERGY_EN:
        m = p.match(f)
        if m and _object_ok(f, m.start("o")):
            return [_hard(b)]
    m = _AVOID_EN.match(f)
    if m:
        if not _object_ok(f, m.start("o")):
            return [replace(_hard(b), follows=True)] if _REFERS_BACK.match(f, m.start("o")) else []
        return [_hard(b)] if not m.group("soft") else [_Hit("constraint", _bonus(CONF_LIMIT, b), hard=False)]
    m = _FIRST_PERSON_LIMIT_EN.match(f)
    if m:
        neg = re.sub(r"\s+", " ", m.group("neg").lower())
        if neg in ("don't", "do not", "never", "won't", "will not") and not _DONT_VERBS_EN.match(m.group("verb")):
            return []
        if re.match(r"work\s+(?:at|for|as|in|with)\b", f[m.start("verb") :], _I):
            return []  # "I don't work at X" denies a fact, it sets no rule
        if not _object_ok(
            f, m.start("o"), allow_empty=neg not in ("can only", "could only", "must", "have to", "need to")
        ):
            return []
        if neg in ("have to", "need to") and not re.match(
            r"use|support|run|comply|stay|keep|deploy", m.group("verb"), _I
        ):
            return []
        soft = neg.startswith("should")
        return [_Hit("constraint", _bonus(CONF_LIMIT, b), hard=False)] if soft else [_hard(b)]
    m = _PROHIBIT_EN.match(f)
    if m:
        verb = m.group("verb")
        to_me = re.match(r"^\s+(?:me|us)\b", m.group("o"), _I) and _TO_ME_VERBS.match(verb)
        if _PHATIC_EN.match(verb) and not to_me:
            return []
        # "stop recommending X" takes a gerund; after "don't"/"never" a past or -ing form is a report
        base = verb.lower().endswith("ing") if m.group("stop") else not _NOT_BASE_FORM.match(verb)
        if verb.lower() == "stop" or not base:
            return []
        if not _object_ok(f, m.start("o")):
            return [replace(_hard(b), follows=True)] if _REFERS_BACK.match(f, m.start("o")) else []
        return [_hard(b)]
    m = _NO_X_EN.match(f)
    if m and not _NO_X_BLOCK.match(m.group("o")):
        return [_hard(b)]
    m = _ALWAYS_EN.match(f)
    if m and _object_ok(f, m.start("o")):
        return [_hard(b)]
    if _KEEP_STYLE_EN.match(f):
        return [_Hit("constraint", _bonus(CONF_LIMIT, b), hard=False)]
    return _requirement_en(b, ctx)


# A requirement on the thing asked for: "The laptop must weigh at most 1.5 kg", "The API must not return
# nulls". Not a person's ("my wife must…", "he has to…": the subject is a thing, with the/this/our/my), and
# not the "must" of a guess ("the view must be stunning", "that must have been fun"): "be"/"have" and
# verbs of seeming are not requirements.
_REQUIREMENT_EN = re.compile(
    r"^(?:the|this|our|my)\s+(?P<subj>(?:[\w-]+\s+){0,2}?[\w-]+)\s+(?P<modal>must\s+not|mustn't|must\s+never|must"
    r"|has\s+to|have\s+to|needs\s+to|need\s+to|can't|cannot|can\s+not|may\s+not|should\s+not|shouldn't|should)"
    r"\s+(?!(?:be|have|been|feel|look|sound|seem|get|not|never)\b)(?P<verb>[a-z]+)\b(?P<o>.*)$",
    _I,
)


def _requirement_en(b: _Body, ctx: _Context) -> list[_Hit]:
    """A requirement on a thing (hard; soft with "should"); a limit on what it costs is the budget ("The
    trip must not cost more than 2,000 euros")."""
    f = b.fold
    m = _REQUIREMENT_EN.match(f)
    if not m or not m.group("o").strip():
        return []
    if re.search(r"\b(?:" + _PEOPLE_EN + r")\b", m.group("subj"), _I) or _FRAME_VERB.search(m.group("subj")):
        return []
    if re.match(r"cost|spend|exceed|run", m.group("verb"), _I) and _MONEY_WORD.search(f):
        found = _amount(f, m.end("verb"))
        if found and found[1]:
            ctx.numeric_slot = "budget"
            return [_slot("budget", found[0], b)]
    if m.group("modal").lower().startswith("should"):
        return [_Hit("constraint", _bonus(CONF_LIMIT, b), hard=False)]
    return [_hard(b)]


# "… peanuts, never suggest them": a rule whose object points back at the constraint before it.
_REFERS_BACK = re.compile(r"\s*(?:them|those|these|it|any\s+of\s+(?:them|those|these))\b", _I)


def _object_ok(fold: str, start: int, *, allow_empty: bool = False) -> bool:
    """Whether what follows a constraint's verb is something to hold the assistant to: not empty, not
    "it/this/that" (the task at hand, not a standing rule)."""
    rest = fold[start:].strip(" ,.!")
    if not rest:
        return allow_empty
    return not re.match(r"^(?:it|this|that|these|those|them|him|her|so|too|like\s+that|again|anymore|yet)\b", rest, _I)


def _hard(b: _Body) -> _Hit:
    """A prohibition (or an obligation): a hard constraint."""
    return _Hit("constraint", _bonus(CONF_PROHIBITION, b), hard=True)


# decisions and goals
_DECISION_EN = re.compile(
    r"^(?:(?:let's|let\s+us)\s+(?:just\s+|definitely\s+)?(?:go\s+with|use|pick|choose|take|stick\s+with|settle\s+on"
    r"|switch\s+to|book|buy|opt\s+for|adopt|move\s+forward\s+with|proceed\s+with)"
    r"|"
    + _SUBJ
    + r"(?:'ll|\s+will|'re\s+going\s+to|\s+are\s+going\s+to|'m\s+going\s+to|\s+am\s+going\s+to|'m\s+gonna)\s+"
    r"(?:just\s+|definitely\s+)?(?:go\s+with|use|take|pick|choose|stick\s+with|switch\s+to|book|buy|settle\s+on|adopt"
    r"|opt\s+for|proceed\s+with)"
    r"|"
    + _SUBJ
    + r"(?:'ve|\s+have)?\s+(?:just\s+|finally\s+|already\s+)?(?:decided\s+(?:to|on|that)|chosen|picked|selected"
    r"|settled\s+on|opted\s+for|gone\s+with|went\s+with|chose|made\s+up\s+(?:my|our)\s+minds?\s+(?:to|on))"
    r"|" + _SUBJ + r"(?:'re|\s+are|'m|\s+am)\s+(?:going|sticking)\s+with"
    r"|(?:the\s+|my\s+|our\s+)?(?:final\s+)?(?:decision|choice|pick)\s+(?:is|:)|final\s+answer\s*:?)\s+(?P<o>\S.*)$",
    _I,
)
_DECISION_OBJECT_BLOCK = re.compile(
    r"(?:a\s+look|care|a\s+break|a\s+moment|a\s+second|a\s+step\s+back|started|going|back|over|a\s+chance"
    r"|a\s+nap|a\s+walk|a\s+breath|a\s+deep\s+breath|my\s+time|some\s+time|a\s+guess|a\s+stab|note|notes"
    r"|your\s+word|that\s+into\s+account|to\s+(?:ask|say|tell|know|check|see|think|wait|sleep|go|leave)|a\s+shot"
    r"|a\s+crack|a\s+swing|up|out|off|on|in|together|to\s+work|down)\b",
    _I,
)
_GOAL_EN = re.compile(
    r"^(?:" + _SUBJ_ADV_EN + r"(?:want\s+to|wanna|(?:'d|would)\s+(?:really\s+)?(?:like|love)\s+to|plan\s+to"
    r"|plan\s+on|(?:am|'m|are|'re)\s+(?:(?:planning|hoping|trying|looking|aiming|determined|working\s+hard)\s+to"
    r"|planning\s+on|aiming\s+for|saving\s+(?:up\s+)?(?:for|to))|(?:am|'m|are|'re)\s+(?:going\s+to|gonna)|intend\s+to|hope\s+to|aim\s+to|aim\s+for"
    r"|need\s+to|wish\s+to|dream\s+of|(?:'ve|have)\s+(?:always\s+)?(?:wanted|been\s+wanting)\s+to"
    r"|(?:am|'m|are|'re)\s+working\s+towards?|(?:am|'m|are|'re)\s+(?:finally\s+|so\s+|more\s+than\s+)?ready\s+to"
    r"|(?:am|'m|are|'re)\s+(?:seriously\s+)?(?:thinking\s+(?:about|of)|considering)(?=\s+[a-z]+ing\b))"
    r"|(?:my|our)\s+(?:main\s+|big\s+|ultimate\s+|long-term\s+|short-term\s+|current\s+|next\s+|new\s+)?"
    r"(?:goal|goals|plan|aim|dream|objective|ambition|mission|target|resolution|priority|hope)\s+(?:is|are|'s|for\s+\S+\s+is)"
    r"(?:\s+to)?)\s+(?P<o>\S.*)$",
    _I,
)
_GOAL_OBJECT_BLOCK = re.compile(
    r"(?:know|ask|say|tell|thank|mention|share|clarify|confirm|check|understand|hear|remind|point\s+out|let|talk"
    r"|see\s+(?:if|whether|what|how|you|it|that|this)|make\s+sure|add|apologi[sz]e|go(?:\s+now|\s+to\s+bed|\s+home)?$"
    r"|sleep|be\s+(?:clear|honest|sure)|emphasi[sz]e|note|follow\s+up|get\s+back|start\s+by|begin\s+by|double-check"
    r"|verify|give\s+you|show\s+you|send\s+you|update\s+you|cry|scream|die|vomit|puke|pee|poop|rant|vent|brag|repeat"
    r"|introduce|reply|respond|answer|give\s+it|try\s+it|do\s+it|do\s+that|do\s+this|hug|kiss|meet\s+you|chat"
    r"|the\s+same|too|as\s+well|more|much|anything|something|nothing|everything|stuff|one)\b",
    _I,
)
# Asking for help ("I'm trying to figure out how…") and savouring a moment ("I want to savor the good vibes")
# are no aims about the writer's life.
_PASSING_GOAL = re.compile(
    r"(?:figure\s+out|find\s+out|work\s+out\s+(?:how|what|which|whether|if)|decide\s+(?:how|what|which|whether|if"
    r"|between)|choose\s+between|wrap\s+my\s+head|savou?r|cherish|treasure|soak\s+(?:up|in)|bask|appreciate"
    r"|enjoy\s+(?:the|every|all|this|it|these|those|my|our)|feel|spread\s+(?:the|some|good)|hold\s+on|relax|unwind"
    r"|chill|take\s+it\s+easy|breathe|remember\s+(?:this|that|the)|capture|celebrate\s+(?:this|that|it))\b",
    _I,
)
# A goal that points at the conversation ("make something like this", "help make that happen") cannot
# be understood later, away from it.
_DEICTIC = re.compile(
    r"\b(?:it|them|ones)\b|\b(?:these|those)\b(?!\s+(?!(?:are|were|is|was|will|would|can|could|have|had|do|did"
    r"|things?|ones?|guys?|two|days)\b)[a-z]{3,})|\bthis\b(?!\s+(?:year|week|month|weekend|summer|winter|spring|fall|autumn|morning"
    r"|evening|afternoon|time|semester|quarter|season))|\b(?:make|do|like|about|with|for|see|try|on|into|of|to|is|get|help)\s+that\b"
    r"|\bthat\s*$",
    _I,
)
# Self-encouragement is not a goal one can help with: "keep going", "stay positive".
_ATTITUDE = re.compile(
    r"(?:keep(?:\s+on)?|stay|remain|continue)\s+(?:(?:going|pushing|grinding|trying|believing|moving|fighting|working"
    r"\s+hard|at\s+it|it\s+up|positive|upbeat|strong|motivated|focused|determined|humble|hopeful|optimistic|calm"
    r"|sane|up|the\s+faith|on\s+track)\b|(?:my|our)\s+head)",
    _I,
)
_GOING_TO_BLOCK = re.compile(
    r"(?:the|a|an|my|your|our|his|her|their|this|that|be|school|bed|work|church|class|sleep|go|have|need|say"
    r"|ask|tell|try|miss|cry|die|get)\b",
    _I,
)


def _decision_en(b: _Body, ctx: _Context) -> list[_Hit]:
    """A decision: "let's go with X", "we'll use X", "I'll take X", "I decided to X", "we went with X",
    "my final choice is X". Its object must be something ("I'll take a look" is not a choice)."""
    f, r = b.fold, b.raw
    m = _DECISION_EN.match(f)
    if not m or _DECISION_OBJECT_BLOCK.match(f, m.start("o")):
        return []
    obj = _phrase(r, f, m.start("o"), max_words=10)
    return [_Hit("decision", _bonus(CONF_DECISION, b))] if obj and not _DEICTIC.search(obj) else []


def _goal_en(b: _Body, ctx: _Context) -> list[_Hit]:
    """A goal: "I want to / I'd like to / I plan to / we need to / I'm trying to / I'm saving for / my goal
    is (to) X". What the user wants to *say or ask* ("I want to know…", "I need to go") is not a goal."""
    f, r = b.fold, b.raw
    m = _GOAL_EN.match(f)
    if not m:
        return []
    head = f[: m.start("o")].lower()
    if _GOAL_OBJECT_BLOCK.match(f, m.start("o")) or _PASSING_GOAL.match(f, m.start("o")):
        return []
    if re.search(r"(?:going\s+to|gonna)\s*$", head) and _GOING_TO_BLOCK.match(f, m.start("o")):
        return []
    obj = _phrase(r, f, m.start("o"), max_words=14)
    if not obj or _DEICTIC.search(obj) or _ATTITUDE.match(obj):
        return []
    return [_Hit("goal", _bonus(CONF_GOAL, b), profile=_profile("goal", obj))]


# other facts
_ARTICLE_FACT_EN = re.compile(r"^" + _BE + r"\s+" + _ADV_EN + r"(?:a|an)\s+(?P<o>\S.*)$", _I)
_ARTICLE_BLOCK = re.compile(
    r"(?:bit|little|tad|lot|kind|sort|total|complete|huge|big|little|fan|mess|wreck|sucker|loss|fool|idiot"
    r"|genius|pleasure|while|few|couple|good|great|nice|real|natural|bit\s+of|long\s+time|way|must|joke|shame"
    r"|pity|relief|miracle|blessing|dream|nightmare|pain|hassle|step|chance|question|thought|reminder|sign)\b",
    _I,
)
_STATUS_EN = re.compile(
    r"^" + _BE + r"\s+" + _ADV_EN + r"(?:married|single|divorced|engaged|pregnant|widowed|diabetic|colou?r-?blind"
    r"|left-handed|right-handed|deaf|blind|autistic|dyslexic|introverted|extroverted|bilingual|trilingual"
    r"|a\s+parent|expecting|learning|studying|training\s+for|building|writing\s+a|raising|teaching|renovating"
    r"|working\s+on|working\s+part[- ]time|working\s+full[- ]time|working\s+remotely|in\s+(?:college|school"
    r"|university|grad\s+school|high\s+school|a\s+relationship|recovery|therapy|a\s+band|a\s+club|a\s+book\s+club))\b",
    _I,
)
_HAVE_EN = re.compile(
    r"^" + _SUBJ_ADV_EN + r"(?:have|'ve\s+got|have\s+got|own)\s+(?P<o>(?:a|an|one|two|three|four|five|six|seven"
    r"|eight|nine|ten|\d{1,3}|several|some|many|a\s+few|a\s+couple\s+of)\s+\S.*)$",
    _I,
)
_HAVE_BLOCK = re.compile(
    r"\b(?:question|questions|idea|feeling|meeting|meetings|appointment|call|problem|problems|issue|issues|bug"
    r"|bugs|error|errors|doubt|doubts|suggestion|request|favou?r|thought|thoughts|point|minute|minutes|second"
    r"|moment|chance|look|concern|concerns|headache|cold|flu|fever|deadline|few\s+(?:things|questions)|lot|bit"
    r"|clue|say|choice|great\s+(?:time|day|weekend)|good\s+(?:time|day|weekend)|blast|nice\s+day|fun|plans?"
    r"|pictures?|photos?|pics?|videos?|screenshots?|copy|list|link)\b",
    _I,
)
_BEEN_EN = re.compile(r"^" + _SUBJ + r"(?:'ve|\s+have)\s+" + _ADV_EN + r"been\s+(?P<v>[a-z]+ing)\b(?P<o>.*)$", _I)
_BEEN_BLOCK = re.compile(
    r"^(?:thinking|feeling|wondering|meaning|wanting|hoping|trying|going|getting|having|waiting|dying|missing"
    r"|looking\s+forward|asking|telling|saying|doing|struggling\s+to|meaning|coming|talking|chatting|busy|staying"
    r"|keeping|sitting|following|watching\s+you|reading\s+your|using\s+you|loving|enjoying|hating|craving)$",
    _I,
)
_EVENT_EN = re.compile(
    r"^i\s+(?:just\s+|recently\s+|finally\s+|actually\s+|also\s+)?(?:got\s+back\s+from|came\s+back\s+from|returned\s+from"
    r"|went\s+to|visited|started|joined|adopted|bought|finished|graduated\s+from|graduated|signed\s+up\s+for"
    r"|took\s+up|applied\s+(?:to|for)|got\s+(?:married|engaged|divorced|promoted|hired|a\s+new|a\s+job|my\s+first"
    r"|accepted)|quit|retired|completed|won|ran\s+(?:a|my|the)|had\s+a\s+baby|gave\s+birth|became\s+a|launched"
    r"|published|passed|enrolled\s+in|volunteered|moved\s+(?:into|out)|climbed|hiked|attended)\s+(?P<o>\S.*)$",
    _I,
)
# "my work is going well", "my dreams are coming true": how things go, not what they are.
_GOING = re.compile(
    r"\w+(?:ing|in')\s+(?:well|off|true|great|good|fine|okay|ok|badly|better|worse|smoothly|up|down|on|away|out)\b",
    _I,
)
# Habits and what the writer runs or owns: "I use a Mac", "we run Kubernetes", "I teach math".
_HABIT_EN = re.compile(
    r"^" + _SUBJ_ADV_EN + r"(?:use|run|drive|ride|play|practi[cs]e|teach|study|own|manage|lead|coach|volunteer"
    r"|meditate|cycle|swim|commute|rent|fly\s+with|host|maintain|develop|build|write\s+(?:code|software|books|for))"
    r"\s+(?P<o>\S.*)$",
    _I,
)
# What "my … is to X" names is a goal (read by the goal patterns or not at all), never a plain fact.
_GOAL_WORDS_EN = r"goals?|plans?|aim|dream|dreams|objective|ambition|mission|target|resolution|priority|wish"
_MY_X_IS_EN = re.compile(r"^(?:my|our)\s+(?P<x>[\w-]+(?:\s+[\w-]+){0,2}?)\s+(?:is|are|'s)\s+(?P<o>\S.*)$", _I)
_WORK_EN = re.compile(
    r"^i\s+" + _ADV_EN + r"(?:work|'m\s+working|am\s+working)\s+(?:in|from|remotely|part[- ]time|full[- ]time|nights"
    r"|weekends|freelance|night\s+shifts|shifts|on\s+(?:a|an|my))\b(?P<o>.*)$",
    _I,
)


def _fact_en(b: _Body, ctx: _Context) -> list[_Hit]:
    """Other facts about the writer: "I'm a morning person", "I'm married", "I'm learning Spanish", "I
    have two kids / a dog", "I've been painting lately", "I work from home", "my laptop is a ThinkPad";
    past events ("I just got back from Rome", "I applied to adoption agencies") with a lower
    confidence. "My <person> …" is about that person, not the writer: nothing."""
    f, r = b.fold, b.raw
    if _STATUS_EN.match(f):
        m2 = _STATUS_EN.match(f)
        if m2 and _object_ok(f, m2.end(), allow_empty=True):
            return [_fact(b, CONF_FACT)]
        return []
    m = _ARTICLE_FACT_EN.match(f)
    if m:
        ok = not _ARTICLE_BLOCK.match(f, m.start("o")) and _phrase(r, f, m.start("o"), max_words=8) is not None
        return [_fact(b, CONF_FACT)] if ok else []
    m = _HAVE_EN.match(f)
    if m:
        ok = not _HAVE_BLOCK.search(f, m.start("o")) and _phrase(r, f, m.start("o"), max_words=10) is not None
        return [_fact(b, CONF_FACT)] if ok else []
    m = _BEEN_EN.match(f)
    if m:
        tail = _CUT_GOAL_EN.sub("", m.group("o")).strip(" .,!")
        refers = _YOU_EN.search(tail) or _DEICTIC.search(tail)
        ok = not _BEEN_BLOCK.match(m.group("v")) and not refers and len(tail.split()) <= 14
        return [_fact(b, CONF_EVENT)] if ok else []
    m = _WORK_EN.match(f)
    if m and not _YOU_EN.search(m.group("o")):
        return [_fact(b, CONF_FACT)]
    m = _HABIT_EN.match(f)
    if m:
        obj = _phrase(r, f, m.start("o"), max_words=10)
        return [_fact(b, CONF_FACT)] if obj and not _DEICTIC.search(obj) else []
    m = _EVENT_EN.match(f)
    if m:
        obj = _phrase(r, f, m.start("o"), max_words=14)
        return [_fact(b, CONF_EVENT)] if obj and not _DEICTIC.search(obj) else []
    m = _MY_X_IS_EN.match(f)
    if m:
        x = m.group("x").lower()
        if re.search(r"\b(?:" + _PEOPLE_EN + r"|" + _DISCOURSE_EN + r"|" + _GOAL_WORDS_EN + r")\b", x):
            return []
        if re.match(r"^(?:not|no\s+longer|never|n't)\b", m.group("o"), _I) or _GOING.match(m.group("o")):
            return []
        ok = _phrase(r, f, m.start("o"), max_words=10) is not None
        return [_fact(b, CONF_FACT)] if ok else []
    return _activity_en(b)


def _fact(b: _Body, conf: float) -> _Hit:
    """A keyless fact; it may be the reason of a constraint after it in its sentence."""
    return _Hit("fact", _bonus(conf, b), absorbable=True)


# ---------------------------------------------------------------------------------------------------------
# English: what the writer did, does and used to do (conversation)
# ---------------------------------------------------------------------------------------------------------
# Plain reports of the writer's life, tried after every other fact: "I just contacted my mentor", "We went
# biking", "I've finished my thesis", "I'm running for office again", "I was hiking with my kids", "I used
# to compete in dance competitions", "I'm in talks with a sponsor". A verb of thought, feeling, perception
# or speech ("I thought…", "I loved it", "I'm kidding") reports no event; the object must be a thing, not
# "it/that/you"; a negation never passes (no adverb list holds "not"/"never"). Past and ongoing events are
# the loosest reading (``CONF_EVENT``); being part of something is a plain fact.

_PAST_EN = re.compile(
    r"^" + _SUBJ_ADV_EN + r"(?!(?:" + NOT_EVENT_VERBS_EN + r")\b)"
    r"(?P<v>[a-z]+[^e\W]ed|" + PAST_IRREGULAR_EN + r")\b(?!')(?P<o>.*)$",
    _I,
)
_PERFECT_EN = re.compile(
    r"^" + _SUBJ + r"(?:'ve|\s+have)\s+" + _ADV_EN + r"(?!(?:" + NOT_EVENT_VERBS_EN + r")\b)"
    r"(?P<v>[a-z]+[^e\W]ed|" + PARTICIPLE_IRREGULAR_EN + r")\b(?!')(?P<o>.*)$",
    _I,
)
_PROGRESSIVE_EN = re.compile(
    r"^(?:" + _BE + r"|" + _SUBJ + r"\s+(?:was|were))\s+" + _ADV_EN + r"(?!(?:" + NOT_ACTIVITY_EN + r"|about\s+to)\b)"
    r"(?P<v>[a-z]{2,}ing)\b(?!')(?P<o>.*)$",
    _I,
)
_USED_TO_EN = re.compile(
    r"^" + _SUBJ_ADV_EN + r"used\s+to\s+(?!(?:live|be|work|like|love|hate|enjoy|prefer|eat|think|believe|want|have"
    r"|own|feel|know|say|call|get|do|go\s+to\s+(?:work|school))\b)(?P<v>[a-z]+)\b(?P<o>.*)$",
    _I,
)
_INVOLVED_EN = re.compile(
    r"^(?:"
    + _BE
    + r"|"
    + _SUBJ
    + r"(?:'ve|\s+have)\s+"
    + _ADV_EN
    + r"been)\s+"
    + _ADV_EN
    + r"(?:involved\s+(?:in|with)"
    r"|part\s+of|a\s+(?:proud\s+)?member\s+of|in\s+talks\s+with|active\s+in|enrolled\s+in|signed\s+up\s+(?:for|with)"
    r"|registered\s+for|a\s+volunteer\s+(?:at|with|for)|a\s+regular\s+at)\s+(?P<o>\S.*)$",
    _I,
)
# Events whose report needs no object ("I graduated!", "We got married").
_NO_OBJECT_EVENT = re.compile(
    r"^(?:graduated|retired|quit|relocated|resigned|won|moved|got\s+(?:married|engaged|divorced|promoted|hired))$", _I
)
# Objects that make a past form a phrase, not an event: "got lucky", "made a mistake", "went well".
_PAST_OBJECT_BLOCK = re.compile(
    r"\s*(?:lucky|well|badly|wrong|right|home|a\s+mistake|a\s+while|a\s+(?:minute|second|moment)|me|us|him|her"
    r"|some\s+sleep|to\s+bed|crazy|nervous|excited|scared|emotional|sick|upset|mad|tired|bored|curious|carried)\b",
    _I,
)


def _activity_en(b: _Body) -> list[_Hit]:
    """What the writer did, is doing, was doing or used to do, or is part of (see the section above)."""
    f, r = b.fold, b.raw
    m = _INVOLVED_EN.match(f)
    if m:
        obj = _phrase(r, f, m.start("o"), max_words=12)
        return [_fact(b, CONF_FACT)] if obj and not _DEICTIC.search(obj) else []
    for pattern in (_USED_TO_EN, _PERFECT_EN, _PAST_EN, _PROGRESSIVE_EN):
        m = pattern.match(f)
        if not m:
            continue
        if _PAST_OBJECT_BLOCK.match(m.group("o")) or _YOU_EN.search(m.group("o")):
            return []
        if not m.group("o").strip(" .,!"):
            return [_fact(b, CONF_EVENT)] if _NO_OBJECT_EVENT.match(m.group("v")) else []
        obj = _phrase(r, f, m.start("o"), max_words=14)
        return [_fact(b, CONF_EVENT)] if obj and not _DEICTIC.search(obj) else []
    return []


_EN_MATCHERS: tuple[_Matcher, ...] = (
    _labelled,
    _budget_en,
    _limit_en,
    _bare_amount,
    _slots_en,
    _preference_en,
    _constraint_en,
    _decision_en,
    _goal_en,
    _fact_en,
)


# ---------------------------------------------------------------------------------------------------------
# Chinese patterns
# ---------------------------------------------------------------------------------------------------------

_ZH_SUBJ_ADV = r"^(?:" + _ZH_SUBJ + r"|我和[^，,。]{1,6}?都)" + _ZH_ADV

_BUDGET_ZH = [
    re.compile(
        r"^(?:(?:我的|我们的|我们|我|咱们|这次|总)\s*)?(?:总|最高|整体|每月|月|年度|全部)?预算\s*"
        r"(?:是|为|大概是|大概|大约是|大约|在|有|只有|就|差不多|：|:|一共|总共|控制在|不超过|最多|上限是|上限)?"
    ),
    re.compile(
        r"^(?:把|将)?(?:我的|我们的)?预算\s*(?:改成|改为|调整为|调整到|调到|提高到|降到|降低到|变成|换成|增加到|加到|减到|定为|定在|设为|设成)"
    ),
    re.compile(_ZH_SUBJ_ADV + r"(?:最多|只|只能|最多只能|最多能|能|可以|愿意|打算|准备)?(?:花|出|付|承受|拿出)"),
]
_LIMIT_ZH = re.compile(
    r"^(?:"
    + _ZH_SUBJ
    + r"|价格|总价|费用|成本|花费|价钱|回答|回复|篇幅|字数|时长|时间|每次|每天|人数|选项)?[^，,。]{0,6}?"
    r"(?:不超过|不能超过|别超过|不要超过|不得超过|最多|至多|顶多|控制在|限制在|不多于|少于|低于|以内|以下|之内)"
)
_BARE_AMOUNT_ZH = re.compile(
    r"^(?:改成|改为|换成|变成|调到|调整为|调整到|而是|是|应该是|我是说|就|定为)?\s*(?P<amount>(?:[$¥￥]\s?)?[\d.,]+\s?(?:万|千|k|w)?"
    r"\s?(?:元|块钱?|美元|刀)?|[零一二两三四五六七八九十百千万]+\s?(?:元|块钱?)?)\s*(?:吧|了|就行|就好|好了)?$",
    _I,
)
_CHANGE_VERB_ZH = re.compile(r"改成|改为|换成|变成|调到|调整|而是|应该是|我是说|定为")


def _budget_zh(b: _Body, ctx: _Context) -> list[_Hit]:
    """A budget in Chinese: 预算是5000 / 我的预算大概八千 / 预算改成8000 / 我最多能花3000元."""
    for pattern in _BUDGET_ZH:
        m = pattern.match(b.fold)
        if m:
            ctx.numeric_slot = "budget"
            found = _amount(b.fold, m.end())
            if found:
                return [_slot("budget", found[0], b)]
            ctx.denied = bool(_AMOUNT.search(b.fold, m.end()))
            return []
    return []


def _limit_zh(b: _Body, ctx: _Context) -> list[_Hit]:
    """A limit: 最多三个选项 / 回答不超过200字 (soft); the budget when it is money (价格不超过3000元)."""
    m = _LIMIT_ZH.match(b.fold)
    if not m:
        return []
    found = _amount(b.fold)
    if not found:
        return []
    if found[1] or _MONEY_WORD.search(b.fold):
        ctx.numeric_slot = "budget"
        return [_slot("budget", found[0], b)]
    return [_Hit("constraint", _bonus(CONF_LIMIT, b), hard=("不能" in b.fold or "不得" in b.fold))]


_DIET_ZH = re.compile(
    _ZH_SUBJ_ADV + r"(?:是|吃)?(?:一[个名位])?"
    r"(?P<diet>纯素食者|纯素主义者|纯素|素食主义者|素食者|吃素的|素食|吃素|清真|吃清真|穆斯林)(?:的)?$"
)
_LOCATION_ZH = re.compile(
    _ZH_SUBJ_ADV + r"(?:现在|目前)?"
    r"(?:住在|住于|定居在|定居于|定居|生活在|居住在|搬到了|搬到|搬去了|搬去|搬家到了?|现居|常驻|人在|长居)"
    r"\s*(?P<v>[^，,。！!？?]{1,20})$"
)
_HOMETOWN_ZH = [
    re.compile(
        _ZH_SUBJ_ADV + r"(?:来自|出生在|出生于|生在|在(?P<grew>[^，,。]{1,10}?)长大)\s*(?P<v>[^，,。！!？?]{0,20})$"
    ),
    re.compile(r"^我(?:的)?老家(?:是|在)\s*(?P<v>[^，,。！!？?]{1,20})$"),
    re.compile(_ZH_SUBJ_ADV + r"是\s*(?P<v>[\u4e00-\u9fff]{2,6})人$"),
]
_NOT_PLACE_PEOPLE = re.compile(
    r"^(?:普通|年轻|老实|读书|外地|本地|有钱|中年|成年|老年|文化|城里|乡下|外国|单身|过来|自己|局外|内行|外行|明白|聪明|"
    r"残疾|一般|正常|老好|好心|好|坏|男|女|大|小|老|新|熟|穷|富|病|客|主|家|个|一个|这样的|那样的|什么|哪里|这种|那种)"
)
_NAME_ZH = [
    re.compile(r"^我(?:叫做|叫)\s*(?P<v>[^，,。！!？?\s]{1,12})$"),
    re.compile(r"^我的名字(?:是|叫)\s*(?P<v>[^，,。！!？?]{1,20})$"),
    re.compile(r"^(?:你)?(?:可以)?叫我\s*(?P<v>[^，,。！!？?\s]{1,12}?)(?:就行|就好|吧|就可以)?$"),
]
_ROLE_ZH = [
    re.compile(
        _ZH_SUBJ_ADV
        + r"(?:是|当)(?:一名|一个|一位|个|名|位)?\s*(?P<v>[^，,。！!？?]{0,10}?(?:"
        + _OCCUPATIONS_ZH
        + r"))(?:的)?$",
        _I,
    ),
    re.compile(r"^我的(?:工作|职业|职位|岗位)是\s*(?P<v>[^，,。！!？?]{1,16})$"),
    re.compile(_ZH_SUBJ_ADV + r"(?:做|从事|干)\s*(?P<v>[^，,。！!？?]{1,12}?)(?:工作|行业|这一行|这行)$"),
]
_EMPLOYER_ZH = re.compile(_ZH_SUBJ_ADV + r"在\s*(?P<v>[^，,。！!？?]{1,20}?)\s*(?:工作|上班|任职|实习)$")
_ORG_SUFFIX = re.compile(r"(?:公司|集团|银行|大学|学院|医院|研究所|研究院|科技|工作室|事务所|中心|[A-Za-z][\w&.-]*)$")
_LANGUAGE_ZH_RE = [
    re.compile(_ZH_SUBJ_ADV + r"(?:会说|会讲|说|讲|母语是|的母语是)\s*(?P<v>.+)$"),
    re.compile(r"^我的母语是\s*(?P<v>.+)$"),
    re.compile(
        r"^(?:以后|今后|之后|往后|请|都|一直|总是|始终|默认|请你|麻烦)+(?:用|使用)\s*(?P<v>[^，,。]{1,6}?)(?:回答|回复|交流|和我说话|跟我说话|跟我说|沟通|写)"
    ),
    re.compile(_ZH_SUBJ_ADV + r"(?:更)?(?:喜欢|习惯|偏好)(?:用|使用)\s*(?P<v>" + _LANGUAGE_ZH + r")(?:交流|沟通)?$"),
]
_TEAM_ZH = [
    re.compile(
        r"^(?:我们|我的|我们的)?(?:团队|小组|组|部门|公司|项目组)\s*(?:有|一共|总共|只有|就|共|才)*\s*(?P<n>"
        + _ZH_NUMBER
        + r")\s*(?:个|名)?\s*(?:人|成员|开发|工程师)"
    ),
    re.compile(
        r"^我们\s*(?:只有|就|一共|总共|才|有)*\s*(?P<n>"
        + _ZH_NUMBER
        + r")\s*(?:个|名)\s*(?:人|开发|工程师|程序员|员工|运维|测试|成员)"
    ),
]
_AGE_ZH = re.compile(r"^我(?:今年|现在|已经)?\s*(?P<n>\d{1,3}|[一二两三四五六七八九十]{1,3})\s*(?:岁|周岁)(?:了)?$")
_TIMEZONE_ZH = re.compile(
    r"^我(?:这边|在|们)?(?:是|在|用)?\s*(?P<v>东[一二三四五六七八九十]{1,2}区|西[一二三四五六七八九十]{1,2}区|(?:UTC|GMT)\s*[+-]\s*\d{1,2}|北京时间)$",
    _I,
)


def _zh_value(raw: str, fold: str, m: re.Match[str], group: str = "v") -> str | None:
    """A Chinese slot value: the group, trailing particles dropped, not a pronoun."""
    value = fold[m.start(group) : m.end(group)]
    value = _trim(value).strip()
    if not value or _PRONOUN_ZH.match(value) or _ZH_QUESTION.search(value):
        return None
    start = m.start(group) + (
        len(fold[m.start(group) : m.end(group)]) - len(fold[m.start(group) : m.end(group)].lstrip())
    )
    return raw[start : start + len(value)]


def _slots_zh(b: _Body, ctx: _Context) -> list[_Hit]:
    """Slot facts in Chinese: 我是素食者 / 我住在北京 / 我是上海人 / 我来自成都 / 我叫小王 / 我是程序员 /
    我在腾讯工作 / 我说粤语 / 以后用中文回答 / 我们团队5个人 / 我今年30岁."""
    f, r = b.fold, b.raw
    m = _DIET_ZH.match(f)
    if m:
        return [_slot("diet", _DIETS[m.group("diet")], b)]
    m = _LOCATION_ZH.match(f)
    if m:
        place = _zh_value(r, f, m)
        return [_slot("location", _low(place), b)] if place else []
    for i, p in enumerate(_HOMETOWN_ZH):
        m = p.match(f)
        if not m:
            continue
        if i == 0 and m.group("grew"):
            v: str | None = m.group("grew")
        else:
            v = _zh_value(r, f, m)
        if i == 2 and v and _NOT_PLACE_PEOPLE.match(v):
            continue
        return [_slot("hometown", _low(v), b)] if v else []
    hits = _role_zh(b)
    if hits:
        return hits
    for p in _NAME_ZH:
        m = p.match(f)
        if m:
            v = _zh_value(r, f, m)
            if v and not re.match(r"^(?:了|过|车|人|他|她|你|什么|一|个|做|的)", v) and len(v) <= 8:
                return [_slot("name", v.lower(), b)]
            return []
    m = _EMPLOYER_ZH.match(f)
    if m:
        v = _zh_value(r, f, m)
        if v and _ORG_SUFFIX.search(v):
            return [_slot("employer", _low(v), b)]
        return [_fact(b, CONF_FACT)] if v else []
    for p in _LANGUAGE_ZH_RE:
        m = p.match(f)
        if m:
            langs = _languages(m.group("v"))
            return [_slot("language", langs, b)] if langs else []
    for p in _TEAM_ZH:
        m = p.match(f)
        if m:
            ctx.numeric_slot = "team_size"
            n = _number(m.group("n"))
            return [_slot("team_size", n, b)] if n else []
    m = _AGE_ZH.match(f)
    if m:
        age = _number(m.group("n"))
        ctx.numeric_slot = "age"
        return [_slot("age", age, b)] if age and 1 <= age <= 120 else []
    m = _TIMEZONE_ZH.match(f)
    if m:
        return [_slot("timezone", _low(m.group("v")), b)]
    return []


def _role_zh(b: _Body) -> list[_Hit]:
    """A role in Chinese: 我是(一名)程序员 / 我的职业是… / 我做…工作."""
    f, r = b.fold, b.raw
    for p in _ROLE_ZH:
        m = p.match(f)
        if m:
            v = _zh_value(r, f, m)
            if v and not re.match(r"^(?:不|没|说|想|觉得|问)", v):
                return [_slot("role", _low(v), b)]
            return []
    return []


_LIKE_ZH = re.compile(
    _ZH_SUBJ_ADV
    + r"(?:喜欢上了|喜欢|喜爱|热爱|偏爱|偏好|钟爱|钟意|迷上了|爱上了|痴迷于|痴迷|着迷于|爱吃|爱喝|爱看|爱玩|爱听|爱|"
    r"享受|中意|青睐|更倾向于|倾向于)\s*(?P<o>.+)$"
)
_DISLIKE_ZH = re.compile(
    _ZH_SUBJ_ADV
    + r"(?:讨厌|不喜欢|不太喜欢|不怎么喜欢|不爱吃|不爱喝|不爱|受不了|忍受不了|接受不了|受不了|反感|厌恶|嫌弃|痛恨|"
    r"不感兴趣)\s*(?P<o>.+)$"
)
# 我对X(很)感兴趣 / 我对X不(太)感兴趣 / 我对X没兴趣: the object comes before the verb.
_INTEREST_ZH = re.compile(
    _ZH_SUBJ_ADV
    + r"对\s*(?P<o>[^，,。]{1,12}?)\s*(?P<neg>不太|不怎么|不|没什么|没有|没)?\s*(?:很|非常|特别|超级|挺|比较)?"
    r"(?:感兴趣|有兴趣|兴趣)$"
)
_FAVOURITE_ZH = re.compile(_ZH_SUBJ_ADV + r"(?:最喜欢|最爱)的\s*(?P<k>[^是，,。]{1,10}?)\s*(?:是|就是)\s*(?P<o>.+)$")
_FAVOURITE_ZH_2 = re.compile(r"^(?P<o>[^，,。是]{1,16}?)\s*是我(?:们)?的最爱$")
# 我是(个)(超级/忠实)X迷 / X的粉丝 / X爱好者: a liking said as who one is.
_FAN_ZH = re.compile(
    _ZH_SUBJ_ADV + r"(?:一个|一名|个|名)?(?:超级|忠实|铁杆|资深|狂热|十足的|骨灰级)?(?:的)?\s*"
    r"(?P<o>[^，,。的是]{1,10}?)\s*(?:迷|的粉丝|粉丝|爱好者|发烧友)$"
)


def _preference_zh(b: _Body, ctx: _Context) -> list[_Hit]:
    """A preference in Chinese: 我(很/更/最)喜欢/爱/偏好X → like; 我讨厌/不喜欢/受不了X → dislike;
    我最喜欢的X是Y → like Y (keyed by X)."""
    f, r = b.fold, b.raw
    m = _FAVOURITE_ZH.match(f)
    if m:
        obj = _phrase(r, f, m.start("o"), max_words=6, preference=True)
        if not obj:
            return []
        key = "favorite-" + slug(m.group("k"))
        return [
            _Hit(
                "preference",
                _bonus(CONF_PREFERENCE, b),
                profile=_profile("preference", obj, key=key[:_MAX_PROFILE_KEY]),
            )
        ]
    m = _FAVOURITE_ZH_2.match(f)
    if m:
        obj = r[m.start("o") : m.end("o")].strip()
        return (
            [_Hit("preference", _bonus(CONF_PREFERENCE, b), profile=_profile("preference", obj))]
            if obj and not _PRONOUN_ZH.match(obj)
            else []
        )
    m = _FAN_ZH.match(f)
    if m and "是" in f[: m.start("o")]:
        obj = r[m.start("o") : m.end("o")].strip()
        if len(obj) >= 2 and not _PRONOUN_ZH.match(obj):
            return [_Hit("preference", _bonus(CONF_PREFERENCE, b), profile=_profile("preference", obj))]
        return []
    m = _INTEREST_ZH.match(f)
    if m:
        obj = _zh_value(r, f, m, "o")
        polarity: Polarity = "dislike" if m.group("neg") else "like"
        return (
            [_Hit("preference", _bonus(CONF_PREFERENCE, b), profile=_profile("preference", obj, polarity))]
            if obj
            else []
        )
    m = _DISLIKE_ZH.match(f)
    if m:
        obj = _zh_object(r, f, m.start("o"))
        return (
            [_Hit("preference", _bonus(CONF_PREFERENCE, b), profile=_profile("preference", obj, "dislike"))]
            if obj
            else []
        )
    m = _LIKE_ZH.match(f)
    if m:
        obj = _zh_object(r, f, m.start("o"))
        return [_Hit("preference", _bonus(CONF_PREFERENCE, b), profile=_profile("preference", obj))] if obj else []
    return []


def _zh_object(raw: str, fold: str, start: int) -> str | None:
    """A Chinese object phrase: up to a conjunction, trailing particles dropped, not a pronoun and not a
    relative clause ("我喜欢的…")."""
    rest = fold[start:]
    if rest.startswith("的"):
        return None
    return _phrase(raw, fold, start, max_words=6, preference=True)


_PROHIBIT_ZH = re.compile(
    r"^(?:请你|请您|请|麻烦你|麻烦|拜托你|拜托|你们|你|您|以后|今后|之后|永远|再也|也|都|就|千万|一定|绝对|务必|"
    + _ZH_SUBJ
    + r")*\s*"
    r"(?P<soft>尽量|最好|尽可能)?\s*(?:千万别|千万不要|千万不能|绝对不要|绝对不能|绝对别|一定不要|一定别|永远不要|永远别|不要再|别再|"
    r"不要|别|不能|不可以|不许|不准|禁止|严禁|切勿|勿|不得|避免|不应该|不该|少)\s*(?P<o>.+)$"
)
_PHATIC_ZH = re.compile(
    r"^(?:担心|客气|急|着急|怕|紧|在意|介意|难过|伤心|生气|谢|管|提了|说了|忘了|忘记|灰心|放弃|想太多|多想|太累|累着|误会|"
    r"闹|哭|笑|骗我|开玩笑|废话|理我|打扰|逗|说笑|瞎说|乱说|这样|那样|这么|那么|说|再说|太|着凉|熬夜了|嫌弃|见外)"
)
_FIRST_PERSON_NO_ZH = re.compile(
    _ZH_SUBJ_ADV + r"(?:不能|不可以|不允许|不准|不许|没法|无法|不|从不|从来不|绝不)\s*"
    r"(?P<verb>吃|喝|用|使用|碰|抽|沾|接受|上|装|安装|部署|依赖|超过|花|付|加班|熬夜|坐|开|买|选|考虑|引入|迁移|穿|养|去|出差|喝酒|"
    r"吸烟|抽烟|碰|处理|跑|运行|承担|推荐)\s*(?P<o>.*)$"
)
_MUST_ZH = re.compile(
    _ZH_SUBJ_ADV
    + r"(?:必须|一定要|务必|只能|只可以|只用)\s*(?P<o>.+)$|^(?:必须|务必|一定要|请务必|请一定)\s*(?P<o2>.+)$"
)
_ALLERGY_ZH = re.compile(_ZH_SUBJ_ADV + r"(?:对\s*(?P<o>[^，,。]{1,12}?)\s*过敏|(?:有)?(?P<o2>[^，,。]{1,12}?)过敏)")


def _constraint_zh(b: _Body, ctx: _Context) -> list[_Hit]:
    """A constraint in Chinese: 别/不要/不能/禁止/千万别/不可以… (hard), 尽量不要/最好别 (soft), 我不吃辣 /
    我们不能用AWS / 必须用PostgreSQL (hard), 我对花生过敏 (hard). 别担心/不客气 are not constraints."""
    f = b.fold
    m = _ALLERGY_ZH.match(f)
    if m:
        return [_hard(b)]
    m = _FIRST_PERSON_NO_ZH.match(f)
    if m:
        o = _trim(m.group("o")).strip()
        # 我不吃素了 is "no longer vegetarian", a diet that stopped, not a food to avoid
        if not o or _PRONOUN_ZH.match(o) or _PHATIC_ZH.match(o) or o in ("素", "素食"):
            return []
        return [_hard(b)]
    m = _MUST_ZH.match(f)
    if m:
        o = (m.group("o") or m.group("o2") or "").strip()
        return [_hard(b)] if o and not _PRONOUN_ZH.match(o) and not o.startswith(("说", "承认")) else []
    m = _PROHIBIT_ZH.match(f)
    if m:
        o = m.group("o").strip()
        if o and re.fullmatch(r"(?:推荐|用|选|吃|给我推荐|建议)?(?:它们|它|这些|那些|这类|那类)", o):
            return [replace(_hard(b), follows=True)]
        if not o or _PHATIC_ZH.match(o) or _PRONOUN_ZH.match(o) or len(o) < 2:
            return []
        if m.group("soft"):
            return [_Hit("constraint", _bonus(CONF_LIMIT, b), hard=False)]
        return [_hard(b)]
    return _requirement_zh(b)


# A requirement on a thing: 笔记本的重量必须不超过1.5公斤 / 接口不能返回空值. The subject is not a person
# (他必须…, 我朋友不能…) and not a bare "this/that" (这个不能吃: about the thing at hand).
_REQUIREMENT_ZH = re.compile(
    r"^(?P<subj>[^，,。！!？?]{1,14}?)\s*(?:必须|务必|一定要|不能|不可以|不得|不准|不许|不应该|不允许)\s*(?P<o>\S.*)$"
)
_NOT_A_THING_ZH = re.compile(r"^(?:他|她|它|你|您|我|咱|大家|别人|有人|人们|谁|这|那|这个|那个|这些|那些)")


def _requirement_zh(b: _Body) -> list[_Hit]:
    """A requirement on a thing in Chinese (hard)."""
    m = _REQUIREMENT_ZH.match(b.fold)
    if not m or _NOT_A_THING_ZH.match(m.group("subj")) or re.search(_PEOPLE_ZH, m.group("subj")):
        return []
    o = m.group("o").strip()
    return [] if _PHATIC_ZH.match(o) or _PRONOUN_ZH.match(o) else [_hard(b)]


_DECISION_ZH = [
    re.compile(
        r"^(?:" + _ZH_SUBJ + r")?(?:就|那就|那我们就|那我就|还是|最终|最后|干脆|就决定)\s*"
        r"(?:用|选|定|买|要|选择|采用|订|换成|上|去)\s*(?P<o>.+)$"
    ),
    re.compile(
        r"^(?:" + _ZH_SUBJ + r")?(?:已经|最终|最后|终于)?(?:决定|确定|选定|敲定|拍板)(?:了)?\s*"
        r"(?:用|选|买|去|要|采用|选择|做|上)?\s*(?P<o>.+)$"
    ),
    re.compile(r"^(?:就|那就)?(?:这么|这样)?(?:定了|决定了)[，,\s]*(?:用|选|买|采用|选择|就用|就选)?\s*(?P<o>.+)$"),
    re.compile(r"^(?:" + _ZH_SUBJ + r")?(?:选|用|定)\s*(?P<o>[^，,。]{1,20}?)\s*吧$"),
]


def _decision_zh(b: _Body, ctx: _Context) -> list[_Hit]:
    """A decision in Chinese: 就用X / 那就选X / 我决定用X / 定了，X / 用X吧."""
    f, r = b.fold, b.raw
    for p in _DECISION_ZH:
        m = p.match(f)
        if m:
            obj = _phrase(r, f, m.start("o"), max_words=8)
            if obj and not re.match(r"^(?:不|没|了|吧|好|是)", obj):
                return [_Hit("decision", _bonus(CONF_DECISION, b))]
            return []
    return []


_GOAL_ZH = re.compile(
    _ZH_SUBJ_ADV + r"(?P<verb>准备好了要|准备好要|准备好了|准备好|在考虑|正在考虑|考虑|想要|想|要|打算|计划|准备|希望|"
    r"梦想着|梦想|一直想|正在努力|努力|争取|需要|渴望|立志|决心)\s*(?P<o>.+)$"
    r"|^(?:我的|我们的)?(?:目标|计划|梦想|愿望|心愿|理想|小目标)(?:是|就是|：|:)\s*(?P<o2>.+)$"
)
_GOAL_BLOCK_ZH = re.compile(
    r"^(?:知道|问|请教|说|确认|了解一下|看看|听听|请你|让你|麻烦|你|您|他|她|它|这|那|应该|可能|大概|也许|是|的话|起来|到|清楚|"
    r"一下|去厕所|上厕所|睡觉|想|吐|哭|死|帮助|帮忙|回家|走|吃饭|休息|说明|强调|补充|提醒|感谢|谢谢|分享|告诉|表达|问问|"
    r"一杯|一份|一碗|一瓶|一个|两个|点|个|好|完|就绪)"
)


def _goal_zh(b: _Body, ctx: _Context) -> list[_Hit]:
    """A goal in Chinese: 我想/我要/我打算/我计划/我希望/我们需要X, 我的目标是X. Not 我想知道 (a
    request), 我想他… (I think), 我要一杯咖啡 (an order), 我要走了 (an imminent act)."""
    f, r = b.fold, b.raw
    m = _GOAL_ZH.match(f)
    if not m:
        return []
    group = "o" if m.group("o") is not None else "o2"
    o = m.group(group).strip()
    if _GOAL_BLOCK_ZH.match(o) and group == "o":
        return []
    if m.group("verb") in ("要", "想要") and o.rstrip(_TRAIL_CHARS + "啊呀吧").endswith("了"):
        return []
    obj = _phrase(r, f, m.start(group), max_words=14)
    return [_Hit("goal", _bonus(CONF_GOAL, b), profile=_profile("goal", obj))] if obj else []


_FACT_ZH = [
    re.compile(
        _ZH_SUBJ_ADV + r"(?:有|养了|养着|养|有了)\s*(?:一|两|二|三|四|五|六|七|八|九|十|几|\d{1,3})\s*"
        r"(?:个|只|条|位|台|辆|套|名|家|所|匹|头)\S+"
    ),
    re.compile(_ZH_SUBJ_ADV + r"(?:在|正在)(?:" + ACTIVITY_VERBS_ZH + r")\S+"),
    re.compile(
        r"^我(?:们)?(?:刚|刚刚|最近|上周|上个月|昨天|前几天|今年|去年|已经|也|还|终于|之前|一起)*"
        r"(?:" + EVENT_VERBS_ZH + r")\S*"
    ),
    re.compile(_ZH_SUBJ_ADV + r"是(?:一个|一名|一位|个|名|位)?\s*(?P<np>[^，,。！!？?]{1,12})$"),
]
# 我以前经常去健身房 / 我小时候学过钢琴: a habit or an episode of the writer's past (a past state, 我以前住在北京
# / 我以前是老师, says nothing true now, and a negation nothing at all).
_HABIT_PAST_ZH_RE = re.compile(
    r"^我(?:们)?" + HABIT_PAST_ZH + r"(?:经常|常常|常|总是|也|还|一直|每周|每天|每年|天天)*"
    r"(?!是|住|在\S{0,12}(?:工作|上班)|不|没|喜欢|爱|讨厌|觉得|以为|想|认为|也是)(?P<o>[^，,。！!？?]{2,})$"
)
_MY_X_IS_ZH = re.compile(r"^我(?:们)?的(?P<x>[^，,。是]{1,8})是\s*(?P<o>.+)$")
_NP_BLOCK_ZH = re.compile(
    r"^(?:说|想|觉得|问|不是|否|真的|在问|来|要|因为|为了|这样|那样|这么|那么|故意|开玩笑|随便|对的|错的|认真的|的)"
)


def _fact_zh(b: _Body, ctx: _Context) -> list[_Hit]:
    """Other facts in Chinese: 我有两个孩子 / 我养了一只猫 / 我在学日语 / 我刚搬到了… / 我是新手 / 我的电脑是
    MacBook. "我的<person>…" is about that person: nothing."""
    f = b.fold
    for i, p in enumerate(_FACT_ZH):
        m = p.match(f)
        if not m:
            continue
        if i == 3:
            np_ = m.group("np")
            if _NP_BLOCK_ZH.match(np_) or _PRONOUN_ZH.match(np_) or _ZH_QUESTION.search(np_):
                return []
        return [_fact(b, CONF_EVENT if i == 2 else CONF_FACT)]
    m = _HABIT_PAST_ZH_RE.match(f)
    if m:
        return [] if _PRONOUN_ZH.match(m.group("o")) else [_fact(b, CONF_EVENT)]
    m = _MY_X_IS_ZH.match(f)
    if m:
        x = m.group("x")
        if re.search(_PEOPLE_ZH, x) or re.match(r"^(?:意思|问题|想法|建议|看法|观点|理解|错|猜测|疑问)", x):
            return []
        o = m.group("o").strip()
        return [_fact(b, CONF_FACT)] if o and not _PRONOUN_ZH.match(o) and not o.startswith("不") else []
    return []


_ZH_MATCHERS: tuple[_Matcher, ...] = (
    _labelled,
    _budget_zh,
    _limit_zh,
    _bare_amount,
    _slots_zh,
    _preference_zh,
    _constraint_zh,
    _decision_zh,
    _goal_zh,
    _fact_zh,
)


# ---------------------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------------------


def _body(text: str, fold: str, s: int, e: int, lead: str, correction: bool) -> _Body:
    """The clause as the patterns read it, "not X but Y" / 不是X而是Y read as "Y"."""
    f, r = fold[s:e], text[s:e]
    m = _NOT_BUT_EN.search(f) or _NOT_BUT_ZH.search(f)
    if m:
        glue = "是" if m.group().startswith("不是") else ""
        f = f[: m.start()] + glue + f[m.end() :]
        r = r[: m.start()] + glue + r[m.end() :]
        correction = True
    f, r = _subject(f, r, lead)
    return _Body(fold=f, raw=r, lead=lead, correction=correction or bool(_CORRECTION.search(lead)))


def _subject(f: str, r: str, lead: str) -> tuple[str, str]:
    """The clause with the subject the patterns expect: "my wife and I" / 我和我老婆 → "we" / 我们; a first
    person left out ("Love hiking", "Just got a puppy") put back. ``f`` and ``r`` change alike, so offsets
    between them stay valid (the quote is taken from the text, never from them)."""
    m = _WE_SUBJECT_EN.match(f) or _WE_SUBJECT_NAME.match(f) or _WE_SUBJECT_ZH.match(f)
    if m:
        we = "我们" if f.startswith("我") else "we"
        return we + f[m.end() :], we + r[m.end() :]
    if f[:1].isascii() and f[:1].isalpha():
        just = bool(re.search(r"\bjust\s*$", lead, _I))
        m = _ELLIDED_EN.match(("just " + f) if just else f)
        if m:
            lead_in = "i " if m.group("like") or m.group("past") else "i've " if m.group("been") else "i'm "
            return lead_in + f, lead_in + r
    return f, r


def _classify(b: _Body, ctx: _Context) -> tuple[_Hit, ...]:
    """The hits of the first matcher that recognises the clause."""
    matchers = _ZH_MATCHERS if _CJK.match(b.fold) else _EN_MATCHERS
    for matcher in matchers:
        hits = matcher(b, ctx)
        if hits:
            return tuple(hits)
    return ()


def _in_span(pos: int, spans: list[tuple[int, int]]) -> bool:
    """Whether ``pos`` lies in one of ``spans``."""
    return any(s <= pos < e for s, e in spans)


def _sentence_clauses(
    text: str, fold: str, work: str, span: tuple[int, int], quotes: list[tuple[int, int]], ctx: _Context
) -> list[_Clause]:
    """The clauses of one sentence, classified, with the filters applied."""
    s0, e0 = span
    mood = _mood(work[s0:e0])
    if mood == "hypothetical":
        return []
    ends_q = bool(_ENDS_QUESTION.search(work, s0, e0))
    pieces = _pieces(work, s0, e0)
    clauses: list[_Clause] = []
    correction_next = False
    reported = False
    for i, (ps, pe) in enumerate(pieces):
        s, e, lead = _strip_lead(work, ps, pe)
        last = i == len(pieces) - 1
        piece_q = bool(_QUESTION_MARK.search(work, e, pe)) or (last and ends_q)
        if s >= e:  # only filler: a marker clause
            correction_next = correction_next or bool(_CORRECTION.search(lead))
            continue
        timed = _TIME_LEAD.match(work, s, e)
        body = _body(text, fold, timed.end() if timed else s, e, lead, correction_next)
        correction_next = False
        clause = _Clause(start=s, end=e, body=body)
        clause.question = _is_question(body.fold, piece_q)
        clause.blocked = reported or _in_span(s, quotes)
        colon = bool(_COLON_NEXT.match(work, pe, pe + 2))
        if not last and (
            _is_frame(body.fold)
            or (colon and _FRAME_VERB.search(body.fold) and not _FIRST_PERSON_START.match(body.fold))
        ):
            reported = True
            clause.blocked = True
        clauses.append(clause)
    if not clauses:
        return []
    if ends_q and (clauses[0].question or _TAG.match(clauses[-1].body.fold)):
        return []
    if len(clauses) > 1 and _is_frame(clauses[-1].body.fold):
        return []
    for clause in clauses:
        if clause.blocked or clause.question:
            continue
        hits = _classify(clause.body, ctx)
        if mood == "assistant_condition":
            hits = tuple(h for h in hits if h.type == "constraint" and h.key is None)
        clause.hits = hits
    return clauses


def _records(text: str, clauses: list[_Clause]) -> Iterator[tuple[int, int, _Hit]]:
    """(start, end, hit) for a sentence's clauses: a run of keyless constraint clauses is one record, its
    span reaching back over the clauses before it that state nothing else (the constraint's reason); a
    rule about "them" only continues a run ("I'm allergic to peanuts, never suggest them"), alone it is
    about the task at hand and says nothing."""
    i = 0
    while i < len(clauses):
        c = clauses[i]
        hit = c.hits[0] if c.hits else None
        if hit is None or not _is_rule(hit) or hit.follows:
            for h in c.hits:
                if not h.follows and (not h.absorbable or not _absorbed(clauses, i)):
                    yield c.start, c.end, h
            i += 1
            continue
        j = i
        hard = False
        conf = 0.0
        while j < len(clauses) and clauses[j].hits and _is_rule(clauses[j].hits[0]):
            hard = hard or clauses[j].hits[0].hard
            conf = max(conf, clauses[j].hits[0].confidence)
            j += 1
        k = i
        while k > 0 and _reason(clauses[k - 1]):
            k -= 1
        start, end = clauses[k].start, clauses[j - 1].end
        if end - start > MAX_QUOTE_CHARS:
            start = c.start
        if end - start <= MAX_QUOTE_CHARS:
            yield start, end, replace(hit, hard=hard, confidence=conf)
        i = j


def _is_rule(hit: _Hit) -> bool:
    """A keyless constraint: what a run of constraint clauses is made of (a budget is a slot)."""
    return hit.type == "constraint" and hit.key is None


def _reason(c: _Clause) -> bool:
    """A clause that may be a constraint's reason: it says nothing of its own, or only a keyless fact."""
    if c.blocked or c.question:
        return False
    return not c.hits or all(h.absorbable for h in c.hits)


def _absorbed(clauses: list[_Clause], i: int) -> bool:
    """Whether clause ``i`` (a keyless fact) is the reason of a constraint run after it in the sentence."""
    for c in clauses[i + 1 :]:
        if c.hits and _is_rule(c.hits[0]) and not c.hits[0].follows:
            return True
        if not _reason(c):
            return False
    return False


def extract(text: str, *, message_index: int = 0) -> list[Proposal]:
    """The records one user message states about its writer, in the order said (see the module's
    docstring for the rules). Every quote is a span of ``text``; within the message the last statement of
    a slot is the one proposed."""
    if not text or not text.strip():
        return []
    text = text.replace("\x00", " ") if "\x00" in text else text
    fold = text.translate(_FOLD)
    work, quotes = _masked(fold)
    ctx = _Context()
    found: list[tuple[int, int, _Hit]] = []
    for span in _sentences(work):
        clauses = _sentence_clauses(text, fold, work, span, quotes, ctx)
        found.extend(_records(text, clauses))
    return _proposals(text, found, message_index)


def _proposals(text: str, found: list[tuple[int, int, _Hit]], message_index: int) -> list[Proposal]:
    """Proposals from the hits: of each slot only its last statement (the user corrected themselves
    before sending), and one record per (type, quote, slot) — the same words said twice are one record."""
    last_of_slot = {h.key: n for n, (_, _, h) in enumerate(found) if h.key is not None}
    seen: set[tuple[str, str, str | None]] = set()
    out: list[Proposal] = []
    for n, (s, e, h) in enumerate(found):
        quote = text[s:e].strip()
        if not quote or (h.key is not None and last_of_slot[h.key] != n) or (h.type, quote, h.key) in seen:
            continue
        seen.add((h.type, quote, h.key))
        out.append(
            Proposal(
                message_index=message_index,
                type=h.type,
                quote=quote,
                key=h.key,
                value=h.value,
                hard=h.hard,
                confidence=h.confidence,
                profile=h.profile,
            )
        )
    return out
