"""English patterns of the ``rules`` extractor (``scoring/extract_rules/``), last part: other facts and what
the writer did, does and used to do; and the order in which the English patterns are tried. Pure: standard
library only, no state."""

from __future__ import annotations

import re

from scoring.extract_rules.english_slots import _budget_en, _limit_en, _slots_en
from scoring.extract_rules.english_wants import (
    _DEICTIC,
    _constraint_en,
    _decision_en,
    _goal_en,
    _object_ok,
    _preference_en,
)
from scoring.extract_rules.fields import _bare_amount, _labelled
from scoring.extract_rules.lexicon import (
    NOT_ACTIVITY_EN,
    NOT_EVENT_VERBS_EN,
    PARTICIPLE_IRREGULAR_EN,
    PAST_IRREGULAR_EN,
)
from scoring.extract_rules.records import _I, CONF_EVENT, CONF_FACT, _Body, _Context, _fact, _Hit, _Matcher
from scoring.extract_rules.values import _CUT_GOAL_EN, _YOU_EN, _phrase
from scoring.extract_rules.vocabulary import _ADV_EN, _BE, _DISCOURSE_EN, _PEOPLE_EN, _SUBJ, _SUBJ_ADV_EN

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
