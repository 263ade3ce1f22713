"""Does a new memory replace or contradict an old one on the same topic? Rules, Chinese and English.

:func:`detect_conflict` is only asked about two memories already judged to be on one topic (close
embeddings, same scope); it decides *replaces / contradicts* versus *restates / adds detail /
co-exists*. A false "conflict" hides a still-true memory from recall, so every rule wants
evidence on both sides: new must point at something old states (the old value as the "from"
side, a shared slot, the negated predicate) **and** bring a value old lacks. Questions, plans and
hedges ("考虑改用", "should we switch") never conflict.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from .._base import text as _text


@dataclass(frozen=True)
class Conflict:
    """Why ``new`` supersedes ``old``.

    ``reason``: ``"change"`` (new announces a change: 改用/换成/switched to/replaced … with …/now prefer),
    ``"new_value"`` (same slot, different value: port, version, price, date, "X uses Y", "X is Y")
    or ``"negation"`` (new negates what old states: 不再用 X / no longer X). ``detail`` is short
    human text such as ``"port 5432 → 5433"`` or ``"JavaScript → TypeScript"``.
    """

    reason: str
    detail: str


def _fast(first: str, pattern: str) -> re.Pattern[str]:
    # Python's re tries a long alternation at every position; a one-character lookahead on the
    # pattern's possible first characters skips most positions (2-3x faster on these patterns).
    return re.compile(rf"(?={first})(?:{pattern})")


_C = r"[^,;，；。!！?？\n]"  # one character inside a clause
_TO = rf"(?:了\s*)?(?P<to>{_C}{{1,40}})"
_ZH_VERBS = (  # 改为 X / 换成 X / 迁移到 X …; "改推到" style (改 + verb + 到) is the regex at the end of _ZH_VERB
    "改为 改成 改用 改到 改回 改由 换成 换为 换用 换到 替换为 替换成 切换到 切换为 切换成 切到 转用 转为 迁移到 迁移至 迁到 搬到 变为 变成 "
    "调整为 调整到 调到 更改为 更新为 升级到 升级为 降级到 降级为 提高到 提升到 增加到 降低到 降到 涨到 延期到 推迟到 延长到 提前到 缩短到 减少到"
).split()
_ZH_VERB = "|".join(_ZH_VERBS) + r"|改[\u4e00-\u9fff]{1,2}?(?:到|在|为|成)"
_EN_GATE = "switch|chang|mov|migrat|upgrad|downgrad|transition|convert|renam|extend|postpon|delay|bump|increas|decreas|reduc|resched|lower|rais"
_EN_VERB = rf"(?:{_EN_GATE})(?:e|es|ed|ing)?"
_ANY = rf"{_C}{{1,40}}"
# Change phrases, most specific first; `from` is the replaced value when stated. Each has a gate
# (words one of which must occur) so that patterns opening with [\w]+ rarely run at all.
_CHANGE = tuple(
    (re.compile(p), re.compile(gate))
    for gate, p in (
        ("从|由", rf"(?:从|由)\s*(?P<from>{_C}{{1,20}}?)\s*(?:{_ZH_VERB}|改|换){_TO}"),
        ("取代|替代|代替|替换", rf"用\s*(?P<to>{_C}{{1,20}}?)\s*(?:取代|替代|代替|替换)了?\s*(?P<from>{_C}{{1,20}})"),
        ("被", rf"(?P<from>[\w.+#-]+)\s*(?:被|已被)\s*(?P<to>{_C}{{1,20}}?)\s*(?:取代|替代|代替|替换)"),
        ("而", rf"(?:用|使用|采用|选)\s*(?P<to>{_C}{{1,20}}?)\s*(?:而不是|而非|而不用)\s*(?P<from>{_C}{{1,20}})"),
        ("[" + "".join({v[0] for v in _ZH_VERBS}) + "]", rf"(?:{_ZH_VERB}){_TO}"),
        (_EN_GATE + "|went", rf"\b(?:{_EN_VERB}|went)(?: over| back)?(?: \w+){{0,3}}? (?:from|off|away from) (?P<from>{_ANY}?) (?:to|into|onto) (?P<to>{_ANY})"),
        ("replac", rf"\breplac(?:e|es|ed|ing) (?P<from>{_ANY}?) (?:with|by) (?P<to>{_ANY})"),
        ("replaced|supersed", rf"(?P<from>[\w.+#-]+) (?:(?:is|was|has been|have been|got|were|are) )?(?:replaced|superseded) (?:by|with) (?P<to>{_ANY})"),
        ("instead of|rather than", rf"(?:(?:use|uses|using|with) )?(?P<to>[\w.+#-]+(?: [\w.+#-]+)?) (?:instead of|rather than) (?P<from>{_ANY})"),
        ("prefer", rf"\bprefer(?:s|red)? (?P<to>{_C}{{1,30}}?) over (?P<from>{_ANY})"),
        (" not | never ", r"\b(?:use|using|prefer|choose|pick) (?P<to>[\w.+#-]+)\b[^;.!?。；！？\n]{0,30}? (?:not|never) (?P<from>[\w.+#-]+)"),
        ("不要|别|不", rf"用\s*(?P<to>{_C}{{1,12}}?)\s*[,，]\s*(?:不要|别|不)再?用\s*(?P<from>{_C}{{1,12}})"),
        ("went|rose|fell|grew|climbed|dropped", rf"\b(?:went (?:up|down)|rose|fell|grew|climbed|dropped)(?: \w+){{0,2}}? to (?P<to>{_ANY})"),
        # "from now on, answer in Chinese" / "以后请用中文回答": the whole instruction is the new value
        ("now on|going forward|从现在|从今|今后|以后", rf"(?:from now on|going forward|从现在起|从现在开始|从今天起|从今往后|今后|以后(?=请|都|就|一律|统一))[,，]?\s*(?P<to>{_ANY})"),
        (_EN_GATE, rf"\b{_EN_VERB}(?: over| back)?(?: (?!from\b)\w+){{0,3}}? (?:to|into) (?P<to>{_ANY})"),
    )
)
_FROM_NOW = next(p for p, _ in _CHANGE if "from now on" in p.pattern)
# one cheap test before the per-pattern gates: a change character (Chinese) or a change word start (English)
_GATE_ZH = re.compile("[" + "".join({v[0] for v in _ZH_VERBS}) + "从由取替代被而不别今以]")
_GATE_EN = re.compile(rf"\b(?=[scmudtrepbiwlfgn])(?:{_EN_GATE}|went|replac|supersed|instead of|rather than|prefer|not|never|rose|fell|grew|climbed|dropped|from now on|going forward)")
# Negations of a predicate; a bare "don't X" needs "anymore": without it, it is a rule, not a reversal.
_NEG = _fast(
    r"[不再已停弃废放别戒]|\b[nsgdarfiq]",
    rf"(?:不再|再也不|已经?不|不要再|别再|不用|不使用|不采用|停用|弃用|废弃|放弃|停止|戒掉?了?|no longer|never again|stopped|quit|gave up|got rid of|"
    rf"(?:dropped|ditched|abandoned|retired|deprecated)\b|from now on,?(?: \w+)? (?:do not|don't|never|won't|no))\s*(?P<pred>{_ANY})"
    rf"|\b(?:do not|don't|does not|doesn't|are not|aren't|is not|isn't|not) (?P<pred2>{_ANY}?) any ?(?:more|longer)\b",
)
# preferences: "prefer tabs for indentation", "编辑器我喜欢浅色主题"; replaced only with a "now" (_NOWISH)
_PREF = re.compile(r"(?:\bprefers?|\blikes?|喜欢|偏好|爱用)\s*(?:to use |using |用)?(?P<p>[a-z][\w.+#-]*|[\u4e00-\u9fff]{2,4})")
_NOWISH = re.compile(r"\bnow\b|\bthese days\b|现在|如今")
# "X was retired" / "X 下线了": the negated thing comes first
_RETIRED = re.compile(
    r"(?P<pred>[\w.+#-]+(?: [\w.+#-]+)?) (?:was|were|is|are|has been|have been|got) (?:retired|deprecated|removed|decommissioned|shut down|sunset)"
    r"|(?P<pred2>[\w.+#-]+|[\u4e00-\u9fff]{2,6})\s*(?:已经?|被)?(?:下线|停用|弃用|废弃|退役)了?"
)
_RETIRED_GATE = re.compile(r"retired|deprecated|removed|decommissioned|shut down|sunset|下线|停用|弃用|废弃|退役")
_NEG_ANY = _fast("[不没别nw停弃]", r"不(?!错|同|少|断|仅|过|久|管|但)|没|别|\b(?:no|not|never|without)\b|n't|停用|弃用")
_QUESTION = re.compile(
    r"[?？]|吗\s*[。.!！]?\s*$|是否|要不要|能不能|该不该|是不是|有没有"
    r"|^(?:do|does|did|is|are|was|were|should|shall|can|could|would|will|what|which|how|why|when|where|who)\b"
)
_HEDGE = _fast(
    r"[考打计可也或建如假要提准想评调试]|\b[mpctsiuwe]",
    r"\b(?:maybe|perhaps|might|consider(?:ing|ed)?|plan(?:s|ning)? to|thinking (?:about|of)|propos\w*|suggest\w*|if|unless"
    r"|whether|wonder\w*|evaluat\w*|possible|possibly|candidate|trial(?:ling|ing)?|pilot(?:ing)?)\b|考虑|打算|计划|可能|也许|或许|建议|如果|假如|要是|提议|准备|想要|想(?=改|换|用|试)|评估|调研|试用",
)
_MODAL = re.compile(r"\b(?:(?:need|needs|want|wants|have|has|going) to|should|will|would|could|must|may|can|gonna)\s+$")
_ZH_MODAL = frozenset("需要 要 得 应该 应当 会 将 将要 可以 能 必须 准备 打算".split())  # whole jieba words: 周会 is a meeting
_ADDITIVE = _fast(r"[也另此额同]|\b[atib]", r"\b(?:also|too|as well|additionally|in addition|besides)\b|也|另外|此外|额外|同时")
_EPISODIC = _fast(
    r"[今昨刚上去前\d]|\b[tyli]",
    r"\b(?:today|yesterday|tonight|this (?:morning|week|month)|last (?:night|week|month|year)|in (?:19|20)\d\d)\b"
    r"|今天|昨天|今早|昨晚|刚才|上周|上个月|去年|前年|本周|这周|本月|这个月|(?:19|20)\d\d ?年",
)
# flags a text may carry: any negation word; a question; also/too/也 (adds, replaces nothing); an event, not a state
_FLAGS = {"negative": _NEG_ANY, "question": _QUESTION, "additive": _ADDITIVE, "episodic": _EPISODIC}
_CLAUSE = _fast(r"[,;，；。!！?？\n.\s但而并不]", r"[,;，；。!！?？\n]+|\.(?:\s+|$)|\s+(?:and|but|while|whereas|though)\s+|但是|而且|并且|不过")
_WHY = r"\b(?:because|since|due to|so that|as of|recently)\b|因为|由于|以便|以免|最近|了$|吧|啦"
_WHEN = r"\b(?:last|this|in \d{4}|yesterday|before|after|when|until)\b|去年|今年|上周|上个月|之前|之后|以后|的时候"
_CUT = re.compile(rf"\s*(?:{_WHY}|{_WHEN}|\b(?:for|now|already|instead|as well)\b).*$")  # asides after a target
_CUT_NEG = re.compile(rf"\s*(?:{_WHY}).*$")  # a negated predicate keeps "for …", "after 3pm": they say which use stopped
_LEAD = re.compile(r"^(?:(?:用|使用|采用|using|use)\s*)?")  # "不再用 X" as the "from" side: X
_USE = _fast(
    r"[采使选用基部托运跑位放存推住]|\b[uribwhdpl]",
    r"(?<!不)(?<!再)(?<!没)(?:采用|使用|选用|用的是|用|基于|部署在|部署到|托管在|运行在|跑在|位于|放在|存放在|存在|推到|住在|\b(?:uses|use|using|runs? on"
    r"|(?:is )?(?:built|written) (?:with|in|on)|(?:is )?(?:hosted|deployed) (?:on|at|in)|(?:is )?(?:based|located) (?:on|in)"
    r"|relies on|(?:is )?powered by|lives? in))\s*(?:the |an? )?(?P<o>[a-z][\w.+#-]*|[\u4e00-\u9fff]{2,4}(?=$|[\s,，。;；了]))",
)
_IS = re.compile(r"(?:(?<![不还但就总要若可于])是|叫做?|[:=]|\b(?:is|are|was)\b)\s*(?:the |an? )?(?!not\b|不)(?P<v>[^\s,;，；。!！?？]{1,12})")
_PERSON = frozenset("负责人 联系人 名字 名称 姓名 昵称 城市 地址 老板 经理 主管 对接人 领导".split())
_ATTR = _PERSON | frozenset(  # subjects whose "X is Y" names one thing (stemmed English)
    "时区 邮箱 默认 分支 域名 主机 区域 语言 框架 数据库 编辑器 系统 模型 服务商 供应商 用户名 领导 owner lead manag maintain contact "
    "name email address timezon citi branch region host hostnam domain model provid editor shell usernam databas framework languag "
    "boss supervisor".split()
)
_GENERIC = frozenset("框架 数据库 方案 语言 工具 库 framework databas db librari languag tool option plan".split())
_SYN = {  # Chinese slot words → the English stem, so that mixed-language pairs share a slot
    "端口": "port", "端口号": "port", "版本": "version", "价格": "price", "售价": "price", "定价": "price", "超时": "timeout",
    "数据库": "databas", "前端": "frontend", "后端": "backend", "缓存": "cach", "部署": "deploy", "日志": "log",
    "服务器": "server", "测试": "test", "截止日期": "deadlin", "预算": "budget", "编辑器": "editor", "分支": "branch",
    "requir": "need",
}
_STOP = _text._EN_STOP | _text._ZH_STOP | frozenset(_ZH_VERBS) | frozenset(
    """use 用 使用 采用 选用 必须 需要 应该 低于 高于 小于 大于 少于 超过 不超过 至少 最多 以内 以下 以上 左右 约 大约 设置 设为 现在
    目前 当前 已经 已 改为 改成 改用 换成 换用 切换 迁移 升级 降级 调整 不再 不用 停用 弃用 放弃 停止 取代 替代 代替 替换 而是 不是 每次
    一直 改 换 迁 搬 切 转 调 switch chang move migrat upgrad downgrad replac instead anymor longer stop prefer rather must under below
    above over less least set now currently about around within went back new 新 新的 these days 如今 上个月 上周 去年 今年
    最近 昨天 今天 前天 刚才 刚刚 last month week year ago recently yesterday today please 请 remember 记住 note""".split()
)
_UNITS: dict[str, tuple[str, float]] = {}  # unit → (class, factor to the class's base unit)
for _spec in (
    "t .001 ms 毫秒|t 1 s sec secs second seconds 秒|t 60 min mins minute minutes 分钟|t 3600 h hr hrs hour hours 小时"
    "|t 86400 day days 天|t 604800 week weeks 周|t 2592000 month months 个月|b 1e3 kb|b 1e6 mb|b 1e9 gb|b 1e12 tb|_ 1e3 k 千"
    "|_ 1e4 w 万|% 1 %|cny 1 元 块 rmb ¥ ￥|usd 1 美元 dollar dollars usd $|eur 1 € eur 欧元|gbp 1 £|yr 1 年|ppl 1 人 people|x 1 x 倍"
).split("|"):
    _cls, _f, *_names = _spec.split()
    _UNITS.update({n: (_cls, float(_f)) for n in _names})
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNITS if u not in "$¥￥€£"), key=len, reverse=True))
_ID_WORDS = frozenset(
    "number no module day ticket issue pr step item part chapter section tip note case page figure table line task bug "
    "编号 序号 工单 步骤".split()
)
_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate("one two three four five six seven eight nine ten eleven twelve".split(), 1)}
_NUMBER_WORDS |= {c: str(i) for i, c in enumerate("一二三四五六七八九十", 1)} | {"两": "2"}
_HINT = re.compile(r"\d|周|星期|礼拜|day|[一二两三四五六七八九十]|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b")
_WEEKDAYS = dict(zip("一二三四五六日", range(1, 8))) | dict(zip("mon tues wednes thurs fri satur sun".split(), range(1, 8))) | {"天": 7}
_VAL = _fast(  # letters only at a word start: months, weekdays, v2
    r"[\d$¥￥€£周星礼一二两三四五六七八九十]|\b[jfmasondtwve]",
    r"(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])(?!次|般|起|样|致)|\b(?P<wd2>mon|tues|wednes|thurs|fri|satur|sun)days?\b|"
    r"(?<![一二两三四五六七八九十])(?P<nw>[一二两三四五六七八九十])(?=[个只位名台条次人种])"  # 两只猫, 一个人: counts
    r"|(?<!no )(?<!any )(?<!every )\b(?P<nw2>one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b(?! of\b)|"
    r"(?P<y>\d{4})[-/.年](?P<m>\d{1,2})[-/.月](?P<d>\d{1,2})[日号]?|(?P<m1>\d{1,2})(?:\s*月\s*|/)(?P<d1>\d{1,2})\s*[日号]?"
    r"|(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? (?P<d2>\d{1,2})(?:st|nd|rd|th)?(?![\d:])"
    r"|(?P<hh>\d{1,2})(?::(?P<mm>\d{2})\s*(?P<ap>am|pm)?|\s*(?P<ap2>am|pm)(?![a-z])|\s*点(?P<half>半)?)"
    r"|(?P<cur>[$¥￥€£])\s*(?P<amt>\d[\d,]*(?:\.\d+)?)"
    rf"|(?<![\w.\-])(?P<num>v?\d+(?:,\d{{3}})*(?:\.\d+)*)(?:st|nd|rd|th)?(?:\s*(?P<unit>{_UNIT_RE}))?(?![a-z\d])",
)


class _Val(NamedTuple):  # NamedTuple, not a frozen dataclass: built per value, 4x cheaper
    cls: str  # unit class: "t" (seconds), "cny", "date", "clock", "_" (plain number) …
    val: object  # float, version-like text, or a (year, month, day) / (0, hour, minute) tuple
    key: str  # nearest content word before the value ("port", "时间"): its slot
    key_raw: str  # that word as written, for the detail
    disp: str
    at: int  # span in the clause
    end: int


class _Doc(NamedTuple):
    disp: str  # NFKC + simplified, case kept (for details)
    norm: str  # disp case-folded: what the rules read (same offsets)
    toks: frozenset[str]
    clauses: tuple[tuple[int, str, frozenset[str], tuple[_Val, ...], tuple[re.Match[str] | None, ...]], ...]
    vals: tuple[_Val, ...]  # ^ (offset, text, words, values, (X uses Y, X is Y, prefers Y)) per clause
    changes: tuple[re.Match[str], ...]
    plan: bool  # a hedge or a change not yet made ("考虑改用 X", "需要升级到 3.12"): its values are goals
    neg: re.Match[str] | None  # the first negation phrase (不再 X, no longer X)
    negs: tuple[re.Match[str], ...]  # every negation or retirement phrase ("X was retired", "X 下线了")
    flags: frozenset[str]  # which of _FLAGS match


@lru_cache(maxsize=65536)
def _key(raw: str) -> str:
    """The comparison key of one token, "" to drop it: stemmed English, 端口 → port; no stop words or numbers."""
    if raw in _STOP or raw[0].isdigit():
        return ""
    t = _text._stemmer().stemWord(raw) if raw.isascii() and raw.isalpha() else raw
    return "" if t in _STOP else _SYN.get(t, t)


@lru_cache(maxsize=8192)
def _words(s: str) -> tuple[tuple[str, str, int], ...]:
    """Content words of ``s`` in order as (key, as written, offset): jieba words, stemmed English."""
    out, pos = [], 0
    for raw in _text._split(s, search_mode=False):
        at = s.find(raw, pos)
        pos = at + len(raw) if at >= 0 else pos
        if key := _key(raw):
            out.append((key, raw, at))
    return tuple(out)


def _toks(s: str) -> list[str]:
    return [w[0] for w in _words(s)]


def _same(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):  # dates: a missing year matches any year
        return a[1:] == b[1:] and (a[0] == b[0] or 0 in (a[0], b[0]))
    if isinstance(a, str) and isinstance(b, str):  # versions: 3.11.4 refines 3.11, 3.10 is not 3.1
        return a == b or a.startswith(b + ".") or b.startswith(a + ".")
    try:  # floats, and "10000" (text) against "10k" (a number with a unit)
        return abs(float(a) - float(b)) <= 1e-9 * max(abs(float(a)), 1.0)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


@lru_cache(maxsize=8192)
def _values(clause: str, disp: str) -> tuple[_Val, ...]:
    """Numbers (also 两只 / two), money, durations, dates, weekdays and times of day in ``clause``, each with its slot word."""
    out, words = [], _words(clause)
    for m in _VAL.finditer(clause):
        g = m.groupdict()
        if g["nw"] or g["nw2"]:
            cls, val = "_", _NUMBER_WORDS[g["nw"] or g["nw2"]]
        elif g["wd"] or g["wd2"]:
            cls, val = "weekday", float(_WEEKDAYS[g["wd"] or g["wd2"]])
        elif g["d"] or g["d1"] or g["d2"]:
            mon = _MONTHS[g["mon"]] if g["mon"] else int(g["m"] or g["m1"])
            cls, val = "date", (int(g["y"] or 0), mon, int(g["d"] or g["d1"] or g["d2"]))
        elif g["hh"]:
            h = int(g["hh"]) + (12 if (g["ap"] or g["ap2"]) == "pm" and int(g["hh"]) < 12 else 0)
            cls, val = "clock", (0, h, 30 if g["half"] else int(g["mm"] or 0))
        elif g["cur"]:
            cls, val = _UNITS[g["cur"]][0], float(g["amt"].replace(",", ""))
        else:  # a plain number stays text so that versions compare right
            n, (cls, f) = g["num"].replace(",", "").lstrip("v"), _UNITS.get(g["unit"] or "", ("_", 1.0))
            val = float(n) * f if g["unit"] and n.count(".") < 2 else n
        key, raw, _ = ([w for w in words if w[2] + len(w[1]) <= m.start()] or [("", "", 0)])[-1]
        if raw in _ID_WORDS or clause[: m.start()].rstrip()[-1:] in ("#", "第"):
            continue  # "tip number 5", "ticket #12", "第 3 步" name one item of a series, not a slot's value
        out.append(_Val(cls, val, key, raw, disp[m.start() : m.end()].strip(), m.start(), m.end()))
    return tuple(out)


def _modal(before: str) -> bool:
    """Is the change verb after ``before`` only wanted ("需要改用", "we should switch")?"""
    zh = _text._split(before[-8:], search_mode=False) if _text.has_han(before[-3:]) else None
    return _MODAL.search(before) is not None or bool(zh and zh[-1] in _ZH_MODAL)


@lru_cache(maxsize=4096)  # one new memory is checked against several old ones, and old ones recur
def _doc(text: str) -> _Doc:
    disp = unicodedata.normalize("NFKC", text)
    disp = " ".join((_text._to_simplified(disp) if _text.has_han(disp) else disp).split())
    norm = disp.casefold()
    if len(norm) != len(disp):  # rare (ß → ss): offsets would drift, so details show the folded text
        disp = norm
    clauses, toks, pos = [], set(), 0
    for m in (*_CLAUSE.finditer(norm), None):
        end = m.start() if m else len(norm)
        c, vals, pos, start = norm[pos:end], (), (m.end() if m else end), pos
        if not c.strip():
            continue
        words = frozenset(_toks(c))
        toks.update(words)
        if _HINT.search(c):
            vals = _values(c, disp[start:end])  # the clause's words leave out its values
            ws = [(k, at, at + len(raw)) for k, raw, at in _words(c)]
            if any(a < v.end < b or a < v.at < b for _, a, b in ws for v in vals):  # jieba glued "10 点开": re-cut
                words = frozenset(_toks(_VAL.sub(" ", c)))
            else:
                words = frozenset(k for k, a, b in ws if not any(a < v.end and v.at < b for v in vals))
        clauses.append((start, c, words, vals, (_USE.search(c), _IS.search(c), _PREF.search(c))))
    gated = bool(_GATE_ZH.search(norm) or _GATE_EN.search(norm))  # most texts have no change word
    changes = tuple(m for p, gate in _CHANGE if gated and gate.search(norm) for m in p.finditer(norm))
    plan = _HEDGE.search(norm) is not None or any(_modal(norm[: m.start()]) for m in changes)
    flags = frozenset(name for name, pat in _FLAGS.items() if pat.search(norm))
    vals = tuple(v for c in clauses for v in c[3])
    negs = (*_NEG.finditer(norm), *(_RETIRED.finditer(norm) if _RETIRED_GATE.search(norm) else ()))
    neg = negs[0] if negs and negs[0].re is _NEG else None
    return _Doc(disp, norm, frozenset(toks), tuple(clauses), vals, changes, plan, neg, negs, flags)


def _has(t: str, d: _Doc) -> bool:
    """Does ``d`` mention word ``t``? (Han by substring: jieba may cut 每周五 and 每周 四 differently.)"""
    return t in d.toks or _in(t, d.norm)


def _in(t: str, text: str) -> bool:
    """Is ``t`` in ``text``, as a whole word when it is Latin (node.js, c++)? No re.compile per word."""
    if not t.isascii():
        return t in text
    i = text.find(t)
    while i >= 0:
        j = i + len(t)
        if (i == 0 or text[i - 1] not in _ALNUM) and (j == len(text) or text[j] not in _ALNUM):
            return True
        i = text.find(t, i + 1)
    return False


def _found(phrase: str, old: _Doc) -> tuple[list[str], list[bool], tuple[_Val, ...], list[bool]]:
    """Words and values of ``phrase``, each flagged with whether ``old`` already states it."""
    toks = [t for t in _toks(phrase) if t not in _UNITS]  # "秒" in "60 秒" is part of the value
    vals = _values(phrase, phrase)
    return toks, [_has(t, old) for t in toks], vals, [any(o.cls == v.cls and _same(o.val, v.val) for o in old.vals) for v in vals]


def _span(m: re.Match[str], name: str) -> tuple[int, int]:
    """Span of group ``name`` without trailing asides ("because …", "last year", 了) or spaces."""
    kept = _CUT.sub("", m.group(name) or "")
    start = m.start(name) + len(kept) - len(kept.lstrip())
    return start, m.start(name) + len(kept.rstrip())


def _change(old: _Doc, new: _Doc) -> Conflict | None:
    neg = new.neg
    for m in new.changes:
        (ts, te), explicit = _span(m, "to"), bool(m.groupdict().get("from"))
        fs, fe = _span(m, "from") if explicit else (0, 0)
        if not explicit and neg and neg.group("pred") and neg.end() <= m.start():  # 不再用 MySQL，改用 PostgreSQL
            fs, fe = _span(neg, "pred")
            fs += len(_LEAD.match(new.norm[fs:fe]).group())  # type: ignore[union-attr]
        ttoks, tin, tvals, tvin = _found(new.norm[ts:te], old)
        if not (ttoks or tvals) or (all(tin) and all(tvin)):
            continue  # old already states the target: a restatement
        if fe > fs:
            ftoks, fin, fvals, fvin = _found(new.norm[fs:fe], old)
            if (ftoks or fvals) and all(fin) and all(fvin):
                if ttoks and all(tin):
                    continue  # "from MySQL to PostgreSQL" again: old names both sides
                return Conflict("change", f"{new.disp[fs:fe]} → {new.disp[ts:te]}")
            if explicit:
                continue  # an explicit "from" that old never mentions: not about old
        (a, b), (c, d) = sorted([(ts, m.end("to")), (fs, fe)])  # the cut asides ("last month") are no subject
        rest = set(_toks(f"{new.norm[:a]} {new.norm[b:c]} {new.norm[d:]}"))  # new's subject, besides target and from
        tied = any(_has(t, old) for t in rest)
        # "from now on, answer in Chinese" after "answer in English": one word swapped for one. Only
        # this rule for such instructions (they open with a verb, "keep answers short"), and only for
        # them: after "switched to" the target may just add to old ("switched to Slack huddles").
        if m.re is _FROM_NOW:
            if tin.count(False) == 1 and any(tin) and len(old.toks - new.toks) == 1:
                return Conflict("change", new.disp[m.start() : te].strip())
            continue
        # "改用 B 方案" after "采用 A 方案": a new word in front of one old shares;
        # "部署时间改为每周四" after "每周五部署": a shared subject and a half-new target
        if any(not x and y for i, x in enumerate(tin) for y in tin[i + 1 :]) or (tied and any(tin) and not all(tin)):
            return Conflict("change", new.disp[m.start() : te].strip())
        for v in (v for v, known in zip(tvals, tvin) if not known):  # "升级到 Python 3.12", "超时改为 60 秒"
            for o in old.vals:
                slot = o.key == v.key if v.key else (tied or not rest)
                if o.cls == v.cls and slot and not any(_same(o.val, w.val) for w in new.vals):
                    return Conflict("change", f"{o.disp} → {new.disp[ts:te]}")
        if any(tin) or (rest and not tied):
            continue  # "改用 Redis 做缓存" vs "Redis 集群 3 节点": Redis took a job, old lost none
        bare = len(ttoks) == 1 or (te - ts <= 3 and _text.has_han(new.norm[ts:te]) and " " not in new.norm[ts:te])
        cs = max((off for off, *_ in new.clauses if off <= m.start()), default=0)
        lead = _toks(new.norm[cs : min(ts, fs) if fe > fs else ts])  # what changed: "认证改用 Clerk" is not the database
        if bare and not tvals and all(_has(t, old) for t in lead):  # a bare new name ("PostgreSQL", "阿里云") replaces what old uses
            for off, text, *_ in old.clauses:
                for u in _USE.finditer(text):
                    o = u.group("o")  # old's value must be gone from new, or named there only to retire it
                    if not _has(o, new) or any(_in(o, n.group(0)) for n in new.negs):
                        return Conflict("change", f"{old.disp[off + u.start('o') : off + u.end('o')]} → {new.disp[ts:te]}")
    return None


def _negation(old: _Doc, new: _Doc) -> Conflict | None:
    if "negative" in old.flags or old.negs:
        return None  # old is itself negative ("deprecated", "不用"): a restatement, not a reversal
    for m in new.negs:
        toks, tin, _, vin = _found(_CUT_NEG.sub("", m.group("pred") or m.group("pred2") or ""), old)
        if toks and all(tin[:4]) and all(vin):  # every word and number of the predicate is in old
            return Conflict("negation", new.disp[m.start() : m.start() + len(m.group(0).rstrip())].strip())
    return None


def _similar(a: frozenset[str], at: str, b: frozenset[str], bt: str) -> bool:
    # Same slot: one clause's words are all in the other (clause ``at`` / ``bt``) and make at least
    # half of its words. A word on each side that the other lacks means two subjects (女儿/儿子
    # 今年 5 岁; staging/production). Han words count by substring: jieba cuts 我养了 / 我现在养了 apart.
    if not (a and b):
        return False
    a_in, b_in = sum(t in b or _in(t, bt) for t in a), sum(t in a or _in(t, at) for t in b)
    return (a_in == len(a) and a_in * 2 >= len(b)) or (b_in == len(b) and b_in * 2 >= len(a))


def _same_key(a: str, b: str) -> bool:
    return a == b or (bool(a and b) and not (a.isascii() or b.isascii()) and (a in b or b in a))


def _new_value(old: _Doc, new: _Doc) -> Conflict | None:
    if "additive" in new.flags or new.negs or old.negs:
        return None  # "also supports 3.12" adds; "dropped Python 3.7" / "不再支持 3.7" state no value
    if "episodic" in new.flags & old.flags:
        return None  # "ran 5 km today" / "ran 10 km today": two events, both true
    for no, nc, nwords, nvals, nslots in new.clauses:
        for oo, oc, owords, ovals, oslots in old.clauses:
            if nvals and ovals and _similar(nwords, nc, owords, oc):
                for v in nvals:
                    slot = [o for o in ovals if o.cls == v.cls and _same_key(o.key, v.key)]
                    if slot and not any(_same(o.val, w.val) for o in slot for w in new.vals if w.cls == o.cls):
                        return Conflict("new_value", f"{v.key_raw} {slot[0].disp} → {v.disp}".strip())
            for pat, g, nm, om in zip((_USE, _IS, _PREF), "ovp", nslots, oslots):
                if not (nm and om) or _NEG_ANY.search(nc[: nm.end()]) or _NEG_ANY.search(oc[: om.end()]):
                    continue  # "前端不用 React" is a negation, not a value
                if pat is _PREF and not _NOWISH.search(nc):
                    continue  # "I like tea" / "I like coffee" co-exist; "I now prefer …" replaces
                if pat is _USE and not (nm.group(g).isascii() and om.group(g).isascii()):
                    continue  # a Chinese object has no word boundary: "用微信沟通" / "用邮件沟通" is too loose
                subj, rest = frozenset(_toks(nc[: nm.start()])), set(_toks(nc[nm.end() :])) - _GENERIC
                if subj != frozenset(_toks(oc[: om.start()])) or not (subj or (pat is _PREF and rest)):
                    continue  # a preference may have no subject but an area: "prefer tabs for indentation"
                nd, od = new.disp[no + nm.start(g) : no + nm.end(g)].rstrip(".了"), old.disp[oo + om.start(g) : oo + om.end(g)].rstrip(".了")
                nv, ov = nd.casefold(), od.casefold()
                if pat is _IS:  # a name: Capitalised, with digits/dots (gpt-4o), or Latin inside Chinese; or a person
                    names = all(x[:1].isupper() or re.search(r"[\d.+#]", x[1:]) or (x.isascii() and _text.has_han(nc)) for x in (nd, od))
                    person = not (nv.isascii() or ov.isascii()) and subj & _PERSON
                    if not (subj & _ATTR) or nv[:1].isdigit() or not (names or person):
                        continue  # "Python is great" / "Python is slow" co-exist
                elif rest != set(_toks(oc[om.end() :])) - _GENERIC:
                    continue  # "uses Redis for caching" vs "uses PostgreSQL": different jobs
                # the old value may still be named elsewhere in new ("王芳离职了，新的负责人是刘洋"), not in this clause
                if nv != ov and not all(_in(t, oc) for t in _toks(nv) or [nv]) and not all(_in(t, nc) for t in _toks(ov) or [ov]):
                    return Conflict("change" if pat is _PREF else "new_value", f"{od} → {nd}")
    return None


def detect_conflict(old: str, new: str) -> Conflict | None:
    """Does ``new`` replace or contradict ``old``? ``None`` when it restates, adds detail or co-exists.

    Only meant for two memories already judged to be on the same topic and scope; it does not
    decide topic. Checks, in order: an announced change (改用/switched to/replaced … with …), a
    negation of what old states (不再用 X / no longer X / X was retired), then the same slot with a
    new value (port, version, price, count, duration, date, weekday, time of day, "X uses Y", "X is
    Y"; a preference only with "now": "I now prefer spaces for indentation").
    """
    o, n = _doc(old), _doc(new)
    if not o.norm or not n.norm or o.norm == n.norm or n.plan or "question" in n.flags | o.flags:
        return None
    return _change(o, n) or _negation(o, n) or (None if o.plan else _new_value(o, n))
