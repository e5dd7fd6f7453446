"""Chinese patterns of the ``rules`` extractor (``scoring/extract_rules/``), first part: budget, limits and
the slot facts (``SLOTS``). Pure: standard library only, no state."""

# Chinese full-width punctuation (，。：！？) is what this module reads: it is not a typo for ASCII.
# ruff: noqa: RUF001, RUF003

from __future__ import annotations

import re

from scoring.extract_rules.clauses import _ZH_QUESTION
from scoring.extract_rules.english_slots import _MONEY_WORD, _languages
from scoring.extract_rules.records import _I, CONF_FACT, CONF_LIMIT, _Body, _bonus, _Context, _fact, _Hit, _slot
from scoring.extract_rules.values import _PRONOUN_ZH, _ZH_NUMBER, _amount, _budget_after, _low, _number, _trim
from scoring.extract_rules.vocabulary import _DIETS, _LANGUAGE_ZH, _OCCUPATIONS_ZH, _ZH_ADV, _ZH_SUBJ

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
    return _budget_after(_BUDGET_ZH, b, ctx)


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
