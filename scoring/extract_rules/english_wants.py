"""English patterns of the ``rules`` extractor (``scoring/extract_rules/``), second part: what the writer
wants: preferences, constraints (prohibitions, limits, requirements), decisions and goals. Pure: standard
library only, no state."""

from __future__ import annotations

import re
from dataclasses import replace

from scoring.extract_rules.clauses import _FRAME_VERB
from scoring.extract_rules.english_slots import _MONEY_WORD
from scoring.extract_rules.lexicon import (
    QUALITY_NOUNS_EN,
)
from scoring.extract_rules.records import (
    _I,
    CONF_DECISION,
    CONF_GOAL,
    CONF_LIMIT,
    CONF_PREFERENCE,
    _Body,
    _bonus,
    _Context,
    _hard,
    _Hit,
    _slot,
)
from scoring.extract_rules.values import _PRONOUN_EN, _YOU_EN, _amount, _phrase, _profile, slug
from scoring.extract_rules.vocabulary import _ADV_EN, _BE, _PEOPLE_EN, _SUBJ, _SUBJ_ADV_EN
from scoring.extraction import Polarity

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
