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
# ruff: noqa: RUF002, RUF003

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Final

from scoring.extract_rules.chinese_facts import _ZH_MATCHERS
from scoring.extract_rules.clauses import (
    _COLON_NEXT,
    _CORRECTION,
    _ELLIDED_EN,
    _ENDS_QUESTION,
    _FIRST_PERSON_START,
    _FOLD,
    _FRAME_VERB,
    _NOT_BUT_EN,
    _NOT_BUT_ZH,
    _QUESTION_MARK,
    _TAG,
    _TIME_LEAD,
    _WE_SUBJECT_EN,
    _WE_SUBJECT_NAME,
    _is_frame,
    _is_question,
    _masked,
    _mood,
    _pieces,
    _sentences,
    _strip_lead,
)
from scoring.extract_rules.english_facts import _EN_MATCHERS
from scoring.extract_rules.records import _I, _Body, _Clause, _Context, _Hit
from scoring.extract_rules.values import _CJK, slug
from scoring.extract_rules.vocabulary import _WE_SUBJECT_ZH
from scoring.extraction import MAX_QUOTE_CHARS, Proposal

__all__ = ["SLOTS", "VERSION", "extract", "slug"]

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
