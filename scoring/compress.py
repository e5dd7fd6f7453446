"""Compression levels of an item (docs/design.md §3.6 step 4), derived deterministically at write time.

L0 original · L1 condensed · L2 summary · L3 key fields · L4 index line. A client's own ``variants``
(condensed, summary, index) are used when given; otherwise the texts below are derived. Each level is at
most as long as the one before (``monotone``), so raising an item's level never costs tokens.

L1 and L2 are extractive: the text is cut into sentences (:func:`split_sentences`), each sentence is weighed
(:func:`weigh`: filler and repeats weigh 0, the others 1 plus points for what they carry — numbers and dates,
negations and limits, hedges, decisions and reasons, names), and :func:`condense` keeps the heaviest whole
sentences that fit, in their original order. Nothing is rewritten, so a kept sentence keeps its own hedge;
and a hedged sentence is never left out while a later sentence of its paragraph is kept (the hedge rule),
so a compressed text never states as certain what the original only supposed. :func:`focus` makes the same
choice at request time within a token budget, preferring the sentences that share words with the query.
"""

# ruff: noqa: RUF001, RUF002, RUF003 - Chinese punctuation and curly quotes are what this module splits and matches on.
from __future__ import annotations

import functools
import json
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

# Derived versions keep at most this share of the original's characters. L1 keeps 60 %: filler and repeats
# go first, then the lightest sentences, so most of what carries meaning stays. L2 keeps 30 % (at least 60
# characters, at most 400): the few heaviest sentences, a summary a reader takes in at a glance.
L1_SHARE = 0.6
L2_SHARE = 0.3
L2_MIN_CHARS = 60
L2_MAX_CHARS = 400
L3_MAX_FIELDS = 8
L3_MAX_VALUE_CHARS = 40
L3_MAX_CHARS = 160
# Items this short are already as small as a derived version would be.
SHORT_CHARS = 120
# A sentence is a repeat (it says again what the text said) when at least 80 % of its content words are in
# one of the 50 sentences before it — the bound keeps long texts linear. Chinese has no spaces to find words
# by: there a repeat is a sentence of at least 4 characters each of whose clauses is one said before.
REPEAT_COVERAGE = 0.8
REPEAT_LOOKBACK = 50
REPEAT_MIN_CHARS = 4
# A sentence that opens with greetings, thanks or interjections is filler when what follows them carries
# nothing (no number, negation, hedge, reason or name) and is at most 4 words (2 Chinese characters a word).
FILLER_REST_WORDS = 4
# Points a sentence earns per kind of content it carries (each kind counted once); every non-filler
# sentence starts at 1. Numbers and negations change what a statement means, so they weigh most.
POINTS = {"num": 3, "neg": 3, "hedge": 2, "reason": 2, "name": 2}
# condense never cuts a sentence to fewer characters than this to make room for its marker.
MIN_BODY_CHARS = 12
# condense weighs the sentences of a text's first 3000 characters only (about 50 sentences): the rest is left
# out of L1 and L2 (the marker counts it). Ingest pays for every item's levels, and a long tool result
# would otherwise cost milliseconds; its start is what its L1 and L2 showed before too.
ANALYSE_MAX_CHARS = 3000

_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s*")


def _cut(text: str, max_chars: int) -> str:
    """The start of ``text`` up to ``max_chars``, at a space if one is in its last 40 % (not stripped)."""
    cut = text[:max_chars]
    space = cut.rfind(" ")
    if space >= max_chars * 0.6:
        cut = cut[:space]
    return cut


def _marker(left: int) -> str:
    return f" …[+{left} chars]"


@functools.lru_cache(maxsize=4096)
def _weighed(content: str) -> tuple[tuple[str, ...], tuple[Weight, ...]]:
    """:func:`weigh`, remembered: the same items are focused turn after turn."""
    sentences, weights = weigh(content)
    return tuple(sentences), tuple(weights)


def focused(content: str, query: frozenset[str], *, max_tokens: int, count: Callable[[str], int]) -> str | None:
    """The text of ``content`` to show for a query (:func:`query_terms`) within about ``max_tokens``: the
    sentences :func:`focus` picks, joined, with the marker saying how much was left out; ``None`` when no
    sentence shares a word with the query (the stored level is as good) or nothing fits. A JSON text is never
    cut into sentences."""
    if not query or content.lstrip().startswith(("{", "[")):
        return None
    sentences, weights = _weighed(content)
    if len(sentences) < 2 or not any(terms(s) & query for s in sentences):
        return None
    whole = content.strip()
    room = max_tokens - count(_marker(len(whole)))
    picked = focus(sentences, weights, query, max_tokens=room, tokens=[count(s) for s in sentences])
    if not picked:
        return None
    text = join_sentences(sentences, picked)
    return text if len(text) >= len(whole) else text + _marker(len(whole) - len(text))


def truncate(text: str, max_chars: int) -> str:
    """Cut at a word boundary at or before ``max_chars`` and say how much was left out."""
    if len(text) <= max_chars:
        return text
    cut = _cut(text, max_chars)
    return cut.rstrip() + _marker(len(text) - len(cut))


def first_sentences(text: str, max_chars: int) -> str:
    """Whole leading sentences up to ``max_chars`` (at least the first one, truncated if it is longer)."""
    parts = [p for p in _SENTENCE_END.split(text.strip()) if p]
    out = ""
    for p in parts:
        candidate = f"{out} {p}".strip() if out else p
        if len(candidate) > max_chars:
            break
        out = candidate
    if not out:
        return truncate(text, max_chars)
    left = len(text) - len(out)
    return out if left <= 0 else out + _marker(left)


