"""Vocabularies the patterns of the ``rules`` extractor (``scoring/extract_rules/``) share: subjects and
adverbs, diets, languages, occupations, people, and the labels of a field ("Budget: 8000", 预算：5000).
Pure: standard library only, no state."""

# Chinese full-width punctuation (，。：！？) is what this module reads: it is not a typo for ASCII.
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

import re
from typing import Final

from scoring.extract_rules.records import _I

# ---------------------------------------------------------------------------------------------------------
# Shared vocabularies
# ---------------------------------------------------------------------------------------------------------

_ADV_EN = (
    r"(?:(?:really|absolutely|just|also|totally|kind\s+of|kinda|sort\s+of|do|still|definitely|genuinely"
    r"|especially|truly|personally|honestly|generally|usually|always|mostly|both|all|too|actually|seriously"
    r"|simply|quite|rather|particularly|now|currently|already|so|certainly|strongly|even|mainly|only"
    r"|pretty\s+much|basically|obviously|clearly|originally|finally|recently|officially|happily|proudly)\s+){0,3}"
)
_SUBJ = r"(?:i|we)"
_BE = r"(?:i\s+am|i'm|im|we\s+are|we're)"
# The subject and its adverbs; a contraction ("I'm", "I'd", "we've") follows the subject directly.
_SUBJ_ADV_EN = _SUBJ + r"(?:\s+|(?='))" + _ADV_EN
_ZH_SUBJ = r"(?:我们|咱们|我)"
_ZH_ADV = (
    r"(?:(?:也都|都|也|还是|还|一直|真的|确实|特别|非常|很|最近|最|比较|更加|更|超级|超|挺|蛮|平时|一般|现在|目前|"
    r"其实|本来|向来|从来都|从来|总是|基本上|主要|只|就|已经|真|太|十分|相当|尤其|一向|始终|通常|本身|自己|刚刚|刚|"
    r"今年|个人|是)){0,4}"
)

_DIETS: Final = {
    "vegetarian": "vegetarian", "vegan": "vegan", "pescatarian": "pescatarian", "pescetarian": "pescatarian",
    "halal": "halal", "kosher": "kosher", "keto": "keto", "paleo": "paleo", "gluten-free": "gluten-free",
    "gluten free": "gluten-free", "dairy-free": "dairy-free", "dairy free": "dairy-free",
    "lactose intolerant": "lactose-free", "lactose-intolerant": "lactose-free", "celiac": "gluten-free",
    "coeliac": "gluten-free", "plant-based": "vegan", "plant based": "vegan",
    "素食者": "vegetarian", "素食主义者": "vegetarian", "吃素的": "vegetarian", "吃素": "vegetarian",
    "素食": "vegetarian", "纯素食者": "vegan", "纯素主义者": "vegan", "纯素": "vegan", "清真": "halal",
    "吃清真": "halal", "穆斯林": "halal",
}  # fmt: skip
# A diet word that names the writer's diet, not a thing ("a vegan chef", "a vegetarian restaurant").
_DIET_EN = (
    r"(?P<diet>vegetarian|vegan|pescatarian|pescetarian|halal|kosher|keto|paleo|gluten[- ]free|dairy[- ]free"
    r"|lactose[- ]intolerant|celiac|coeliac|plant[- ]based)(?![\w-]|\s+(?:restaurants?|recipes?|cookbooks?"
    r"|dish(?:es)?|meals?|options?|blog(?:ger)?|chefs?|cooks?|cooking|places?|caf[eé]s?|menus?|friendly|products?"
    r"|brands?|company|business|shop|store|bakery|influencer|activist))"
)

_LANGUAGES: Final = {
    "english": "english", "chinese": "chinese", "mandarin": "mandarin", "cantonese": "cantonese",
    "spanish": "spanish", "french": "french", "german": "german", "japanese": "japanese", "korean": "korean",
    "portuguese": "portuguese", "italian": "italian", "russian": "russian", "arabic": "arabic",
    "hindi": "hindi", "dutch": "dutch", "swedish": "swedish", "norwegian": "norwegian", "danish": "danish",
    "finnish": "finnish", "polish": "polish", "turkish": "turkish", "greek": "greek", "hebrew": "hebrew",
    "vietnamese": "vietnamese", "thai": "thai", "indonesian": "indonesian", "malay": "malay",
    "ukrainian": "ukrainian", "czech": "czech", "hungarian": "hungarian", "romanian": "romanian",
    "persian": "persian", "farsi": "persian", "urdu": "urdu", "bengali": "bengali", "tamil": "tamil",
    "tagalog": "tagalog", "swahili": "swahili",
    "中文": "chinese", "汉语": "chinese", "普通话": "mandarin", "国语": "mandarin", "粤语": "cantonese",
    "广东话": "cantonese", "英语": "english", "英文": "english", "日语": "japanese", "日文": "japanese",
    "韩语": "korean", "韩文": "korean", "法语": "french", "德语": "german", "西班牙语": "spanish",
    "俄语": "russian", "葡萄牙语": "portuguese", "意大利语": "italian", "阿拉伯语": "arabic",
}  # fmt: skip
_LANGUAGE_EN = "|".join(sorted((k for k in _LANGUAGES if k.isascii()), key=len, reverse=True))
_LANGUAGE_ZH = "|".join(sorted((k for k in _LANGUAGES if not k.isascii()), key=len, reverse=True))

