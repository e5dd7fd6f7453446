"""Chinese patterns of the ``rules`` extractor (``scoring/extract_rules/``), last part: other facts, and the
order in which the Chinese patterns are tried. Pure: standard library only, no state."""

# Chinese full-width punctuation (，。：！？) is what this module reads: it is not a typo for ASCII.
# ruff: noqa: RUF001, RUF003

from __future__ import annotations

import re

from scoring.extract_rules.chinese_slots import _ZH_SUBJ_ADV, _budget_zh, _limit_zh, _slots_zh
from scoring.extract_rules.chinese_wants import _constraint_zh, _decision_zh, _goal_zh, _preference_zh
from scoring.extract_rules.clauses import _ZH_QUESTION
from scoring.extract_rules.fields import _bare_amount, _labelled
from scoring.extract_rules.lexicon import (
    ACTIVITY_VERBS_ZH,
    EVENT_VERBS_ZH,
    HABIT_PAST_ZH,
)
from scoring.extract_rules.records import CONF_EVENT, CONF_FACT, _Body, _Context, _fact, _Hit, _Matcher
from scoring.extract_rules.values import _PRONOUN_ZH
from scoring.extract_rules.vocabulary import _PEOPLE_ZH

_FACT_ZH = [
    re.compile(
        _ZH_SUBJ_ADV + r"(?:有|养了|养着|养|有了)\s*(?:一|两|二|三|四|五|六|七|八|九|十|几|\d{1,3})\s*"
        r"(?:个|只|条|位|台|辆|套|名|家|所|匹|头)\S+"
    ),
    re.compile(_ZH_SUBJ_ADV + r"(?:在|正在)(?:" + ACTIVITY_VERBS_ZH + r")\S+"),
    re.compile(
        r"^我(?:们)?(?:刚|刚刚|最近|上周|上个月|昨天|前几天|今年|去年|已经|也|还|终于|之前|一起)*"
        r"(?:" + EVENT_VERBS_ZH + r")\S*"
    ),
    re.compile(_ZH_SUBJ_ADV + r"是(?:一个|一名|一位|个|名|位)?\s*(?P<np>[^，,。！!？?]{1,12})$"),
]
# 我以前经常去健身房 / 我小时候学过钢琴: a habit or an episode of the writer's past (a past state, 我以前住在北京
# / 我以前是老师, says nothing true now, and a negation nothing at all).
_HABIT_PAST_ZH_RE = re.compile(
    r"^我(?:们)?" + HABIT_PAST_ZH + r"(?:经常|常常|常|总是|也|还|一直|每周|每天|每年|天天)*"
    r"(?!是|住|在\S{0,12}(?:工作|上班)|不|没|喜欢|爱|讨厌|觉得|以为|想|认为|也是)(?P<o>[^，,。！!？?]{2,})$"
)
_MY_X_IS_ZH = re.compile(r"^我(?:们)?的(?P<x>[^，,。是]{1,8})是\s*(?P<o>.+)$")
_NP_BLOCK_ZH = re.compile(
    r"^(?:说|想|觉得|问|不是|否|真的|在问|来|要|因为|为了|这样|那样|这么|那么|故意|开玩笑|随便|对的|错的|认真的|的)"
)


def _fact_zh(b: _Body, ctx: _Context) -> list[_Hit]:
    """Other facts in Chinese: 我有两个孩子 / 我养了一只猫 / 我在学日语 / 我刚搬到了… / 我是新手 / 我的电脑是
    MacBook. "我的<person>…" is about that person: nothing."""
    f = b.fold
    for i, p in enumerate(_FACT_ZH):
        m = p.match(f)
        if not m:
            continue
        if i == 3:
            np_ = m.group("np")
            if _NP_BLOCK_ZH.match(np_) or _PRONOUN_ZH.match(np_) or _ZH_QUESTION.search(np_):
                return []
        return [_fact(b, CONF_EVENT if i == 2 else CONF_FACT)]
    m = _HABIT_PAST_ZH_RE.match(f)
    if m:
        return [] if _PRONOUN_ZH.match(m.group("o")) else [_fact(b, CONF_EVENT)]
    m = _MY_X_IS_ZH.match(f)
    if m:
        x = m.group("x")
        if re.search(_PEOPLE_ZH, x) or re.match(r"^(?:意思|问题|想法|建议|看法|观点|理解|错|猜测|疑问)", x):
            return []
        o = m.group("o").strip()
        return [_fact(b, CONF_FACT)] if o and not _PRONOUN_ZH.match(o) and not o.startswith("不") else []
    return []


_ZH_MATCHERS: tuple[_Matcher, ...] = (
    _labelled,
    _budget_zh,
    _limit_zh,
    _bare_amount,
    _slots_zh,
    _preference_zh,
    _constraint_zh,
    _decision_zh,
    _goal_zh,
    _fact_zh,
)
