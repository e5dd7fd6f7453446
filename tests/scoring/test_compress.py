"""Extractive compression (scoring/compress.py): sentence splitting, weights, condense, focus and the levels."""

# ruff: noqa: RUF001 - the Chinese sample text uses fullwidth punctuation on purpose.
from __future__ import annotations

import re
from functools import cache
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import compress as C
from scoring.compress import (
    Weight,
    condense,
    derive_levels,
    focus,
    join_sentences,
    split_sentences,
    terms,
    weigh,
)

MARKER = re.compile(r" …\[\+\d+ chars\]$")


def bodies(text: str) -> list[str]:
    return [s.strip() for s in split_sentences(text)]


def score_of(sentence: str) -> int:
    pieces, weights = weigh(sentence)
    assert len(pieces) == 1, pieces
    return weights[0].score


# --- splitting -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The price is 3.5 dollars. Next one.", ["The price is 3.5 dollars.", "Next one."]),
        ("Upgrade to v1.2.3 today. Done.", ["Upgrade to v1.2.3 today.", "Done."]),
        ("Meet at 10.30 tomorrow. Bring notes!", ["Meet at 10.30 tomorrow.", "Bring notes!"]),
        (
            "Dr. Smith met Mr. Jones and Mrs. Lee, e.g. at lunch. Then i.e. nothing vs. before.",
            ["Dr. Smith met Mr. Jones and Mrs. Lee, e.g. at lunch.", "Then i.e. nothing vs. before."],
        ),
        ("We bought pears, etc. Then we left.", ["We bought pears, etc.", "Then we left."]),
        ("We bought pears, etc. and then we left.", ["We bought pears, etc. and then we left."]),
        ("It starts at 10 a.m. tomorrow. Be there.", ["It starts at 10 a.m. tomorrow.", "Be there."]),
        ("See https://x.com/a.b?c=1 for details. Next.", ["See https://x.com/a.b?c=1 for details.", "Next."]),
        ("Ask J. R. Tolkien. He knows.", ["Ask J. R. Tolkien.", "He knows."]),
        ("Room No. 5 is free. Take it.", ["Room No. 5 is free.", "Take it."]),
        ('He said "Stop. Now." and left. Then he came back.', ['He said "Stop. Now." and left.', "Then he came back."]),
        ("Wait... what? Really!", ["Wait... what?", "Really!"]),
        ("你好！我们明天见。好吗？", ["你好！", "我们明天见。", "好吗？"]),
        ("第一点；第二点。", ["第一点；", "第二点。"]),
        ("他说：“我不去。你去吧。”然后走了。", ["他说：“我不去。你去吧。”", "然后走了。"]),
        (
            "我们用 Redis 3.2 版本。It works fine. 好的!我们走吧",
            ["我们用 Redis 3.2 版本。", "It works fine.", "好的!", "我们走吧"],
        ),
        ("line one\nline two\n\npara two.", ["line one", "line two", "para two."]),
        ("1. Install it\n2. Run it", ["1. Install it", "2. Run it"]),
        ("  leading blanks. Stay.", ["leading blanks.", "Stay."]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert bodies(text) == expected
    assert "".join(split_sentences(text)) == text


def test_split_edge_cases() -> None:
    assert split_sentences("") == []
    assert split_sentences("   ") == ["   "]
    assert split_sentences("no end") == ["no end"]
    assert split_sentences("Dot.") == ["Dot."]
    assert split_sentences("A. ") == ["A. "]  # the whitespace after the last sentence stays with it


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from([*"ab .!?…。！？；\n\"“”'3.ZD中", "e.g.", "etc.", "Dr.", " x", "No. "])).map("".join)
    | st.text()
)
def test_split_is_lossless(text: str) -> None:
    pieces = split_sentences(text)
    assert "".join(pieces) == text
    assert all(pieces)
    if text.strip():
        assert all(p.strip() for p in pieces)  # no sentence of blanks alone


# --- weights ---------------------------------------------------------------------------------------------