# --- sentences -------------------------------------------------------------------------------------------


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff"
# A sentence end (. ! ? … 。！？；, repeated, with the quotes or brackets closing on it) or a newline, with the
# whitespace after it. Whether it ends a sentence is decided in _breaks.
_BREAK = re.compile(r"([.!?…。！？；\n][.!?…。！？；\"'”’)\]）」』》]*\s*)")
_CJK_ENDS = frozenset("。！？；")
_ENDS = frozenset(".!?…")
# Quoted passages (on one line, up to 300 characters): a sentence does not end inside one.
_QUOTED = re.compile(r"\"[^\"\n]{1,300}\"|“[^”\n]{1,300}”|「[^」\n]{1,300}」|『[^』\n]{1,300}』")
_OPENERS = "(\"'“‘["
# After these a period never ends the sentence ("Dr. Smith", "e.g. Redis") ...
_NEVER_ENDS = _wordset("mr mrs ms dr prof sr jr st vs e.g i.e eg ie cf viz approx fig dept gen col capt lt sgt rev mt")
# ... after these it does unless the next word starts in lower case ("etc. Then" ends, "10 a.m. today" not);
# so does any dotted word (U.S., example.com) ...
_ENDS_BEFORE_CAPITAL = _wordset("etc a.m p.m inc ltd co corp al")
# ... and after these not when a number follows ("No. 5", "Jan. 12").
_NOT_BEFORE_NUMBER = _wordset("no nos vol p pp ch sec art ver jan feb mar apr jun jul aug sep sept oct nov dec")
_SPECIAL = _NEVER_ENDS | _ENDS_BEFORE_CAPITAL | _NOT_BEFORE_NUMBER


def _is_cjk(c: str) -> bool:
    return "\u3400" <= c <= "\u9fff" or "\u3040" <= c <= "\u30ff" or "\uf900" <= c <= "\ufaff"


def _period_ends(before: str, nxt: str, line_start: bool) -> bool:
    """Whether a period after the text ``before``, followed by whitespace and then ``nxt``, ends a sentence
    (``line_start``: the word before the period opens a line)."""
    word = before[before.rfind(" ") + 1 :]
    if "\n" in word or "\t" in word:
        word = word.replace("\t", "\n").rsplit("\n", 1)[1]
        line_start = True
    if word[:1] in _OPENERS:
        word = word.lstrip(_OPENERS)
    if not word:
        return True
    if word.isdigit():  # "1. " opening a line is a list number; "Then 1. item" goes on
        return not nxt.islower() and not (len(word) <= 3 and (line_start or len(before) == len(word)))
    low = word.lower()
    if low not in _SPECIAL:
        if "." in word:  # U.S., example.com
            return not nxt.islower()
        return len(word) != 1 or not word.isupper() or word == "I"  # "J. Smith"
    if low in _NEVER_ENDS:
        return False
    if low in _NOT_BEFORE_NUMBER and nxt.isdigit():
        return False
    return low not in _ENDS_BEFORE_CAPITAL or not nxt.islower()


# Ends that need no second look — but a period after a word of under 5 letters (it may be "Dr.", "etc.",
# "J.", "1.") goes to _period_ends.
_PLAIN_ENDS = frozenset(
    f"{end}{ws}" for end in (".", "!", "?", "!!", "??", "?!", "!?", "!!!") for ws in (" ", "  ", "\n", " \n", "\n\n")
) | {"\n", "\n\n"}


