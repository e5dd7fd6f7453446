"""The ``rules`` extractor (scoring/extract_rules/): what it proposes for plain first-person statements in
English and Chinese, and — the harder half — what it must leave alone: questions, hypotheses, other
people's words, negated facts, requests to the assistant and generic statements."""

# Chinese full-width punctuation (，。：！？) is what these tests feed the extractor.
# ruff: noqa: RUF001, RUF003

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.extract_rules import SLOTS, VERSION, extract, slug
from scoring.extract_rules import lexicon as extract_lexicon
from scoring.extraction import MAX_QUOTE_CHARS, Message, Proposal, check


def only(text: str) -> Proposal:
    """The one record ``text`` yields."""
    records = extract(text)
    assert len(records) == 1, records
    return records[0]


def grounded(text: str, records: list[Proposal]) -> None:
    """Every record passes the service's own checks against its message."""
    for p in records:
        assert p.quote in text
        assert p.quote == p.quote.strip()
        got = check(p, [Message(index=p.message_index, role="user", text=text)])
        assert not hasattr(got, "reason"), got


def test_public_api() -> None:
    assert VERSION == "rules/1"
    assert {"budget", "location", "diet", "role", "name", "language", "employer", "team_size"} <= set(SLOTS)
    assert all(isinstance(v, str) and v for v in SLOTS.values())
    assert extract("") == []
    assert extract("   \n ") == []
    assert extract("I love sushi", message_index=7)[0].message_index == 7


# --- slots: (text, type, key, value) ----------------------------------------------------------------------

SLOT_CASES: list[tuple[str, str, str, Any]] = [
    ("My budget is 5,000.", "constraint", "budget", 5000),
    ("my budget is $2,500", "constraint", "budget", 2500),
    ("Our budget is around 8k.", "constraint", "budget", 8000),
    ("I have a budget of €1.5k for the trip", "constraint", "budget", 1500),
    ("I can't spend more than $500.", "constraint", "budget", 500),
    ("I can spend up to 300 dollars", "constraint", "budget", 300),
    ("Make the budget 8000.", "constraint", "budget", 8000),
    ("Budget: 12,000", "constraint", "budget", 12000),
    ("Keep it under $800 please.", "constraint", "budget", 800),
    ("My budget isn't 5000 but 8000.", "constraint", "budget", 8000),
    ("我的预算是5000元", "constraint", "budget", 5000),
    ("预算大概五千块", "constraint", "budget", 5000),
    ("预算改成 8000", "constraint", "budget", 8000),
    ("预算不是5000而是8000", "constraint", "budget", 8000),
    ("我最多能花3000", "constraint", "budget", 3000),
    ("价格不超过2万元", "constraint", "budget", 20000),
    ("The trip must not cost more than 2,000 euros.", "constraint", "budget", 2000),
    ("预算不能超过五千元", "constraint", "budget", 5000),
    ("I'm vegetarian.", "fact", "diet", "vegetarian"),
    ("I'm a strict vegan", "fact", "diet", "vegan"),
    ("I only eat halal food.", "fact", "diet", "halal"),
    ("I'm lactose intolerant", "fact", "diet", "lactose-free"),
    ("Oh, and I went vegan last year.", "fact", "diet", "vegan"),
    ("我是素食者", "fact", "diet", "vegetarian"),
    ("我吃素", "fact", "diet", "vegetarian"),
    ("I live in Berlin with my wife.", "fact", "location", "berlin"),
    ("I'm based in New York City.", "fact", "location", "new york city"),
    ("I just moved to Lisbon last year", "fact", "location", "lisbon"),
    ("我住在北京", "fact", "location", "北京"),
    ("我搬到上海了", "fact", "location", "上海"),
    ("I'm originally from Sweden.", "fact", "hometown", "sweden"),
    ("I grew up in Osaka", "fact", "hometown", "osaka"),
    ("我是成都人", "fact", "hometown", "成都"),
    ("我来自广州", "fact", "hometown", "广州"),
    ("My name is Sam.", "fact", "name", "sam"),
    ("Call me Alex.", "fact", "name", "alex"),
    ("我叫小王", "fact", "name", "小王"),
    ("叫我老李就行", "fact", "name", "老李"),
    ("I'm a senior software engineer.", "fact", "role", "senior software engineer"),
    ("I work as a nurse.", "fact", "role", "nurse"),
    ("I'm retired", "fact", "role", "retired"),
    ("我是一名产品经理", "fact", "role", "产品经理"),
    ("I work at Acme Corp.", "fact", "employer", "acme corp"),
    ("I work for a small bank in Zurich", "fact", "employer", "small bank"),
    ("我在阿里巴巴集团工作", "fact", "employer", "阿里巴巴集团"),
    ("I speak English and Spanish.", "fact", "language", "english, spanish"),
    ("My native language is Portuguese", "fact", "language", "portuguese"),
    ("Always answer in French.", "fact", "language", "french"),
    ("以后用中文回答我", "fact", "language", "chinese"),
    ("我会说粤语", "fact", "language", "cantonese"),
    ("Our team is 5 people.", "fact", "team_size", 5),
    ("We're a team of four.", "fact", "team_size", 4),
    ("we only have 3 engineers", "fact", "team_size", 3),
    ("我们团队有三个开发", "fact", "team_size", 3),
    ("I'm 34 years old.", "fact", "age", 34),
    ("我今年30岁", "fact", "age", 30),
    ("I'm in PST.", "fact", "timezone", "pst"),
    ("My timezone is UTC+8", "fact", "timezone", "utc+8"),
    ("Diet: vegan", "fact", "diet", "vegan"),
    ("Location: Berlin, Germany", "fact", "location", "berlin"),
    ("预算：5000", "constraint", "budget", 5000),
]


