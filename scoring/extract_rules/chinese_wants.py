"""Chinese patterns of the ``rules`` extractor (``scoring/extract_rules/``), second part: what the writer
wants: preferences, constraints (prohibitions, requirements), decisions and goals. Pure: standard library
only, no state."""

# Chinese full-width punctuation (，。：！？) is what this module reads: it is not a typo for ASCII.
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

import re
from dataclasses import replace

from scoring.extract_rules.chinese_slots import _ZH_SUBJ_ADV, _zh_value
from scoring.extract_rules.records import (
    CONF_DECISION,
    CONF_GOAL,
    CONF_LIMIT,
    CONF_PREFERENCE,
    _Body,
    _bonus,
    _Context,
    _hard,
    _Hit,
)
from scoring.extract_rules.values import _MAX_PROFILE_KEY, _PRONOUN_ZH, _TRAIL_CHARS, _phrase, _profile, _trim, slug
from scoring.extract_rules.vocabulary import _PEOPLE_ZH, _ZH_SUBJ
from scoring.extraction import Polarity

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
