"""Word lists of the ``rules`` extractor (``scoring/extract_rules/``) for the plain first-person statements
of conversation: what opens them (a time, a greeting frame), which past and progressive verbs report what the
writer did, and which ones only report a thought, a feeling or a speech act. Pure data (regular-expression
sources, lower case, alternatives joined by ``|``): standard library only, no state.

Every list is general English or Chinese usage; none names a particular conversation.
"""

from __future__ import annotations

from typing import Final

_DAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|wed|thu|fri|sat|sun"
_MONTHS = (
    r"january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_PERIODS = r"week|weekend|month|year|summer|winter|spring|fall|autumn|night|semester|term|season|holidays?"
_COUNT = r"a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|a\s+couple(?:\s+of)?|several|some|\d{1,3}"

# A time said before the subject: "Yesterday I…", "Last week we…", "A few days ago I…", "When I was a kid
# I…". The extractor keeps it in the quote (it dates the statement) and reads the statement after it.
TIME_LEAD_EN: Final = (
    r"(?:just\s+|only\s+|earlier\s+|so\s+|and\s+|but\s+)?"
    r"(?:yesterday(?:\s+(?:morning|afternoon|evening|night))?|today|tonight|this\s+(?:morning|afternoon|evening)"
    r"|last\s+night|the\s+other\s+(?:day|night|week)|earlier(?:\s+today|\s+this\s+week)?|recently|lately"
    r"|these\s+days|nowadays|over\s+the\s+(?:weekend|holidays|summer|winter|break|past\s+(?:few\s+)?\w+)"
    r"|(?:last|this\s+past|this|past)\s+(?:" + _PERIODS + r"|" + _DAYS + r")"
    r"|(?:on|last|this)\s+(?:" + _DAYS + r")|(?:in|last|this|back\s+in)\s+(?:" + _MONTHS + r"|\d{4})"
    r"|(?:" + _COUNT + r")\s+(?:days?|weeks?|months?|years?)\s+ago"
    r"|(?:for|over)\s+the\s+(?:past|last)\s+(?:(?:" + _COUNT + r")\s+)?(?:days?|weeks?|months?|years?)"
    r"|when\s+i\s+was\s+(?:a\s+kid|a\s+child|a\s+teen(?:ager)?|little|young(?:er)?|\d{1,2}|in\s+(?:high\s+school"
    r"|college|school|university|my\s+\w+))|as\s+a\s+(?:kid|child|teen(?:ager)?)|growing\s+up|at\s+the\s+weekend)"
)
TIME_LEAD_ZH: Final = (
    r"(?:上周末|上个周末|上周|上个星期|上星期|上个月|上月|昨天晚上|昨天|昨晚|前天|前几天|前段时间|前阵子|今天早上|今早|今天|"
    r"今晚|今年|去年|前年|这周末|这个周末|周末|这周|这个月|刚才|几天前|几周前|几个月前|\d{1,4}年|小时候|大学的时候|"
    r"大学时|上大学的时候|读书的时候)"
)

# A frame that introduces the writer's own news: "wanted to let you know (that) I…", "I'm happy to say I…",
# "guess what, I…", "good news: we…". It is read as filler before a first-person statement (never alone).
OPENER_EN: Final = (
    r"(?:(?:i|we)\s+)?(?:just\s+|really\s+|also\s+)?(?:wanted|want|needed|had|have|had\s+to|gotta|got\s+to|have\s+to"
    r"|thought\s+i'd|thought\s+i\s+would)\s+(?:to\s+)?(?:let\s+you\s+know|tell\s+you|share(?:\s+with\s+you)?|say"
    r"|mention|update\s+you|fill\s+you\s+in|give\s+you\s+(?:an\s+|a\s+quick\s+)?update)(?:\s+that)?"
    r"|(?:i'm|i\s+am|we're|we\s+are)\s+(?:so\s+|really\s+|very\s+|super\s+)?(?:happy|glad|excited|thrilled|proud"
    r"|pleased|stoked|delighted|relieved|sad|sorry)\s+to\s+(?:say|share|announce|report|tell\s+you|let\s+you\s+know)"
    r"(?:\s+that)?"
    r"|guess\s+what|(?:some\s+)?(?:good|great|big|exciting|fun)\s+news|fun\s+fact|quick\s+update"
    r"|(?:i|we)\s+(?:have|'ve\s+got|got)\s+(?:some\s+)?(?:good\s+|great\s+|big\s+|exciting\s+)?news"
    r"|(?:i\s+)?(?:have|gotta|got)\s+to\s+(?:say|admit|tell\s+you)|i\s+must\s+(?:say|admit)|i\s+can\s+tell\s+you"
    r"|(?:i'm|i\s+am)\s+(?:happy|glad)\s+(?:that|because)?"
)
OPENER_ZH: Final = (
    r"(?:我)?(?:想|要|得)?(?:告诉你|跟你说|和你说|跟你讲|和你讲|跟你分享|和你分享)(?:一下|个好消息|一个好消息)?"
    r"|(?:有个|有一个|一个)?好消息(?:是)?|猜猜(?:怎么着|看)"
)

# Irregular past forms that report something done (the regular ones end in -ed).
PAST_IRREGULAR_EN: Final = (
    r"went|got|made|took|began|bought|built|brought|caught|chose|drew|drove|ate|fought|found|flew|gave|grew"
    r"|had|held|kept|led|left|lost|met|paid|ran|rode|sang|sold|sent|shot|sat|slept|spent|spoke|stood|swam"
    r"|taught|threw|won|wrote|wore|broke|became|came|did|saw|quit|hit|set\s+up|put\s+together|read|cut"
)
PARTICIPLE_IRREGULAR_EN: Final = (
    r"gone|gotten|made|taken|begun|bought|built|brought|caught|chosen|drawn|driven|eaten|found|flown|given"
    r"|grown|held|kept|led|left|lost|met|paid|run|ridden|sung|sold|sent|spent|taught|won|written|become"
    r"|done|seen|quit|set\s+up|put\s+together|read|finished|started"
)
# Past forms that report a thought, a feeling, a perception or a speech act, not an event of the writer's
# life ("I thought…", "I loved it", "I wanted to say…", "I noticed you…").
NOT_EVENT_VERBS_EN: Final = (
    r"wanted|needed|hoped|wished|wondered|realized|realised|noticed|figured|guessed|loved|liked|enjoyed|hated"
    r"|missed|appreciated|remembered|mentioned|talked|asked|agreed|believed|expected|imagined|supposed|laughed"
    r"|cried|smiled|worried|panicked|freaked|admired|tried|used|decided|seemed|looked|sounded|answered"
    r"|replied|responded|thanked|meant|dreamed|dreamt|happened|waited|stressed|guessed|assumed|promised"
    r"|pictured|preferred|confused|mixed|considered|planned|intended|hesitated|struggled\s+to|forgot|thought"
    r"|felt|knew|heard|said|told|understood|saw\s+(?:that|it|this|your|you)|had\s+(?:to|no|a\s+(?:feeling"
    r"|thought|question|idea|hunch|dream|doubt))|got\s+(?:to\s+(?:say|admit|go)|it|that|this|you|your|so)"
    r"|made\s+(?:my|me|it|that|this|you|your|sure)|did\s+(?:it|that|this|not|too)|came\s+(?:to|across\s+(?:your"
    r"|this|that))|left\s+(?:it|that|this)|kept\s+(?:it|that|thinking|wondering)|read\s+(?:that|it|this|your)"
)
# Progressive forms that are no activity: a state of mind, a speech act, a filler ("I'm doing well",
# "I'm thinking…", "I'm kidding"), or a goal read elsewhere ("I'm trying to…", "I'm going to…").
NOT_ACTIVITY_EN: Final = (
    r"going|doing|feeling|thinking|wondering|hoping|trying\s+to|looking\s+(?:forward|at|for\s+(?:advice|tips"
    r"|ideas|suggestions|recommendations))|kidding|joking|saying|telling|asking|talking|chatting|loving|enjoying"
    r"|hating|dying|missing|waiting|rooting|counting|sending|showing|attaching|staying|keeping|hanging|holding"
    r"|having\s+(?:a\s+)?(?:hard|tough|rough|great|good|blast|bad|fun)|sorry|glad|planning|aiming|guessing"
    r"|assuming|starting\s+to\s+(?:feel|get|think|see|realize|realise|wonder)|getting\s+(?!married|engaged"
    r"|ready\s+for|a\s+|my\s+|into\s+)|coming|leaning|struggling|begging|praying|wishing|freaking|stressing"
    r"|worrying|dreaming|reading\s+your|listening\s+to\s+you|following|meaning|being|seeing\s+(?:you|your|it|that"
    r"|this)|running\s+(?:late|out|low)|living\s+for|letting|learning\s+(?:a\s+(?:lot|ton)|so\s+much)"
)

# The quality of a thing someone shows ("I love the colour and texture"): a compliment, not a preference.
QUALITY_NOUNS_EN: Final = (
    r"colou?rs?|texture|textures|energy|vibes?|atmosphere|feel|feeling|look|looks|design|details?|shapes?"
    r"|patterns?|message|meaning|story|photo|photos|pic|pics|picture|pictures|painting|view|sound|idea|concept"
    r"|spirit|passion|dedication|creativity|effort|thought|style|positivity|enthusiasm|attitude|mindset"
    r"|sentiment|quote|name|outfit|freedom|connection|support|layout|lighting|composition|contrast|tone|mood"
    r"|symbolism|colou?r\s+scheme|choice|choices|work|result|results|progress|vibe|way"
)

# Chinese verbs with 了/过 that report something the writer did.
EVENT_VERBS_ZH: Final = (
    r"去了|去过|参加了|加入了|报名了|报了|开始了|完成了|学会了|找到了|签了|认识了|赢了|赢得了|获得了|拿到了|通过了|"
    r"考过了|考上了|搬进了|搬到了|搬家了|装修了|领养了|收养了|养了|生了|怀孕了|订婚了|结婚了|离婚了|退休了|辞职了|"
    r"升职了|跳槽了|入职了|创办了|开了|成立了|发表了|出版了|跑了|爬了|买了|换了|办了|组织了|举办了|做了|写了|画了|"
    r"拍了|看了|学了|种了|毕业了|毕业于|回来了|从\S{1,10}回来|旅行了|旅游了|捐了|当了|成为了|成了"
)
# Chinese verbs of an ongoing activity after 在/正在 (我在学日语, 我正在准备考试).
ACTIVITY_VERBS_ZH: Final = (
    r"学|学习|自学|练|练习|研究|备考|读|写|开发|经营|运营|带|准备|筹备|训练|装修|找|养|做|参与|负责|参加|打|跑|画|拍|"
    r"健身|减肥|备孕|攒钱|存钱|攻读|考|申请|组织|策划|创作|教|学着|尝试|玩|追|看"
)
# After 以前/曾经/小时候: a habit or an episode of the writer's past; not a state that a later one replaced
# (我以前住在北京, 我以前是老师 are no facts about the writer now).
HABIT_PAST_ZH: Final = r"(?:以前|曾经|过去|小时候|年轻时|年轻的时候|上学的时候|大学的时候)"