@pytest.mark.parametrize(("text", "kind", "key", "value"), SLOT_CASES, ids=[c[0] for c in SLOT_CASES])
def test_slot_statements(text: str, kind: str, key: str, value: Any) -> None:
    records = [p for p in extract(text) if p.key == key]
    assert len(records) == 1, extract(text)
    p = records[0]
    prohibition = any(w in text for w in ("can't", "must not", "不能"))  # a budget said as a prohibition is hard
    assert (p.type, p.key, p.value, p.hard) == (kind, key, value, prohibition)
    assert 0.0 <= p.confidence <= 1.0
    grounded(text, records)


def test_role_and_employer_in_one_clause() -> None:
    text = "I'm a data scientist at Spotify."
    got = {p.key: p.value for p in extract(text)}
    assert got == {"role": "data scientist", "employer": "spotify"}


# --- the budget sequence --------------------------------------------------------------------------------


def test_budget_sequence_conflicts_and_the_later_wins() -> None:
    first = only("My budget is 5,000.")
    assert (first.key, first.value) == ("budget", 5000)
    for later in ("Actually, make the budget 8,000.", "预算改成 8000", "Actually my budget is 8k", "其实预算是八千"):
        p = only(later)
        assert (p.type, p.key, p.value, p.hard) == ("constraint", "budget", 8000, False), later
        assert p.key == first.key and p.value != first.value


@pytest.mark.parametrize(
    "text",
    [
        "My budget is 5,000. Actually, make it 8,000.",
        "My budget is 5000 — no, 8000.",
        "My budget isn't 5000, it's 8000.",
        "我的预算是5000。不对，改成8000。",
        "预算5000，其实改成8000吧",
    ],
)
def test_a_correction_in_the_same_message_keeps_only_the_last_value(text: str) -> None:
    p = only(text)
    assert (p.key, p.value) == ("budget", 8000)
    grounded(text, [p])


def test_a_bare_correction_without_a_slot_says_nothing() -> None:
    # one message alone: nothing says what the number is
    assert extract("Actually, make it 8,000.") == []
    assert extract("改成8000") == []


def test_corrections_rank_above_plain_statements() -> None:
    assert only("Actually, I live in Rome.").confidence > only("I live in Rome.").confidence