FILLER_EN = [
    "Hey Mel!",
    "Hi there",
    "Thanks so much!",
    "Thanks so much for the update.",
    "Wow, that's great!",
    "Haha",
    "Hahahaha!",
    "Good to see you!",
    "You're welcome",
    "You’re welcome!",
    "Sure!",
    "Great question",
    "Let me know if anything changes.",
    "No worries!",
    "OK.",
    "🙂",
]
FILLER_ZH = ["你好！", "谢谢！", "谢谢你的消息。", "哈哈", "嗯。", "好的。", "太好了！", "不客气。", "辛苦了。"]
FILLER_ZH += ["哈哈，太好了！", "如果有问题请随时联系我，辛苦了。"]


@pytest.mark.parametrize("sentence", FILLER_EN + FILLER_ZH)
def test_filler(sentence: str) -> None:
    assert score_of(sentence) == 0


@pytest.mark.parametrize(
    "sentence",
    [
        "Thanks, the meeting is at 3 pm on Friday",
        "Sure, I'll send it on Monday.",
        "No, we cannot ship before the audit.",
        "Great results came back from the load test yesterday.",
        "I see the problem: the disk is full because logs never rotate.",
        "好的，我们周五见。",
        "谢谢，预算不超过500元。",
        "The sky is blue.",
        "好的方案需要时间。",
    ],
)
def test_not_filler(sentence: str) -> None:
    assert score_of(sentence) >= 1


@pytest.mark.parametrize(
    ("sentence", "points"),
    [
        ("The job starts in 2027.", C.POINTS["num"]),
        ("The job starts next week.", C.POINTS["num"]),
        ("We must keep it.", C.POINTS["neg"]),
        ("We can't keep it.", C.POINTS["neg"]),
        ("Use at most two.", C.POINTS["neg"] + C.POINTS["num"]),
        ("I think it works.", C.POINTS["hedge"]),
        ("It may work.", C.POINTS["hedge"]),
        ("We chose it because it works.", C.POINTS["reason"]),
        ("We talked to Berlin.", C.POINTS["name"]),
        ("The field retention_days matters.", C.POINTS["name"]),
        ("Berlin is big.", 0),  # the first word of a sentence is capitalised anyway
        ("预算不超过这个数。", C.POINTS["neg"]),
        ("他可能会来。", C.POINTS["hedge"]),
        ("我们决定改计划。", C.POINTS["reason"]),
        ("下周三见面。", C.POINTS["num"]),
        ("一共三个人。", C.POINTS["num"]),
    ],
)
def test_carriers(sentence: str, points: int) -> None:
    assert score_of(sentence) == 1 + points


def test_weights_mark_hedges_and_paragraphs() -> None:
    pieces, weights = weigh("Maybe later. Sure!\n\nThe rest must wait.")
    assert [p.strip() for p in pieces] == ["Maybe later.", "Sure!", "The rest must wait."]
    assert [w.hedged for w in weights] == [True, False, False]
    assert [w.paragraph for w in weights] == [0, 0, 1]
    assert weights[1].score == 0
    assert all(isinstance(w, Weight) for w in weights)


def test_repeated_sentence_is_dropped() -> None:
    text = (
        "The deploy of the billing service is on Friday after the freeze. The rollback plan is ready. "
        "As I said, the deploy of the billing service is on Friday."
    )
    _, weights = weigh(text)
    assert [w.score > 0 for w in weights] == [True, True, False]
    out = condense(text, max_chars=len(text))
    assert "As I said" not in out and "rollback" in out
    # a new number or negation is not a repeat
    _, weights = weigh("The limit is 500 requests. The limit is 600 requests. The limit is not 500 requests.")
    assert all(w.score for w in weights)


def test_repeats_in_chinese_and_exact() -> None:
    _, weights = weigh("数据库迁移在周五。另外，测试环境保留。数据库迁移在周五。")
    assert [w.score > 0 for w in weights] == [True, True, False]
    _, weights = weigh("It is what it is. It is what it is.")
    assert [w.score > 0 for w in weights] == [True, False]


def test_a_hedged_sentence_is_never_a_repeat() -> None:
    _, weights = weigh("We use Redis for the cache. Maybe we use Redis for the cache.")
    assert [w.score > 0 for w in weights] == [True, True]
    _, weights = weigh("Maybe we use Redis for the cache. We use Redis for the cache.")
    assert [w.score > 0 for w in weights] == [True, False]  # the certain one says nothing new


# --- condense --------------------------------------------------------------------------------------------

