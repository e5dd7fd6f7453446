"""How the ``rules`` extractor (``scoring/extract_rules/``) cuts a message: code, quoted lines and pasted
dialogue masked; sentences, clauses and the filler before them; and the filters on what a clause may state:
hypotheses, questions, reported speech and hearsay. Pure: standard library only, no state."""

# Chinese full-width punctuation (，。：！？) is what this module reads: it is not a typo for ASCII.
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

import re
from collections.abc import Iterator

from scoring.extract_rules.lexicon import (
    NOT_EVENT_VERBS_EN,
    OPENER_EN,
    OPENER_ZH,
    PAST_IRREGULAR_EN,
    TIME_LEAD_EN,
    TIME_LEAD_ZH,
)
from scoring.extract_rules.records import _I
from scoring.extract_rules.values import _CJK
from scoring.extract_rules.vocabulary import _LABEL

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