def test_not_x_but_y_reads_y() -> None:
    assert only("I'm not vegetarian, I'm vegan.").value == "vegan"
    assert only("我不是素食者，而是纯素食者").value == "vegan"
    assert only("I don't live in Paris anymore, I moved to Berlin.").value == "berlin"


# --- preferences ------------------------------------------------------------------------------------------

PREFERENCE_CASES = [
    ("I love hiking in the mountains.", "like", "hiking in the mountains"),
    ("I really enjoy jazz, especially Coltrane.", "like", "jazz"),
    ("I prefer Postgres over MySQL.", "like", "Postgres"),
    ("I'm a big fan of Korean food!", "like", "Korean food"),
    ("I'm really into bouldering these days", "like", "bouldering"),
    ("We love board games", "like", "board games"),
    ("I'd prefer window seats", "like", "window seats"),
    ("I hate cilantro.", "dislike", "cilantro"),
    ("I don't like spicy food.", "dislike", "spicy food"),
    ("I can't stand loud restaurants", "dislike", "loud restaurants"),
    ("I'm not a fan of open offices.", "dislike", "open offices"),
    ("Honestly, I really dislike meetings before 10am", "dislike", "meetings before 10am"),
    ("我喜欢寿司。", "like", "寿司"),
    ("我很喜欢爬山", "like", "爬山"),
    ("嗯，我更喜欢用 Python 写代码", "like", "用 Python 写代码"),
    ("我讨厌香菜", "dislike", "香菜"),
    ("我不喜欢吃辣", "dislike", "吃辣"),
    ("我受不了吵闹的餐厅", "dislike", "吵闹的餐厅"),
    ("I'm really interested in machine learning.", "like", "machine learning"),
    ("I'm not interested in crypto", "dislike", "crypto"),
    ("我对机器学习很感兴趣", "like", "机器学习"),
    ("我对政治不太感兴趣", "dislike", "政治"),
]


@pytest.mark.parametrize(("text", "polarity", "value"), PREFERENCE_CASES, ids=[c[0] for c in PREFERENCE_CASES])
def test_preferences(text: str, polarity: str, value: str) -> None:
    p = only(text)
    assert (p.type, p.key, p.hard) == ("preference", None, False)
    assert p.profile is not None
    assert (p.profile.dimension, p.profile.polarity, p.profile.value) == ("preference", polarity, value)
    assert p.profile.key == slug(value)
    grounded(text, [p])


def test_a_list_after_a_comma_stays_in_the_object() -> None:
    p = only("I love sushi, ramen and pizza.")
    assert p.profile is not None and p.profile.value == "sushi, ramen and pizza"
    q = only("I love sushi, especially salmon.")
    assert q.profile is not None and q.profile.value == "sushi"


@pytest.mark.parametrize(
    ("text", "value", "key"),
    [
        ("My favourite colour is blue.", "blue", "favorite-colour"),
        ("Sushi is my favorite food", "Sushi", "favorite-food"),
    ],
)
def test_favourites_are_keyed_by_what_they_are_the_favourite_of(text: str, value: str, key: str) -> None:
    p = only(text)
    assert p.type == "preference" and p.profile is not None
    assert (p.profile.value, p.profile.key, p.profile.polarity) == (value, key, "like")


def test_preferences_rank_below_slot_statements() -> None:
    assert only("I love sushi").confidence < only("I'm vegan").confidence


# --- constraints ------------------------------------------------------------------------------------------

CONSTRAINT_CASES = [
    ("Don't recommend Redis Cluster.", True),
    ("Never suggest MongoDB to me", True),
    ("Please don't use bullet points.", True),
    ("We can't use AWS.", True),
    ("We must not store passwords in plain text", True),
    ("We're not allowed to use GPL code.", True),
    ("No Redis please.", True),
    ("Avoid Kubernetes.", True),
    ("Stop recommending Java frameworks", True),
    ("Let's not use Redis.", True),
    ("I don't eat pork.", True),
    ("I'm allergic to peanuts.", True),
    ("We must use Postgres.", True),
    ("Always cite your sources.", True),
    ("Don't call me before 9am.", True),
    ("At most 3 options.", False),
    ("No more than two hours a day.", False),
    ("I try to avoid sugar", False),
    ("别推荐 Redis Cluster", True),
    ("不要给我推荐MongoDB", True),
    ("我们不能用 AWS", True),
    ("千万别用 PHP", True),
    ("禁止使用 eval", True),
    ("不可以用 GPL 的代码", True),
    ("我不吃猪肉", True),
    ("我对花生过敏", True),
    ("必须用 PostgreSQL", True),
    ("尽量不要用 Java", False),
    ("回答不超过200字", False),
    ("The laptop must weigh at most 1.5 kg.", True),
    ("The API must not return nulls", True),
    ("The report should fit on one page.", False),
    ("笔记本的重量必须不超过1.5公斤。", True),
    ("接口不能返回空值", True),
]