EN = (
    "Hey Mel! Thanks so much for the update. The migration to PostgreSQL 17 is scheduled for Friday, 12 March "
    "at 10.30, and Dr. Smith will lead it. We decided to keep pgvector because the search latency stayed under "
    "40 ms in the tests. Maybe we should also move the backups to the new cluster. The budget must not exceed "
    "$5,000 for the quarter. As I said, the migration is on Friday. Haha, that's great! Let me know if anything "
    "changes."
)


def test_condense_drops_filler_and_repeats_first() -> None:
    out = condense(EN, max_chars=len(EN))
    assert MARKER.search(out)
    body = MARKER.sub("", out)
    assert body == (
        "The migration to PostgreSQL 17 is scheduled for Friday, 12 March at 10.30, and Dr. Smith will lead it. "
        "We decided to keep pgvector because the search latency stayed under 40 ms in the tests. Maybe we should "
        "also move the backups to the new cluster. The budget must not exceed $5,000 for the quarter."
    )
    assert out.endswith(f" …[+{len(EN) - len(body)} chars]")


def test_condense_keeps_short_clean_text_whole() -> None:
    text = "The budget is 500. It must not grow."
    assert condense(text, max_chars=100) == text


def test_chinese_filler_goes_and_the_limit_stays() -> None:
    text = "哈哈，太好了！谢谢你。预算不超过 500 元。"
    assert MARKER.sub("", condense(text, max_chars=len(text))) == "预算不超过 500 元。"
    text = "你好！谢谢你的消息。我们决定下周三上午十点迁移数据库。预算不超过500元，必须在月底前完成。哈哈，太好了！"
    assert MARKER.sub("", condense(text, max_chars=45)) == "预算不超过500元，必须在月底前完成。"


def test_numbers_and_negations_win_under_pressure() -> None:
    text = (
        "We had a long talk about the project today in the office. The weather was nice and the coffee was good. "
        "The API must never return more than 100 items. Everyone seemed happy with how things are going."
    )
    out = MARKER.sub("", condense(text, max_chars=80))
    assert out == "The API must never return more than 100 items."


def test_ties_go_to_the_earlier_sentence_and_order_is_kept() -> None:
    text = "Alpha runs on box one now. Beta idles here quietly. Gamma idles there too."
    _, weights = weigh(text)
    assert weights[1].score == weights[2].score
    out = MARKER.sub("", condense(text, max_chars=70))
    assert out == "Alpha runs on box one now. Beta idles here quietly."


HEDGED_EN = "I might move to Berlin next year. The job would start in March."


def test_hedge_is_kept_with_its_follower() -> None:
    text = f"{HEDGED_EN} I also like long walks in the park."
    for max_chars in range(1, len(text) + 20):
        out = condense(text, max_chars=max_chars)
        if "The job would start in March." in out:
            assert "I might move to Berlin next year." in out, (max_chars, out)


def test_a_hedge_outweighed_by_its_follower_is_still_kept_or_both_go() -> None:
    # the follower weighs more than the hedge, so without the rule it would be kept alone under pressure
    text = "Maybe we go. The meeting is on 12 March at 10.30 with Dr. Smith and it must not be moved. Plain text."
    _, weights = weigh(text)
    assert weights[0].hedged and weights[1].score > weights[0].score
    seen_follower = False
    for max_chars in range(1, len(text) + 1):
        out = condense(text, max_chars=max_chars)
        if "must not be moved" in out:
            seen_follower = True
            assert out.startswith("Maybe we go."), (max_chars, out)
    assert seen_follower
    # in another paragraph the hedge does not govern
    split = text.replace("Maybe we go. ", "Maybe we go.\n\n")
    out = condense(split, max_chars=95)
    assert "must not be moved" in out and "Maybe" not in out


def test_chinese_hedge_is_kept_with_its_follower() -> None:
    text = "他可能下个月搬到上海。工作从三月开始，必须在周五前确认。其他的事情以后再说吧。"
    for max_chars in range(1, len(text) + 20):
        out = condense(text, max_chars=max_chars)
        if "工作从三月开始" in out:
            assert "他可能下个月搬到上海。" in out, (max_chars, out)