_OCCUPATIONS_EN = (
    r"engineer|developer|programmer|coder|designer|teacher|professor|lecturer|student|nurse|doctor|physician"
    r"|surgeon|dentist|pharmacist|therapist|counsell?or|psychologist|psychiatrist|lawyer|attorney|accountant"
    r"|analyst|scientist|researcher|consultant|manager|architect|writer|author|journalist|editor|artist"
    r"|painter|musician|photographer|chef|cook|baker|farmer|pilot|driver|mechanic|electrician|plumber"
    r"|carpenter|firefighter|police\s+officer|officer|soldier|entrepreneur|founder|co-?founder|freelancer"
    r"|contractor|intern|administrator|sysadmin|technician|salesperson|marketer|recruiter|librarian"
    r"|veterinarian|vet|social\s+worker|paramedic|cashier|waiter|waitress|bartender|barista|cto|ceo|cfo|coo"
    r"|vp|director|product\s+owner|pm|tester|homemaker|housewife|tutor|coach|trainer|instructor|principal"
    r"|clerk|secretary|receptionist|banker|trader|investor|broker|realtor|economist|mathematician"
    r"|statistician|physicist|chemist|biologist|translator|interpreter|actor|actress|singer|dancer"
    r"|pianist|guitarist|composer|illustrator|animator|filmmaker|producer|blogger|youtuber|streamer"
    r"|influencer|caregiver|midwife|optometrist|surveyor|auditor|lead|devops|sre|data\s+engineer"
    r"|full[- ]stack\s+dev|dev|postdoc|phd\s+student|grad\s+student|undergrad|resident|intern"
)
_OCCUPATIONS_ZH = (
    r"程序员|工程师|开发者|开发|设计师|老师|教师|教授|讲师|学生|研究生|博士生|博士|大学生|高中生|中学生|医生|护士|"
    r"律师|会计师|会计|研究员|作家|记者|编辑|厨师|司机|产品经理|项目经理|经理|架构师|分析师|销售|运维|测试|前端|"
    r"后端|全栈|创业者|自由职业者|公务员|警察|军人|主管|总监|老板|实习生|顾问|画家|摄影师|音乐人|歌手|演员|翻译|"
    r"导游|农民|工人|药剂师|咨询师|心理咨询师|设计|运营|产品|数据科学家|科学家|飞行员|律师助理|全职妈妈|全职爸爸|"
    r"家庭主妇|退休人员|退休教师|创始人|合伙人|CTO|CEO"
)
_PEOPLE_EN = (
    r"friend|friends|wife|husband|partner|spouse|boyfriend|girlfriend|fiance|fiancee|mom|mum|mother|dad"
    r"|father|parents|parent|son|sons|daughter|daughters|kid|kids|child|children|baby|brother|brothers"
    r"|sister|sisters|sibling|siblings|boss|manager|colleague|colleagues|coworker|coworkers|co-worker"
    r"|teammate|teammates|team|roommate|neighbor|neighbour|cousin|aunt|uncle|grandma|grandpa|grandmother"
    r"|grandfather|grandparents|family|client|clients|customer|customers|doctor|teacher|therapist|mentor"
    r"|ex|bestie|bff|buddy|pal|dog|cat|pet|puppy|kitten|niece|nephew|in-laws|students|users"
)
_DISCOURSE_EN = (
    r"point|question|guess|thought|thoughts|idea|concern|problem|issue|bad|pleasure|apologies|fault|turn"
    r"|mistake|understanding|impression|sense|feeling|hope|worry|take|opinion|answer|reply|bet|advice"
    r"|suggestion|recommendation|request|ask|god|gosh|goodness|word|heart|mind|dear|friend|man|dude"
)
_PEOPLE_ZH = (
    r"朋友|好友|妈妈|妈|母亲|爸爸|爸|父亲|父母|老婆|老公|妻子|丈夫|爱人|太太|先生|孩子|儿子|女儿|宝宝|老板|同事|"
    r"男朋友|女朋友|男友|女友|对象|哥哥|姐姐|弟弟|妹妹|家人|爷爷|奶奶|外公|外婆|室友|邻居|同学|老师|领导|经理|客户|"
    r"猫|狗|宠物|团队|组员|下属|上司|闺蜜|兄弟"
)
_WE_SUBJECT_ZH = re.compile(r"^我(?:和|跟|与|同)(?:我的?|我们的?)?(?:" + _PEOPLE_ZH + r")(?:们)?(?:一起)?(?=\S)")


# "Budget: 8000", "Location - Berlin", 预算：5000: a slot written as a labelled field.
_LABELS: Final = {
    "budget": "budget", "name": "name", "location": "location", "city": "location", "diet": "diet",
    "role": "role", "job": "role", "occupation": "role", "timezone": "timezone", "time zone": "timezone",
    "age": "age", "language": "language", "languages": "language", "team size": "team_size",
    "hometown": "hometown", "employer": "employer", "company": "employer",
    "预算": "budget", "名字": "name", "姓名": "name", "城市": "location", "所在地": "location", "饮食": "diet",
    "职业": "role", "时区": "timezone", "年龄": "age", "语言": "language", "团队规模": "team_size",
    "公司": "employer",
}  # fmt: skip
_LABEL_WORDS = "|".join(sorted((re.escape(k).replace(r"\ ", r"\s+") for k in _LABELS), key=len, reverse=True))
_LABEL = re.compile(r"(?:my\s+|our\s+|我的|我们的)?(?P<label>" + _LABEL_WORDS + r")", _I)
_LABELLED = re.compile(r"^(?:my\s+|our\s+|我的|我们的)?(?P<label>" + _LABEL_WORDS + r")\s*[:：=]\s*(?P<v>\S.*)$", _I)