@pytest.mark.parametrize(("text", "hard"), CONSTRAINT_CASES, ids=[c[0] for c in CONSTRAINT_CASES])
def test_constraints(text: str, hard: bool) -> None:
    p = only(text)
    assert (p.type, p.key, p.value, p.hard) == ("constraint", None, None, hard)
    grounded(text, [p])


def test_a_constraint_with_its_reason_is_one_hard_record() -> None:
    text = "We have a small ops team, so don't recommend anything they can't run alone — no Redis Cluster"
    p = only(text)
    assert (p.type, p.hard) == ("constraint", True)
    assert p.quote == text  # the reason and both prohibitions, one record


def test_a_chinese_constraint_with_its_reason() -> None:
    text = "运维人手不多，别推荐运维搞不定的方案"
    p = only(text)
    assert (p.type, p.hard, p.quote) == ("constraint", True, text)


@pytest.mark.parametrize(
    "text",
    [
        "I'm allergic to peanuts, never suggest them.",
        "I can't eat shellfish — avoid it in recipes.",
        "我对花生过敏，别推荐它们",
    ],
)
def test_a_rule_about_them_continues_the_constraint_before_it(text: str) -> None:
    p = only(text)
    assert (p.type, p.hard, p.quote) == ("constraint", True, text.rstrip("."))


def test_a_condition_on_the_assistant_keeps_the_rule() -> None:
    # judgement call: a rule about what the assistant picks holds whatever it recommends
    p = only("If you recommend something, don't pick Redis.")
    assert (p.type, p.hard) == ("constraint", True)
    assert only("如果你要推荐数据库，别选 MongoDB").hard


def test_someone_elses_trait_can_be_the_reason_for_the_users_rule() -> None:
    text = "My wife is vegetarian, so no meat in the recipes."
    p = only(text)
    assert (p.type, p.hard, p.key) == ("constraint", True, None)  # and no diet for the writer


# --- facts, goals, decisions ------------------------------------------------------------------------------

FACT_CASES = [
    "I have two kids and a dog.",
    "I'm a morning person.",
    "I'm married.",
    "I'm learning Spanish.",
    "I work from home.",
    "My laptop is a ThinkPad.",
    "I've been painting a lot lately.",
    "I just got back from a trip to Japan.",
    "I applied to three adoption agencies",
    "我有两个孩子",
    "我养了一只猫",
    "我在学日语",
    "我是新手",
    "I use a Mac.",
    "We run Kubernetes in production.",
    "I teach high school math",
]


@pytest.mark.parametrize("text", FACT_CASES)
def test_facts(text: str) -> None:
    p = only(text)
    assert (p.type, p.key, p.hard, p.profile) == ("fact", None, False, None)
    grounded(text, [p])


GOAL_CASES = [
    ("I want to learn Japanese.", "learn Japanese"),
    ("I'd like to run a marathon next year", "run a marathon next year"),
    ("We need to migrate to Kubernetes by March.", "migrate to Kubernetes by March"),
    ("I'm trying to lose weight.", "lose weight"),
    ("I plan to move to Canada", "move to Canada"),
    ("My goal is to save $10,000 this year.", "save $10,000 this year"),
    ("我想学日语", "学日语"),
    ("我打算明年去日本", "明年去日本"),
    ("我们需要迁移到 Kubernetes", "迁移到 Kubernetes"),
    ("我的目标是减肥十斤", "减肥十斤"),
]