def test_fallback_cuts_when_nothing_fits() -> None:
    text = "word " * 60 + "and the end."
    out = condense(text, max_chars=60)
    assert len(out) <= 60 and MARKER.search(out)
    assert text.startswith(MARKER.sub("", out))
    assert condense("", max_chars=10) == ""
    only_filler = "Hey there! Thanks so much! Haha, that's great! Wow! Cheers!"
    out = condense(only_filler, max_chars=30)
    assert only_filler.startswith(MARKER.sub("", out)) and len(out) <= 30


def test_long_texts_are_condensed_from_their_head() -> None:
    text = " ".join(f"Sentence {i} says the value is {i * 7}." for i in range(400))
    assert len(text) > 3 * C.ANALYSE_MAX_CHARS
    out = condense(text, max_chars=int(len(text) * C.L1_SHARE))
    body = MARKER.sub("", out)
    assert body and text.startswith(body[:40]) and body in text[: C.ANALYSE_MAX_CHARS]
    assert out.endswith(f" …[+{len(text) - len(body)} chars]")
    one_sentence = "word " * 2000
    out = condense(one_sentence, max_chars=4000)
    assert len(out) <= 4000 and one_sentence.startswith(MARKER.sub("", out))


def test_condense_is_deterministic() -> None:
    assert condense(EN, max_chars=150) == condense(EN, max_chars=150)


# Texts built from whole sentences of every kind, so that the properties meet filler, hedges and repeats.
SENTENCES = [
    "Hey Mel!",
    "Thanks so much for the update.",
    "The migration is on Friday at 10.30.",
    "Dr. Smith will lead it.",
    "Maybe we should move the backups.",
    "The budget must not exceed $5,000.",
    "As I said, the migration is on Friday.",
    "Haha, that's great!",
    "We decided to keep pgvector because it is fast.",
    "The weather was nice.",
    "I might move to Berlin next year.",
    "The job would start in March.",
    "你好！",
    "预算不超过500元。",
    "张经理可能会参加。",
    "我们决定下周三迁移。",
    "哈哈，太好了！",
    "e.g. this one, etc.",
    "line without an end",
]


@st.composite
def texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=12))
    seps = draw(st.lists(st.sampled_from([" ", " ", "", "\n", "\n\n", "  "]), min_size=len(parts), max_size=len(parts)))
    return "".join(p + s for p, s in zip(parts, seps, strict=True)).rstrip()


def made_of_sentences(body: str, pieces: list[str]) -> list[list[int]]:
    """Every way ``body`` is some of ``pieces``, in order, each with the whitespace after it, stripped at the
    ends (as lists of indices; none if it is not)."""

    @cache
    def ways(pos: int, i: int) -> tuple[tuple[int, ...], ...]:
        found: list[tuple[int, ...]] = []
        for j in range(i, len(pieces)):
            piece = pieces[j] if pos else pieces[j].lstrip()
            if body[pos:] == piece.rstrip():
                found.append((j,))
            elif piece.strip() and body.startswith(piece, pos):
                found.extend((j, *rest) for rest in ways(pos + len(piece), j + 1))
        return tuple(found)

    return [list(w) for w in ways(0, 0)] if body else []


@settings(max_examples=300, deadline=None)
@given(texts(), st.integers(1, 700))
def test_condense_properties(text: str, max_chars: int) -> None:
    out = condense(text, max_chars=max_chars)
    assert out == condense(text, max_chars=max_chars)
    pieces, weights = weigh(text)
    body = MARKER.sub("", out)
    if out == text.strip():
        assert len(out) <= max_chars
        return
    assert MARKER.search(out), out  # something was left out, and it says so
    kept = [i for i, w in enumerate(weights) if w.score]
    filtered = join_sentences(pieces, kept) if kept else text.strip()
    ways = made_of_sentences(body, pieces)
    assert ways or filtered.startswith(body), (text, max_chars, out)
    if ways:
        # never certain where the text was not: a kept sentence comes with the hedges before it in its paragraph
        def sound(chosen: list[int]) -> bool:
            return all(
                h in chosen
                for i in chosen
                for h, w in enumerate(weights)
                if w.hedged and h < i and w.paragraph == weights[i].paragraph
            )

        assert any(sound(chosen) for chosen in ways), (text, max_chars, out)
    if max_chars >= len(" …[+1000 chars]") + C.MIN_BODY_CHARS:
        assert len(out) <= max_chars


# --- focus -----------------------------------------------------------------------------------------------