def _breaks(text: str) -> list[int]:
    """The offsets where the sentences of ``text`` end, the last one ``len(text)``."""
    parts = _BREAK.split(text)  # text, end, text, end, ..., text
    last = len(parts) - 1
    if not last:
        return [len(text)]
    opens: list[int] = []  # quoted passages, in order: (opens[i], closes[i])
    closes: list[int] = []
    if '"' in text or "“" in text or "「" in text or "『" in text:
        for q in _QUOTED.finditer(text):
            opens.append(q.start())
            closes.append(q.end())
    out: list[int] = []
    pos = 0
    for k in range(1, last, 2):
        g = parts[k]
        pos += len(parts[k - 1]) + len(g)
        if k + 1 == last and not parts[last]:
            break
        if opens and "\n" not in g:
            inside = bisect_left(opens, pos) - 1
            if inside >= 0 and pos < closes[inside]:
                continue
        if g in _PLAIN_ENDS:
            if g[0] == "." and "\n" not in g:
                i = pos - len(g)
                short = i < 5 or not text[i - 5 : i].isalpha() or text[i - 6 : i].lower() == "approx"
                if short and not _period_ends(
                    text[max(0, i - 40) : i], parts[k + 1][:1], i == 0 or text[i - 1] == "\n"
                ):
                    continue
        elif "\n" not in g:
            nxt = parts[k + 1][:1]
            core = g.rstrip()
            if not _CJK_ENDS.isdisjoint(core):
                pass
            elif len(core) == len(g):  # no space after: 3.5, 10.30, v1.2.3, e.g., URLs; but "好的!我们" ends
                if not _is_cjk(nxt):
                    continue
            elif (core[-1] not in _ENDS or "…" in core or core[:2] == "..") and nxt.islower():
                continue  # after a closing quote or an ellipsis, a lower-case word goes on
        if out or not text[:pos].isspace():  # leading blanks join the first sentence
            out.append(pos)
    out.append(len(text))
    return out


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, each with the whitespace after it, so ``"".join`` gives back the text.

    A sentence ends at a newline, at 。！？； (Chinese needs no space after them) and at . ! ? … followed by
    whitespace (or by a Chinese character). So decimals (3.5), times (10.30), versions and URLs do not end
    one; neither does a period after a title or Latin abbreviation (Dr., Mr., e.g., vs.) or an initial
    (J. Smith); nor one after etc., a.m., a dotted word (U.S.) or a number, a closing quote or an ellipsis
    when the next word is in lower case; nor one in "No. 5"; nor an end inside a one-line quotation
    ("…", “…”, 「…」 of at most 300 characters).
    """
    if not text:
        return []
    out, start = [], 0
    for end in _breaks(text):
        out.append(text[start:end])
        start = end
    return out


# --- weights ---------------------------------------------------------------------------------------------


class Weight(NamedTuple):
    """How much one sentence of an item matters (see :func:`weigh`)."""

    score: int  # 0: never shown (filler, or a repeat of an earlier sentence); else 1 + POINTS carried
    hedged: bool  # says maybe/perhaps/might/可能…: kept whenever a later sentence of its paragraph is
    paragraph: int  # paragraphs are separated by blank lines


# Greetings, thanks, interjections and pleasantries, lowercase (matched on the lowercased text, where ’ is ',
# also without their apostrophes). The "free" ones are filler wherever a word ends after them; the "sep" ones,
# also ordinary words ("sure", "great", "好的"), only before punctuation or the end.
_EN_FREE = (
    "hi|hi there|hi all|hi everyone|hi guys|hey|hey there|hey all|hey everyone|hey guys|hello|hello there"
    "|hello all|hello everyone|hiya|howdy|greetings|dear|good morning|good afternoon|good evening|good night"
    "|good day|good to see you|nice to see you|great to see you|so good to see you|good to hear from you"
    "|nice to meet you|it's good to see you|it's nice to see you|it's great to see you|nice meeting you"
    "|how are you|how are you doing|how's it going|what's up|welcome|welcome back|thanks|thanks so much"
    "|thanks a lot|thanks very much|thanks a ton|thanks again|thanks all|thanks everyone|thank you"
    "|thank you so much|thank you very much|thank you again|thank you all|thank u|thx|tysm|many thanks"
    "|much appreciated|appreciate it|i appreciate it|i appreciate that|cheers|you're welcome"
    "|you're very welcome|you're most welcome|no problem|no worries|not a problem|my pleasure|anytime|whoa|hah"
    "|lmao|rofl|aha|yay|oops|omg|great question|good question|that's great|that's so great|that's awesome"
    "|that's amazing|that's cool|that's wonderful|that's nice|that's fantastic|that's good|that's interesting"
    "|that's fair|that's true|that's lovely|that's really great|that's very nice|sounds good|sounds great"
    "|sounds fine|sounds perfect|sounds like a plan|glad to hear|glad to hear that|glad to hear it|good to hear"
    "|happy to help|let me know|feel free to|don't hesitate to|hope this helps|hope that helps|hope you're well"
    "|hope you are well|hope you're doing well|have a nice day|have a good day|have a great day"
    "|have a great weekend|have a good one|take care|see you|see ya|bye|goodbye|talk soon"
)
_EN_SEP = (
    "ok|okay|k|sure|yes|yeah|yep|yup|alright|all right|right|cool|great|awesome|nice|perfect|lovely|amazing"
    "|wonderful|fantastic|excellent|brilliant|sweet|indeed|of course|absolutely|exactly|totally|interesting"
    "|understood|noted|i see|got it|gotcha|makes sense|fair enough"
)
_EN_LAUGH = r"(?:ha){2,}h?|(?:he){2,}|lo+l|wow+|oh+|ooh+|ah+|hm+|um+|uh+|mm+"
_ZH_FREE = (
    "你好|您好|大家好|早上好|上午好|下午好|晚上好|早安|晚安|哈喽|嗨|谢谢|感谢|多谢|谢啦|谢了|不客气|不用谢|别客气"
    "|太好了|太棒了|辛苦了|辛苦你了|麻烦你了|好久不见|再见|拜拜|很高兴认识你|很高兴见到你|希望对你有帮助"
    "|请随时联系我|随时联系我|如果有问题|如果有任何问题|有问题随时找我|有问题随时联系我|没关系|对不起|不好意思|抱歉"
)
_ZH_LAUGH = "哈{2,}|呵{2,}|嘿{2,}|嘻{2,}"
_ZH_SEP = (
    "嗯|哦|噢|喔|啊|呀|哇|嘿|好的|好吧|好嘞|好呀|好啊|好|行|对|是的|没错|没问题|没事|不错|收到|明白|明白了|知道了"
    "|懂了|加油|厉害|真棒|真好|棒"
)
_PUNCT = r"\s,.!?~…:;\-—，。！？～、：；"
_MARKS = r",.!?~…:;\-—，。！？～、：；"


def _trie(phrases: Iterable[str]) -> str:
    """A regex matching any of the plain ``phrases``, factored by common prefixes (a long alternation is
    slow to try), longer matches first."""
    tree: dict[str, Any] = {}
    for phrase in phrases:
        node = tree
        for ch in phrase:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + build(node[ch]) for ch in sorted(k for k in node if k)]
        if not alts:
            return ""
        out = alts[0] if len(alts) == 1 else f"(?:{'|'.join(alts)})"
        if "" in node:
            return f"(?:{out})?" if len(alts) == 1 and len(alts[0]) > 1 else f"{out}?"
        return out

    return build(tree)


def _variants(phrases: str) -> list[str]:
    """The |-separated phrases, each also without its apostrophes ("you're", "youre")."""
    return sorted({v for p in phrases.split("|") for v in (p, p.replace("'", ""))})


# Matched on the lowercased text (curly apostrophes straightened), at the start of a sentence.
_FILLER_LEAD = re.compile(
    rf"(?:(?:(?:{_trie(_variants(_EN_FREE))}|{_EN_LAUGH})\b|{_ZH_LAUGH}|{_trie(_variants(_ZH_FREE))}"
    rf"|(?:{_trie(_variants(_EN_SEP))}|{_trie(_variants(_ZH_SEP))}[嗯哦啊哇]*)(?=[{_MARKS}]|\s*$))[{_PUNCT}]*)+"
)


def _lead_triggers() -> tuple[frozenset[str], frozenset[tuple[str, str]], frozenset[str]]:
    """_FILLER_LEAD is tried only on a sentence whose first word is a one-word phrase, whose first two words
    open a longer one, or whose first one or two characters open a Chinese one — it is costly to try."""
    one: set[str] = set()
    two: set[tuple[str, str]] = set()
    for phrase in f"{_EN_FREE}|{_EN_SEP}".split("|"):
        for variant in {phrase, phrase.replace("'", "")}:
            words = variant.split()
            if len(words) == 1:
                one.add(words[0])
            else:
                two.add((words[0], words[1]))
    zh = {p[:2] for p in f"{_ZH_FREE}|{_ZH_SEP}".split("|")} | {"哈哈", "呵呵", "嘿嘿", "嘻嘻"}
    return frozenset(one), frozenset(two), frozenset(zh)


_LEAD_ONE, _LEAD_TWO, _LEAD_ZH = _lead_triggers()
_LEAD_FIRST = _LEAD_ONE | {w for w, _ in _LEAD_TWO}
_LAUGH_START = _wordset("ha he lo wo oh oo ah hm um uh mm")
_LAUGH = re.compile(_EN_LAUGH)

# Words and phrases that carry meaning, by kind (matched on the lowercased words; phrases on the words in
# order; Chinese ones on the characters).
_CARRY_WORDS = {
    "num": "monday tuesday wednesday thursday friday saturday sunday today tonight tomorrow yesterday weekend"
    " midnight noon one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty"
    " hundred thousand million billion dozen half twice january february march april june july august"
    " september october november december jan feb mar apr jun jul aug sep sept oct nov dec",
    "neg": "not no never none nothing nobody neither nor without must mustn't should shouldn't shall cannot can't"
    " don't doesn't didn't won't wouldn't isn't aren't wasn't weren't haven't hasn't hadn't couldn't dont cant"
    " didnt doesnt isnt only maximum minimum required require requires forbidden avoid except unless",
    "hedge": "maybe perhaps probably possibly likely unlikely might unsure uncertain seems seem apparently presumably",
    "reason": "because since therefore hence thus decided decide decides decision chose chosen choose agreed"
    " concluded planned",
}
_CARRY_PHRASES = {
    "num": "next week|next month|next year|last week|last month|last year",
    "neg": "at most|at least|no more than|up to|less than|more than|fewer than|need to|needs to|have to|has to",
    "hedge": "i think|i guess|i believe|i suppose|not sure|not certain|don't know|do not know|no idea",
    "reason": "so that|due to|in order to|plan to",
}
_CARRY_ZH = {
    "num": "今天 明天 昨天 后天 前天 今年 明年 去年 上周 下周 本周 这周 月底 月初 年底 上午 下午 中午 晚上 早上 凌晨"
    " 周一 周二 周三 周四 周五 周六 周日 周末 星期 礼拜",
    "neg": "不 没 别 必须 至少 最多 只 禁止 务必 无法 未 勿 需要 一定要 不得",
    "hedge": "可能 也许 大概 或许 好像 似乎 估计 说不定 不确定 不一定 不知道",
    "reason": "因为 所以 决定 由于 因此 为了 于是 确定 同意 选择 打算 计划",
}
_KINDS = ("num", "neg", "hedge", "reason", "name")
_BIT = {k: 1 << i for i, k in enumerate(_KINDS)}
_NUM_BIT, _HEDGE_BIT, _NAME_BIT = _BIT["num"], _BIT["hedge"], _BIT["name"]
_SCORE = tuple(1 + sum(POINTS[k] for k in _KINDS if f & _BIT[k]) for f in range(1 << len(_KINDS)))


def _tables() -> tuple[dict[str, int], dict[str, list[tuple[str, int]]], dict[str, list[tuple[str, int]]]]:
    words: dict[str, int] = {}
    for kind, listed in _CARRY_WORDS.items():
        for w in listed.split():
            words[w] = words.get(w, 0) | _BIT[kind]
    phrases: dict[str, list[tuple[str, int]]] = {}
    for kind, listed in _CARRY_PHRASES.items():
        for p in listed.split("|"):
            trigger = max(p.split(), key=len)  # its longest word: "at most" is looked for when "most" is there
            phrases.setdefault(trigger, []).append((f" {p} ", _BIT[kind]))
    zh: dict[str, list[tuple[str, int]]] = {}  # looked for only when their first character is there
    for kind, listed in _CARRY_ZH.items():
        for w in listed.split():
            zh.setdefault(w[0], []).append((w, _BIT[kind]))
    for first, entries in zh.items():  # a word of one character first; then only what it does not imply
        alone = sum(bit for w, bit in entries if len(w) == 1)
        zh[first] = [(w, bit) for w, bit in entries if len(w) == 1] + [
            (w, bit) for w, bit in entries if len(w) > 1 and bit & ~alone
        ]
    return words, phrases, zh


_WORD_BITS, _PHRASES, _ZH_WORDS = _tables()
_CARRY_SET = frozenset(_WORD_BITS)
_PHRASE_TRIGGERS = frozenset(_PHRASES)
_ZH_NUMERALS = "零〇一二两三四五六七八九十百千万亿"
_ZH_CURRENCY = frozenset("€£¥￥０１２３４５６７８９")
# The characters that may open a Chinese carrier: found in one pass, then each looked at.
_ZH_FIRST_RE = re.compile(f"[{''.join(sorted(_ZH_WORDS))}{_ZH_NUMERALS}{''.join(sorted(_ZH_CURRENCY))}]")
_ZH_NUMBER = re.compile("[零〇一二两三四五六七八九十百千万亿]+[点时分号日月年元块个天周岁倍次人万]")
_MAY = re.compile(r"\bmay\b")
_WORDISH = re.compile(r"[^\W_]")
# Punctuation becomes a space (one for one, so offsets stay); the words are then the whitespace-separated runs.
_PUNCTUATION = ',.!?;:()[]{}<>"/“”‘，。！？；：、（）《》「」『』—…~*#|=+-•·'
_PUNCT_BYTES = bytes(32 if chr(i) in _PUNCTUATION else i for i in range(128)) + bytes(range(128, 256))
_PUNCT_RE = re.compile("[" + re.escape(_PUNCTUATION) + "]")
_CJK_CHAR = re.compile(f"[{_CJK}]")
_EN_STOP = _wordset(
    "a an the and or but of to in on at for with by from as is are was were be been being am it its it's "
    "this that that's these those there here i i'm i'll i've i'd you you're your he she we we're they "
    "they're me my your our their his her them us do does did have has had will would can could so if "
    "then than just also very really what which who whom how when where why about into over after before "
    "up out said say says mentioned again earlier told already let get got please"
)
_ZH_STOP = frozenset("的了是在我你他她它们和与就也都而及这那有个一吗呢吧啊着过把被给让从对向")


def _lower(text: str) -> str:
    """``text`` lowercased with curly apostrophes straightened, every character where it was."""
    low = text.lower()
    if len(low) != len(text):  # a character whose lower case is longer (İ)
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return low.replace("’", "'")


def _shape_of(c: str) -> str:
    if c.isupper():
        return "A"
    if c.islower():
        return "a"
    if c.isdigit() or c in "$%":
        return "0"
    return "_" if c == "_" else " "


_SHAPE = "".join(map(_shape_of, map(chr, range(128)))).encode("ascii") + b" " * 128


def _shapes(text: str) -> str:
    """``text`` with every capital as A, lower-case letter as a, digit, $ or % as 0, _ as _ and anything else
    (other scripts too) as a space, every character where it was."""
    return text.encode("ascii", "replace").translate(_SHAPE).decode("ascii")


def _zh_bits(seg: str, firsts: list[str]) -> int:
    """The kinds carried by the Chinese words of ``seg``; ``firsts``: its characters that may open one."""
    bits = 0
    number = False
    for ch in set(firsts):
        words = _ZH_WORDS.get(ch)
        if words is None:
            number = True
            continue
        for word, bit in words:
            if word in seg:
                bits |= bit
    if number and (_ZH_NUMBER.search(seg) or not _ZH_CURRENCY.isdisjoint(firsts)):
        bits |= _NUM_BIT
    return bits


def _rest_words(seg: str) -> int:
    """Words in a text, two Chinese characters counting as one."""
    cjk = len(_CJK_CHAR.findall(seg))
    return len(_PUNCT_RE.sub(" ", _CJK_CHAR.sub(" ", seg)).split()) + (cjk + 1) // 2


class _Analysis(NamedTuple):
    pieces: list[str]
    scores: list[int]
    hedges: list[int]  # indices of the hedged sentences
    paragraphs: list[int]


def _analyse(text: str) -> _Analysis:
    """What :func:`weigh` returns, as parallel lists. (The write path's hot loop: kept to cheap operations.)"""
    pieces: list[str] = []
    scores: list[int] = []
    hedges: list[int] = []
    paragraphs: list[int] = []
    if not text:
        return _Analysis(pieces, scores, hedges, paragraphs)
    low = _lower(text)
    ascii_text = low.isascii()
    clean = low.encode("ascii").translate(_PUNCT_BYTES).decode("ascii") if ascii_text else _PUNCT_RE.sub(" ", low)
    shape = _shapes(text)
    refs: list[set[str]] = []  # content words of the sentences so far
    union: set[str] = set()
    plain: set[str] = set()
    clauses: set[str] = set()  # Chinese clauses said so far
    paragraph = pos = 0
    for stop in _breaks(text):
        piece = text[pos:stop]
        pieces.append(piece)
        paragraphs.append(paragraph)
        start = pos if pos else len(piece) - len(piece.lstrip())  # only the first can open with blanks
        end = pos + len(piece.rstrip())
        pos = stop
        toks = clean[start:end].split()
        rest, lead = start, None
        if toks and (
            (toks[0] in _LEAD_FIRST and (toks[0] in _LEAD_ONE or (len(toks) > 1 and (toks[0], toks[1]) in _LEAD_TWO)))
            or (toks[0][:2] in _LAUGH_START and _LAUGH.fullmatch(toks[0]))
            or (not ascii_text and (text[start : start + 2] in _LEAD_ZH or text[start] in _LEAD_ZH))
        ):
            lead = _FILLER_LEAD.match(low, start, end)
            if lead:
                rest = lead.end()
                toks = clean[rest:end].split()
        words = set(toks)
        bits = 0
        for w in words & _CARRY_SET:
            bits |= _WORD_BITS[w]
        triggers = words & _PHRASE_TRIGGERS
        if triggers:
            padded = f" {' '.join(toks)} "
            for w in triggers:
                for phrase, bit in _PHRASES[w]:
                    if phrase in padded:
                        bits |= bit
        if "may" in words:  # "may" hedges; "May" is a month
            if _MAY.search(text, rest, end):
                bits |= _HEDGE_BIT
            if "May" in text[rest:end]:
                bits |= _NUM_BIT
        form = shape[rest:end]
        if "0" in form:
            bits |= _NUM_BIT
        form = form[1:]  # a capital opening the sentence is no name
        if "Aa" in form or "AA" in form or "A0" in form or "_" in form:
            bits |= _NAME_BIT
        seg = ""
        if not ascii_text:
            seg = text[rest:end]
            if seg.isascii():
                seg = ""
            else:
                firsts = _ZH_FIRST_RE.findall(seg)
                if firsts:
                    bits |= _zh_bits(seg, firsts)
        if bits:
            score = _SCORE[bits]
        elif lead is not None:
            score = 0 if (len(toks) if not seg else _rest_words(seg)) <= FILLER_REST_WORDS else 1
        else:
            score = 0 if _WORDISH.search(text, start, end) is None else 1  # punctuation or emoji only
        if score and seg:  # Chinese: a repeat says again, word for word, what the text said before
            if bits & _HEDGE_BIT:
                hedges.append(len(scores))
            elif sum(map(len, toks)) >= REPEAT_MIN_CHARS and words <= clauses:
                score = 0
            clauses |= words
        elif score:
            content = words - _EN_STOP
            if bits & _HEDGE_BIT:
                hedges.append(len(scores))
            elif not content:
                key = " ".join(toks)
                if key in plain:
                    score = 0
                plain.add(key)
            else:
                need = REPEAT_COVERAGE * len(content)
                if len(content & union) >= need:
                    for ref in refs[-REPEAT_LOOKBACK:] if len(refs) > REPEAT_LOOKBACK else refs:
                        if len(content & ref) >= need:
                            score = 0
                            break
            refs.append(content)
            union |= content
        scores.append(score)
        if "\n" in piece and piece.count("\n", end - stop) >= 2:
            paragraph += 1
    return _Analysis(pieces, scores, hedges, paragraphs)


def weigh(text: str) -> tuple[list[str], list[Weight]]:
    """The sentences of ``text`` (:func:`split_sentences`) and their weights.

    A sentence is filler (score 0) when it is only punctuation or emoji, or when it opens with greetings,
    thanks, interjections or pleasantries ("Hey Mel!", "Thanks so much for the update", "哈哈，太好了！") and
    the rest carries nothing and is at most FILLER_REST_WORDS (4) words — so "Thanks, the meeting is at 3 pm"
    is not filler. A sentence at least REPEAT_COVERAGE (80 %) of whose content words (lowercased, stop words
    left out) are in one of the REPEAT_LOOKBACK (50) sentences before it is a repeat (score 0); in Chinese,
    one of at least REPEAT_MIN_CHARS (4) characters each of whose clauses (the runs between punctuation) was
    a clause before; a hedged sentence is never a repeat. Any other sentence scores 1 plus POINTS for each
    kind it carries: numbers, amounts, dates and times 3; negations, modals and limits (not, never, must, only,
    at most, can't, 不, 必须, 不超过, 只) 3; hedges (maybe, might, I think, not sure, 可能, 也许) 2; decisions
    and reasons (because, decided, 因为, 决定) 2; capitalised names and identifiers after the first letter 2.
    """
    a = _analyse(text)
    hedged = set(a.hedges)
    return a.pieces, [Weight(s, i in hedged, p) for i, (s, p) in enumerate(zip(a.scores, a.paragraphs, strict=True))]


_SCRIPT_RUN = re.compile(f"[{_CJK}]+|[^{_CJK}]+")


def _stem(word: str) -> str:
    if not word.isalpha():
        return word
    n = len(word)
    if n > 5 and word.endswith("ing"):
        word = word[:-3]
    elif n > 4 and (word.endswith("ed") or word.endswith("es")):
        word = word[:-2]
    elif n > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


@lru_cache(maxsize=8192)
def terms(text: str) -> frozenset[str]:
    """The words :func:`focus` matches on: English words lowercased, without stop words and crudely stemmed
    (-ing, -ed, -es, -s, then a final -e), numbers, and Chinese single characters (but the commonest
    particles) and character pairs. Cached (8192 texts): an item's sentences come back window after window."""
    low = _lower(text)
    if low.isascii():
        words = set(low.encode("ascii").translate(_PUNCT_BYTES).decode("ascii").split())
        return frozenset(map(_stem, words - _EN_STOP))
    out: set[str] = set()
    for word in set(_PUNCT_RE.sub(" ", low).split()) - _EN_STOP:
        for run in (word,) if word.isascii() else _SCRIPT_RUN.findall(word):
            if _is_cjk(run[0]):
                out.update(ch for ch in run if ch not in _ZH_STOP)
                out.update(run[i : i + 2] for i in range(len(run) - 1))
            elif run not in _EN_STOP:
                out.add(_stem(run))
    return frozenset(out)


# --- choosing sentences ----------------------------------------------------------------------------------


def _pick(
    order: Iterable[int], cost: Sequence[int], budget: int, hedges: Sequence[int], paragraphs: Sequence[int]
) -> list[int]:
    """Take sentences in ``order`` while they fit in ``budget`` (one that does not is skipped, the next
    tried); a sentence brings along the hedged sentences (``hedges``, ascending) before it in its paragraph:
    all fit or none is taken. Returns the indices taken, in text order."""
    used = 0
    kept: list[int] = []
    if not hedges:
        for j in order:
            c = cost[j]
            if used + c <= budget:
                used += c
                kept.append(j)
        kept.sort()
        return kept
    taken: set[int] = set()
    for j in order:
        if j in taken:
            continue
        c = cost[j]
        need = [j]
        for h in hedges:
            if h >= j:
                break
            if h not in taken and paragraphs[h] == paragraphs[j]:
                need.append(h)
                c += cost[h]
        if used + c <= budget:
            used += c
            taken.update(need)
    return sorted(taken)


def join_sentences(sentences: Sequence[str], indices: Iterable[int]) -> str:
    """The chosen sentences (indices in text order), each followed by the whitespace that followed it in the
    text, without leading or trailing whitespace."""
    return "".join([sentences[i] for i in indices]).strip()


class _Prepared(NamedTuple):
    whole: str  # the text, stripped
    a: _Analysis
    order: list[int]  # the sentences worth keeping, heaviest first (ties: earlier first)
    full: str  # all of them, in text order
    cost: list[int]  # characters of each sentence and the whitespace after it


def _prepare(text: str) -> _Prepared:
    if len(text) > ANALYSE_MAX_CHARS:  # the head only, without the sentence the cut may have split
        a = _analyse(text[:ANALYSE_MAX_CHARS])
        n = len(a.pieces) - 1
        if n:
            a = _Analysis(a.pieces[:n], a.scores[:n], [h for h in a.hedges if h < n], a.paragraphs[:n])
    else:
        a = _analyse(text)
    scores = a.scores
    cand = [i for i, s in enumerate(scores) if s]
    order = sorted(cand, key=scores.__getitem__, reverse=True)  # stable: ties stay in text order
    whole = text.strip()
    full = whole if len(cand) == len(scores) and len(text) <= ANALYSE_MAX_CHARS else join_sentences(a.pieces, cand)
    return _Prepared(whole, a, order, full, [len(s) for s in a.pieces])


def _select(p: _Prepared, max_chars: int) -> str:
    whole, full = p.whole, p.full
    if full is whole and len(whole) <= max_chars:
        return whole
    budget = max_chars - len(_marker(len(whole)))
    if p.order:
        if len(full) <= budget:
            return full + _marker(len(whole) - len(full))
        a = p.a
        kept = _pick(p.order, p.cost, budget, a.hedges, a.paragraphs)
        if kept and sum(map(a.scores.__getitem__, kept)) >= a.scores[p.order[0]]:
            out = join_sentences(a.pieces, kept)
            return out + _marker(len(whole) - len(out))
    else:
        full = whole  # nothing but filler
    cut = _cut(full, budget if budget >= MIN_BODY_CHARS else max_chars).rstrip()
    return cut + _marker(len(whole) - len(cut))


def condense(text: str, *, max_chars: int) -> str:
    """An extractive short version of ``text``, at most ``max_chars`` characters long (marker included).

    Filler and repeats go first (:func:`weigh`); the text stays whole if nothing went and it fits. Else the
    heaviest sentences are kept while they fit (ties: the earlier first; one that does not fit is skipped),
    in their original order, each followed by the whitespace that followed it, and `` …[+N chars]`` says how
    many characters were left out. The hedge rule: a hedged sentence is never left out while a later
    sentence of its paragraph is kept. If no sentence fits, or those that fit weigh less together than the
    heaviest one, the text without filler and repeats is cut at a word boundary instead (as by
    :func:`truncate`). Only a ``max_chars`` under MIN_BODY_CHARS (12) plus the marker gives a longer result.
    Of a text longer than ANALYSE_MAX_CHARS (3000) only the sentences wholly in its first 3000 characters
    are candidates.
    """
    return _select(_prepare(text), max_chars)


def query_terms(query: str) -> frozenset[str]:
    """The query's words for :func:`focus` (see :func:`terms`): work them out once per request."""
    return terms(query)


def focus(
    sentences: Sequence[str],
    weights: Sequence[Weight],
    query: str | frozenset[str],
    *,
    max_tokens: int,
    tokens: Sequence[int],
) -> list[int]:
    """The sentences of an item to show for ``query`` within ``max_tokens``, as indices in text order.

    ``sentences`` and ``weights`` come from :func:`weigh` (stored with the item), ``tokens`` are the
    sentences' token counts. Sentences are taken while they fit, first those sharing more words with the
    query (:func:`terms`: stems, numbers, Chinese characters and pairs), then the heavier, then the earlier;
    never filler or repeats (score 0); the hedge rule as in :func:`condense`. An empty list means nothing
    fits. The counts are added up: the joined text (:func:`join_sentences`) may count a token or two more
    or less, and a marker is the caller's to add and count.
    """
    q = query if isinstance(query, frozenset) else terms(query)
    if q:
        ranked = sorted(
            (-len(terms(s) & q), -w[0], i) for i, (s, w) in enumerate(zip(sentences, weights, strict=True)) if w[0]
        )
        order = [r[2] for r in ranked]
    else:
        scores = [w[0] for w in weights]
        order = sorted((i for i, s in enumerate(scores) if s), key=scores.__getitem__, reverse=True)
    hedges = [i for i, w in enumerate(weights) if w[1]]
    return _pick(order, tokens, max_tokens, hedges, [w[2] for w in weights])


# --- levels ----------------------------------------------------------------------------------------------


def key_fields(content: str, key: str | None, value: Any) -> str | None:
    """The fields that identify a fact: a slot's key and value, the top-level scalar fields of a JSON
    object (a tool result), or a keyed text's key and start; ``None`` for prose with no key, which has no
    fields to show (its start cut off mid-sentence would be the truncation L1 and L2 replace)."""
    if key is not None and value is not None:
        return truncate(f"{key} = {json.dumps(value, ensure_ascii=False, sort_keys=True)}", L3_MAX_CHARS)
    stripped = content.strip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(stripped)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            fields = []
            for k, v in doc.items():
                if isinstance(v, (str, int, float, bool)) or v is None:
                    fields.append(f"{k}={truncate(str(v), L3_MAX_VALUE_CHARS)}")
                if len(fields) == L3_MAX_FIELDS:
                    break
            if fields:
                return "; ".join(fields)
    if key is not None:
        return truncate(f"{key}: {stripped}", L3_MAX_CHARS)
    if stripped.startswith("["):
        return truncate(stripped, L3_MAX_CHARS // 2)
    return None


def index_line(*, item_type: str, key: str | None, content: str, token_cost: int) -> str:
    """Names the item and its size. How to fetch it is the handle a window puts before every shortened line
    (``scoring.window.handles``): an id or a URL here would cost more tokens than the line itself."""
    words = " ".join(content.split(None, 6)[:6])
    label = key or f"{item_type}: {truncate(words, 40)}"
    return f"[ctx: {label}, {token_cost} tokens]"


def derive_levels(
    *,
    item_type: str,
    content: str,
    key: str | None,
    value: Any,
    variants: Mapping[str, str] | None,
    token_cost: int,
) -> list[str]:
    """The texts of L1..L4 for one item.

    Client variants win. An item of at most SHORT_CHARS (120) characters keeps its text at L1 and L2. Else
    L1 is :func:`condense` to L1_SHARE (60 %) of its characters and L2 to L2_SHARE (30 %, at least 60, at
    most 400); JSON (text opening with ``{`` or ``[``) is cut instead, since dropping lines would break it.
    """
    v = variants or {}
    l1, l2 = v.get("condensed"), v.get("summary")
    if len(content) <= SHORT_CHARS:
        l1 = l1 or content
        l2 = l2 or l1
    elif not (l1 and l2):
        n = len(content)
        l2_chars = min(L2_MAX_CHARS, max(L2_MIN_CHARS, int(n * L2_SHARE)))
        if content.lstrip()[:1] in ("{", "["):
            l1 = l1 or truncate(content, int(n * L1_SHARE))
            l2 = l2 or first_sentences(content, l2_chars)
        else:
            prepared = _prepare(content)
            l1 = l1 or _select(prepared, int(n * L1_SHARE))
            l2 = l2 or _select(prepared, l2_chars)
    l3 = key_fields(content, key, value) or l2  # prose without a key: L3 is L2
    l4 = v.get("index") or index_line(item_type=item_type, key=key, content=content, token_cost=token_cost)
    return [l1, l2, l3, l4]


def derive_row_levels(row: Mapping[str, Any]) -> list[str]:
    """:func:`derive_levels` of an item row (its ``type``, ``content``, ``key``, ``value``, ``variants`` and
    ``token_cost``)."""
    return derive_levels(
        item_type=row["type"],
        content=row["content"],
        key=row["key"],
        value=row["value"],
        variants=row["variants"],
        token_cost=row["token_cost"],
    )


def monotone(texts: Sequence[str], tokens: Sequence[int]) -> tuple[list[str], list[int]]:
    """Make every level at most as long (in tokens) as the one before by reusing the shorter one."""
    out_t, out_n = [texts[0]], [tokens[0]]
    for text, n in zip(texts[1:], tokens[1:], strict=True):
        if n > out_n[-1]:
            text, n = out_t[-1], out_n[-1]
        out_t.append(text)
        out_n.append(n)
    return out_t, out_n


def assemble_levels(
    content: str, token_cost: int, derived: Sequence[str], counts: Sequence[int]
) -> tuple[list[str], list[int]]:
    """L0..L4 texts and token counts from the original, its derived L1..L4 and their counts, made monotone:
    an item shorter than its own index line shows its (shortest) text at L4 too — cheaper and more useful
    than a pointer to it."""
    fixed_t, fixed_n = monotone([content, *derived], [token_cost, *counts])
    return fixed_t, fixed_n