@pytest.mark.parametrize(("text", "value"), GOAL_CASES, ids=[c[0] for c in GOAL_CASES])
def test_goals(text: str, value: str) -> None:
    p = only(text)
    assert (p.type, p.key, p.hard) == ("goal", None, False)
    assert p.profile is not None
    assert (p.profile.dimension, p.profile.value, p.profile.key) == ("goal", value, slug(value))
    grounded(text, [p])


DECISION_CASES = [
    "Let's go with Postgres.",
    "We'll use FastAPI for the API.",
    "I decided to buy the ThinkPad.",
    "I'll take the blue one.",
    "We went with Stripe.",
    "就用 Postgres 吧",
    "那就选 ThinkPad",
    "我决定买 MacBook",
    "定了，用 FastAPI",
]


@pytest.mark.parametrize("text", DECISION_CASES)
def test_decisions(text: str) -> None:
    p = only(text)
    assert (p.type, p.key, p.hard) == ("decision", None, False)
    grounded(text, [p])


def test_several_records_in_one_message() -> None:
    text = "Hi! I'm a nurse and I live in Leeds. I love gardening, but please don't suggest anything with bees."
    got = [(p.type, p.key) for p in extract(text)]
    assert got == [("fact", "role"), ("fact", "location"), ("preference", None), ("constraint", None)]
    grounded(text, extract(text))


def test_filler_is_trimmed_from_the_quote() -> None:
    assert only("Oh, I love sushi!").quote == "I love sushi"
    assert only("嗯，我喜欢猫").quote == "我喜欢猫"
    assert only("- I live in Oslo").quote == "I live in Oslo"


# --- conversation: first-person statements after a time or a greeting, shared subjects, past and ongoing
# activity, habits, likings and goals said in passing -------------------------------------------------------

# (text, type, quote): the one record and its exact quote
CONVERSATION_CASES: list[tuple[str, str, str]] = [
    # a time before the subject: kept in the quote
    ("Just yesterday I joined a nearby church.", "fact", "yesterday I joined a nearby church"),
    ("Last week I started a pottery class.", "fact", "Last week I started a pottery class"),
    ("A few days ago we adopted a puppy!", "fact", "A few days ago we adopted a puppy"),
    ("This summer I'm learning to surf", "fact", "This summer I'm learning to surf"),
    ("上周我参加了一个马拉松", "fact", "上周我参加了一个马拉松"),
    ("昨天我去了博物馆", "fact", "昨天我去了博物馆"),
    # greetings and frames of the writer's own news: dropped from the quote
    (
        "Hey John! Haven't talked in a few days, wanted to let you know I joined a travel club!",
        "fact",
        "I joined a travel club",
    ),
    ("I'm happy to say I finished my first marathon", "fact", "I finished my first marathon"),
    ("Guess what, I got promoted!", "fact", "I got promoted"),
    ("Just wanted to share that I started a new job", "fact", "I started a new job"),
    ("跟你说，我加入了一个读书会", "fact", "我加入了一个读书会"),
    ("想告诉你我加入了一个读书会", "fact", "我加入了一个读书会"),
    # a subject of several people that includes the writer
    ("My wife and I were hiking in the Alps.", "fact", "My wife and I were hiking in the Alps"),
    ("Me and my kids went camping last weekend", "fact", "Me and my kids went camping last weekend"),
    ("My wife and I love board games", "preference", "My wife and I love board games"),
    ("我和我老婆去了日本", "fact", "我和我老婆去了日本"),
    # habits of the past
    ("I used to compete in a few dance competitions", "fact", "I used to compete in a few dance competitions"),
    ("我以前经常去健身房", "fact", "我以前经常去健身房"),
    ("我小时候学过钢琴", "fact", "我小时候学过钢琴"),
    # likings
    ("I'm all about dramas and romcoms.", "preference", "I'm all about dramas and romcoms"),
    ("I'm a huge Star Wars fan", "preference", "I'm a huge Star Wars fan"),
    ("Dancing is my passion", "preference", "Dancing is my passion"),
    ("I've always loved the ocean", "preference", "I've always loved the ocean"),
    ("Love experimenting with spices.", "preference", "Love experimenting with spices"),
    ("I love the energy, diversity, and awesome food of this city.", "preference",
     "I love the energy, diversity, and awesome food of this city"),
    ("我是周杰伦的粉丝", "preference", "我是周杰伦的粉丝"),
    # what the writer did, is doing or is part of
    ("I just signed up Nike for a basketball shoe deal.", "fact", "I just signed up Nike for a basketball shoe deal"),
    ("I'm also in talks with Gatorade", "fact", "I'm also in talks with Gatorade"),
    ("I just contacted my mentor for adoption advice.", "fact", "I just contacted my mentor for adoption advice"),
    ("I've been involved in some charity work", "fact", "I've been involved in some charity work"),
    ("I'm running for office again.", "fact", "I'm running for office again"),
    ("I've finished my thesis!", "fact", "I've finished my thesis"),
    ("Just got some new shoes, too!", "fact", "got some new shoes"),
    ("我正在准备考研", "fact", "我正在准备考研"),
    # plans and aims
    ("I'm ready to be a mom", "goal", "I'm ready to be a mom"),
    ("We're thinking about going camping next month", "goal", "We're thinking about going camping next month"),
    ("My dream is to create a safe and loving home for these kids.", "goal",
     "My dream is to create a safe and loving home for these kids"),
    ("我准备好当妈妈了", "goal", "我准备好当妈妈了"),
    ("我们在考虑下个月去露营", "goal", "我们在考虑下个月去露营"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "kind", "quote"), CONVERSATION_CASES, ids=[c[0] for c in CONVERSATION_CASES])
