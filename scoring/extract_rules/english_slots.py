"""English patterns of the ``rules`` extractor (``scoring/extract_rules/``), first part: budget, limits and
the slot facts (``SLOTS``). Pure: standard library only, no state."""

from __future__ import annotations

import re

from scoring.extract_rules.records import _I, CONF_LIMIT, _Body, _Context, _Hit, _slot
from scoring.extract_rules.values import (
    _NUMBER,
    _PRONOUN_EN,
    _YOU_EN,
    _amount,
    _budget_after,
    _low,
    _number,
    _trim,
)
from scoring.extract_rules.vocabulary import (
    _ADV_EN,
    _BE,
    _DIET_EN,
    _DIETS,
    _LANGUAGE_EN,
    _LANGUAGE_ZH,
    _LANGUAGES,
    _OCCUPATIONS_EN,
    _SUBJ,
    _SUBJ_ADV_EN,
)

# ---------------------------------------------------------------------------------------------------------
# English patterns
# ---------------------------------------------------------------------------------------------------------


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
    return _budget_after(_BUDGET_EN, b, ctx)


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