def test_focus_prefers_the_query_sentence() -> None:
    text = (
        "The cluster has 12 nodes in Frankfurt. Kafka retention is 7 days for the orders topic. "
        "Backups run every night at 2 am. Thanks so much!"
    )
    sentences, weights = weigh(text)
    tokens = [max(1, len(s) // 4) for s in sentences]
    chosen = focus(sentences, weights, "How many days is the Kafka retention?", max_tokens=tokens[1], tokens=tokens)
    assert chosen == [1]
    everything = focus(sentences, weights, "retention", max_tokens=1000, tokens=tokens)
    assert everything == [0, 1, 2]  # filler never, text order always
    assert join_sentences(sentences, everything) == text.removesuffix(" Thanks so much!")
    assert focus(sentences, weights, "retention", max_tokens=0, tokens=tokens) == []
    # with no shared words: the heaviest first, earlier on ties
    assert focus(sentences, weights, "", max_tokens=tokens[0], tokens=tokens) == [0]
    assert focus(sentences, weights, C.query_terms("nightly backups"), max_tokens=tokens[2], tokens=tokens) == [2]


def test_focus_keeps_the_hedge_rule_and_chinese() -> None:
    sentences, weights = weigh(HEDGED_EN)
    tokens = [10, 10]
    assert focus(sentences, weights, "when does the job start", max_tokens=15, tokens=tokens) == [0]  # not [1]
    assert focus(sentences, weights, "when does the job start", max_tokens=20, tokens=tokens) == [0, 1]
    sentences, weights = weigh("数据库在周五迁移。预算不超过500元。")
    assert focus(sentences, weights, "预算是多少", max_tokens=10, tokens=[10, 10]) == [1]


def test_terms() -> None:
    assert terms("The retention days") == terms("retention day")
    assert {"mov"} <= terms("moving") and terms("moved") == terms("moves")
    assert "the" not in terms("the cat") and "not" in terms("not now")
    assert {"预算", "预", "算"} <= terms("预算")


# --- levels ----------------------------------------------------------------------------------------------


def levels(content: str, **kw: object) -> list[str]:
    args: dict[str, object] = {
        "item_type": "episode",
        "content": content,
        "key": None,
        "value": None,
        "variants": None,
        "token_cost": 100,
    }
    args.update(kw)
    return derive_levels(**args)  # type: ignore[arg-type]


def test_derive_levels_condenses_l1_and_l2() -> None:
    l1, l2, l3, l4 = levels(EN)
    assert len(l1) <= int(len(EN) * C.L1_SHARE) and len(l2) <= int(len(EN) * C.L2_SHARE)
    assert "Hey Mel" not in l1 and "budget must not exceed $5,000" in l2
    assert l4.startswith("[ctx: episode: Hey Mel!")
    # Prose with no key has no fields: L3 is L2, never the text's start cut off mid-sentence.
    assert l3 == l2
    keyed = levels(EN, key="migration.plan")
    assert keyed[2] == C.truncate(f"migration.plan: {EN}", C.L3_MAX_CHARS)


def test_derive_levels_short_variants_and_json() -> None:
    short = "Thanks! The budget is 500."
    assert levels(short)[:2] == [short, short]
    given_ = levels(EN, variants={"condensed": "c", "summary": "s", "index": "i"})
    assert given_[0] == "c" and given_[1] == "s" and given_[3] == "i"
    only_condensed = levels(EN, variants={"condensed": "c"})
    assert only_condensed[0] == "c" and "budget" in only_condensed[1]
    doc = '{"topic": "orders", "retention_days": 7, "partitions": 12, "note": "' + "x" * 200 + '"}'
    l1, l2, *_ = levels(doc, item_type="tool_result")
    assert l1 == C.truncate(doc, int(len(doc) * C.L1_SHARE))
    assert l2 == C.first_sentences(doc, min(C.L2_MAX_CHARS, max(C.L2_MIN_CHARS, int(len(doc) * C.L2_SHARE))))


@settings(max_examples=100, deadline=None)
@given(texts())
def test_levels_are_monotone(text: str) -> None:
    derived = levels(text)
    counts = [len(t) for t in derived]
    texts_, tokens = C.assemble_levels(text, len(text), derived, counts)
    assert all(a >= b for a, b in pairwise(tokens))
    assert texts_[0] == text