def test_conversational_statements(text: str, kind: str, quote: str) -> None:
    p = only(text)
    assert (p.type, p.quote, p.key, p.hard) == (kind, quote, None, False)
    grounded(text, [p])


def test_past_events_rank_below_plain_facts() -> None:
    assert only("I just joined a travel club").confidence < only("I'm in talks with a sponsor").confidence


def test_a_list_after_and_stays_in_the_object() -> None:
    p = only("I love the energy, diversity, and awesome food of this city.")
    assert p.profile is not None and p.profile.value == "the energy, diversity, and awesome food of this city"


# Statements of the new kinds that must still yield nothing: compliments on the other's thing, asking for
# help, savouring a moment, reports of thought or feeling, someone else's deeds, negations, past states.
CONVERSATION_NOTHING = [
    "Awesome! Enjoy yourself!",  # a wish to the listener, not the speaker's taste
    "I love their work",
    "I love the freedom and connection it brings",
    "I love the color and texture",
    "I'm trying to figure out how to pick the right ones",
    "I want to savor all the good vibes",
    "I thought about it a lot.",
    "I loved it!",
    "I noticed your new haircut",
    "I'm doing well, thanks",
    "I'm thinking of you",
    "I'm kidding",
    "I saw your post",
    "I got lucky",
    "I made it!",
    "I'm not running for office again.",
    "I never joined the club.",
    "He joined a travel club.",
    "My wife joined a travel club.",
    "Yesterday he went to the museum.",
    "I used to be a teacher.",
    "I was wondering about that.",
    "Got it.",
    "Love you!",
    "我以前住在北京",
    "我以前是老师",
    "他上周去了博物馆",
    "He said, I love jazz.",
    "If I joined the club, I'd go every week.",
    "Did you join the club?",
    "I won't give up!",
    "Love the tattoo, did you just get it?",
    "Love and acceptance should be everyone's right.",
]
# Once wrongly stored as hard constraints.
NO_CONSTRAINT = [
    "No doubts",
    "I've never been to something like that",
    "I don't have big plans anyway",
    "Finally, I don't have to stress about it",
]


@pytest.mark.parametrize("text", CONVERSATION_NOTHING)
def test_conversational_negatives_yield_nothing(text: str) -> None:
    assert extract(text) == []


@pytest.mark.parametrize("text", NO_CONSTRAINT)
def test_no_constraint(text: str) -> None:
    assert not [p for p in extract(text) if p.type == "constraint"]


def test_lexicon_sources_compile_and_match_no_empty_string() -> None:
    import re

    names = [n for n in dir(extract_lexicon) if n.isupper() and isinstance(getattr(extract_lexicon, n), str)]
    assert len(names) >= 10
    for name in names:
        assert not re.fullmatch(getattr(extract_lexicon, name), ""), name


# --- what must yield nothing ------------------------------------------------------------------------------

QUESTIONS = [
    "do you like sushi?",
    "should I avoid Redis?",
    "what's my budget?",
    "Do you think I should use Postgres",
    "Is my budget enough for a MacBook?",
    "My budget is 5000, right?",
    "Would I like Rust?",
    "Why do I hate mornings?",
    "How about we go with Postgres?",
    "Am I vegetarian if I eat fish?",
    "I love sushi?",
    "你喜欢寿司吗？",
    "我应该用 Redis 吗",
    "我的预算是多少？",
    "我是不是应该避免 Redis",
    "我要不要搬到上海",
    "我喜欢什么",
]
HYPOTHETICALS = [
    "if I were vegetarian, what would I eat?",
    "If I were vegetarian I'd love tofu.",
    "suppose we had a budget of 10k",
    "I would like a bigger house if I had the money.",
    "imagine I lived in Paris",
    "What if I moved to Berlin?",
    "Let's say my budget is 3000.",
    "I wish I lived near the sea.",
    "For example, I could use Redis.",
    "Assuming we use AWS, how much would it cost?",
    "Hypothetically, I'd never use Java.",
    "如果我是素食者，我会吃豆腐",
    "假如我们的预算是一万",
    "要是我住在巴黎就好了",
    "假设我叫小明",
    "比如我喜欢寿司",
]
OTHER_PEOPLE = [
    "my friend hates cats",
    "my wife loves sushi",
    "he said don't use Redis",
    "she wants to move to Paris",
    "the article says never use MongoDB",
    'My boss said "we must not use AWS".',
    "My boss said: we must not use AWS.",
    "He told me, never use PHP.",
    '"Never use PHP," my boss said.',
    "My friend is vegetarian.",
    "My sister lives in London.",
    "They love hiking.",
    "My kids love pizza.",
    "According to the docs, never use eval.",
    "Translate this into French: I love sushi and I live in Paris.",
    "> I recommend Redis Cluster for your use case.",
    "Sarah: I love hiking. I live in Oslo.",
    "Assistant: I'd recommend Redis.",
    "我朋友讨厌猫",
    "我老婆喜欢寿司",
    "他说别用 Redis",
    "他说：别用 Redis",
    "她想搬到巴黎",
    "文章说千万别用 MongoDB",
    "老板说“我们不能用 AWS”",
    "帮我翻译一下：我喜欢寿司",
    "Apparently, you should never use eval.",
    "I heard Berlin is nice, so I love Berlin.",
    "据说永远不要用 eval",
    "听说，他喜欢寿司",
    "My colleague prefers tabs over spaces.",
    "My doctor told me to avoid salt.",
    "Her budget is 3000.",
    "My wife must not eat nuts.",
    "The docs say it must not be used.",
    "他必须走",
    "我朋友不能吃辣",
]
NEGATED = [
    "I'm not vegetarian.",
    "I don't live in Paris anymore.",
    "I'm no longer vegan.",
    "I used to live in Paris.",
    "I was a teacher.",
    "My name isn't Bob.",
    "I never said I was vegan.",
    "我不是素食者",
    "我不住在北京了",
    "我已经不吃素了",
    "I don't work at Google anymore.",
    "I'm not a developer.",
    "I never liked sushi.",
]
REQUESTS = [
    "please summarise this",
    "tell me a joke",
    "write a function that parses dates",
    "Summarize the article in 3 bullet points.",
    "Give me five ideas for dinner.",
    "Can you help me write a cover letter?",
    "I want you to write a poem about cats.",
    "I need you to fix this bug.",
    "I want to know how Redis works.",
    "I need help with my resume.",
    "Don't worry about it.",
    "Don't forget to add tests.",
    "No problem!",
    "No worries, thanks!",
    "Never mind.",
    "Don't get me wrong, it's good.",
    "I'll take a look.",
    "Let's do it.",
    "Let me know.",
    "Don't make it too long.",
    "Never suggest them.",
    "别推荐它们",
    "请总结一下这篇文章",
    "给我讲个笑话",
    "写一个解析日期的函数",
    "别担心",
    "不客气",
    "我想知道 Redis 是怎么工作的",
    "我要一杯咖啡",
]
GENERIC = [
    "People like sushi.",
    "Redis is fast.",
    "Everyone hates Mondays.",
    "Vegetarians don't eat meat.",
    "The budget for the film was $200 million.",
    "I love it!",
    "I love that you remembered.",
    "I like how you explained it.",
    "I'm so happy for you!",
    "I'm tired.",
    "Thanks, that helps!",
    "人们都喜欢寿司",
    "Redis 很快",
    "我觉得 Redis 很快",
    "我爱你",
    "我喜欢这个",
    "I'm a vegetarian restaurant owner? No.",
    "I have 8kids",
    "No doubts about it!",
    "Never been to something like that.",
    "I'm excited to see where this goes.",
    "I want to help make that happen.",
    "I'm gonna keep going!",
    "I have a question about Python.",
    "The view must be stunning.",
    "That must have been fun!",
    "这个不能吃",
]


@pytest.mark.parametrize(
    "text",
    QUESTIONS + HYPOTHETICALS + OTHER_PEOPLE + NEGATED + REQUESTS + GENERIC,
)
def test_yields_nothing(text: str) -> None:
    assert extract(text) == []


def test_a_statement_before_a_question_still_counts() -> None:
    assert only("I love sushi, do you?").profile == only("I love sushi").profile
    assert only("I'm vegetarian, can you suggest a dish?").key == "diet"


@pytest.mark.parametrize("text", ["my budget is 1e400", "my budget is flexible", "my budget is not 5000"])
def test_no_amount_no_budget(text: str) -> None:
    assert all(p.key is None for p in extract(text))


def test_diet_words_that_name_a_thing_are_no_diet() -> None:
    assert [p.key for p in extract("I'm a vegan chef.")] == ["role"]
    assert extract("I'm a vegetarian restaurant owner.")[0].key is None


def test_code_is_not_read() -> None:
    text = "Here is my script:\n```python\n# I love sushi\nmy_budget = 5000  # my budget is 5000\n```\nIt fails."
    assert extract(text) == []
    assert extract("Run `I hate cats` in the shell") == []


def test_a_long_quote_is_cut_back_to_the_constraint() -> None:
    text = "We have " + "a very, " * 200 + "so don't recommend Redis"
    p = only(text)
    assert len(p.quote) <= MAX_QUOTE_CHARS and p.quote in text


# --- for any text ---------------------------------------------------------------------------------------

_WORDS = st.sampled_from(
    [
        "I", "we", "my", "budget", "is", "5,000", "8k", "don't", "recommend", "Redis", "love", "hate", "not",
        "if", "?", ",", ".", "—", "actually", "make", "it", "live", "in", "Berlin", "I'm", "vegan", "no",
        "我", "喜欢", "预算", "是", "8000", "，", "。", "别", "推荐", "不是", "而是", "？", "吗", '"', "“", "”",
        "\n", "```", "`", ">", "Sarah:", "let's", "go", "with", "want", "to", "五千", "改成", "  ",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.lists(_WORDS, max_size=40).map(" ".join), st.lists(_WORDS).map("".join)))
def test_every_quote_is_a_span_of_the_text(text: str) -> None:
    records = extract(text)
    grounded(text, records)
    for p in records:
        assert p.quote and p.quote in text
        assert len(p.quote) <= MAX_QUOTE_CHARS
        assert 0.0 <= p.confidence <= 1.0
        assert not p.hard or p.type == "constraint"
        assert p.key is None or p.key in SLOTS
    assert extract(text) == records  # deterministic
