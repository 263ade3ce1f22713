"""What two statements about one scope have to do with each other: the write-time judgement.

The asymmetry this module is built around (DESIGN.md, Safety): a missed merge costs one
duplicate line, while a wrong merge or a wrong supersede removes a fact from recall. So:

* **merge** only when the new statement adds nothing: every number and name of it is in the old
  one, it negates what the old one negates, and its other words are the old one's or stand in
  place of them (at most half, none where the value sits), above the model's merge margin;
* **supersede** only when the conflict rules (:mod:`mnemo._lifecycle.conflict`) see a new value or a
  retirement *and* the two statements have the same subject: a swapped identifier ("worker 1" /
  "worker 2", "week 10" / "week 11"), a swapped member of a set of parallel things (staging /
  production, iOS / Android, 周二 / 周四) or a swapped head word with the same tail ("订单表的…" /
  "用户表的…") means two subjects, never a replacement; a pair the rules suspect but cannot
  place is a *possible conflict*: both stay active, linked, and ``mnemo review`` lists it;
* **link** (related) only above a per-model calibrated similarity — the cosine's margin over the
  nearer of the two statements' most similar unrelated anchor sentences — and never between two
  subjects of one template.

Cosine alone cannot do any of this: with e5, "the orders table…" / "the payments table…" score
0.98, higher than most true restatements (bench/trust.py measures it per class).
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from .._base import text as _text
from .conflict import _MONTHS

#: words before a number that make it one item of a series: "worker 2", "week 11", "第 3 条"
_ID_WORDS = frozenset(
    """worker note week sprint trial run job batch step item part chapter section tip case page figure table line task bug
    module day lesson unit episode room floor level story test exercise question problem
    queue grade class ward bed rack lane gate dock route shift zone bay aisle building cabinet slot
    ticket issue pr consumer agent shard node replica instance group round iteration epoch phase wave cohort version release
    station terminal counter desk register kiosk restaurant store shop branch site plant farm substation turbine freezer fridge
    oven truck van lab tier region warehouse server host machine printer camera
    no number # 记录 备忘 任务 第 条 次 组 号 期 轮 批 周 版 章 节 步 项 工单 编号 序号 节点 分片 实例""".split()
)
#: a Chinese word ending in one of these, before a number, names an item of a series (行动项 3, 工单 12)
_ID_SUFFIXES = frozenset("项条号期轮批章节步单")
#: …and so does a number before one of these (3 号机柜, 高一（3）班, 二年级, 5 号楼)
_ID_AFTER = frozenset("号 班 年级 楼 层 栋 期 届 病区 号楼 号线 号机 号仓 号位 组 队 床 排 座 区 号房".split())
#: sets of parallel things, each member with its spellings (both languages): two statements that
#: name different members of one set talk about two subjects ("the staging database…" / "the
#: production database…"), while 生产 and production are one member
_CONTRASTS: tuple[tuple[frozenset[str], ...], ...] = tuple(tuple(frozenset(m.split("|")) for m in g.split()) for g in (
    "生产|线上|正式|prod|production|live 测试|test|testing|qa 预发布|预发|staging|stage|preprod|uat 开发|dev|development 本地|local 灰度|canary 沙箱|sandbox",
    "前端|frontend 后端|backend 客户端|client 服务端|server 移动端|mobile",
    "ios|iphone|苹果 android|安卓 windows macos|mac linux web|网页|h5 desktop|桌面|electron ipad|平板 小程序|miniprogram",
    "周一|星期一|monday|mondays 周二|星期二|tuesday|tuesdays 周三|星期三|wednesday|wednesdays 周四|星期四|thursday|thursdays "
    "周五|星期五|friday|fridays 周六|星期六|saturday|saturdays 周日|星期日|星期天|sunday|sundays",
    "上午|早上|morning 下午|afternoon 晚上|evening|night 凌晨 中午|noon",
    "每天|每日|daily|nightly 每周|weekly 每两周|biweekly|fortnightly 每月|monthly 每季度|quarterly 每年|yearly|annually|annual 每小时|hourly",
    "q1 q2 q3 q4 上半年|h1 下半年|h2",
    "输入|input 输出|output 上传|upload 下载|download 上行|uplink 下行|downlink",
    "主|primary|master|leader 备|secondary|replica|follower|standby",
    "中文|chinese 英文|english 日文|japanese 德文|german 法文|french",
    "免费版|free 专业版|pro 企业版|enterprise 基础版|basic 高级版|premium",
    "最小|最低|min|minimum 最大|最高|max|maximum",
))
#: the sets above that are times (weekdays, times of day, quarters): what a schedule change changes
_TIME_SETS = frozenset({3, 4, 5, 6})
#: spelling → (set, member)
_CONTRAST_OF = {w: (g, i) for g, members in enumerate(_CONTRASTS) for i, m in enumerate(members) for w in m}
#: the Han spellings of those members, found inside longer jieba words (周五晚上, 测试环境)
_CONTRAST_HAN = tuple(w for w in _CONTRAST_OF if not w.isascii())
#: words that announce a change or a retirement: with them a new value replaces, without them a
#: new value next to a different head word is more likely another subject
_CHANGE = re.compile(
    r"改|换|迁|挪到|切到|切换|替换|取代|代替|升级|降级|调到|调整|调成|提高到|降到|降低到|增加到|减少到|延长|缩短|推迟|提前|不再|已下线|下线了|弃用|停用|废弃|现在|如今|从.{0,12}起"
    r"|\b(?:now|no longer|any ?more|switch\w*|mov(?:e|ed|ing) (?:to|off|from|over)|migrat\w*|replac\w*|instead|upgrad\w*|downgrad\w*|bump\w*"
    r"|chang\w*|stopp?\w*|retir\w*|deprecat\w*|dropped|raised|lowered|increased|decreased|reduced|extended|postponed|moved|went|from now on|these days|since"
    r"|starting (?:on |from )?(?:today|tomorrow|this|next|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun|\d)|effective|as of|onwards?)\b",
)
_NUM = re.compile(r"^v?\d[\d.,:/x%]*$")
_NAMEISH = re.compile(r"[a-z].*\d|\d.*[a-z]|[._/@:-]")  # ids, hosts, paths, versions: db-staging.internal, a-1021
_STOP = frozenset(
    """的 了 是 在 和 与 及 或 也 都 就 还 要 会 把 被 给 对 为 以 用 由 将 从 到 于 上 中 里 下 个 这 那 其 该 我们 我 你 他 她 它 他们 有 没有 一个
    a an the of to in on at for by with and or is are was were be been being it its this that these those we our i my you your
    he she they them as from into onto via per all any each every so then than too very just also only please remember note
    记住 请 备注 注意 一下 一些 已经 目前 当前 现在 now currently""".split()
)


#: Chinese numerals and the measure words after which a numeral is a quantity ("十分钟" = 10
#: minutes; "一家" is "a", not 1), and English number words
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_UNITS = ("毫秒", "分钟", "小时", "个月", "秒", "天", "周", "年", "点", "岁", "次", "个", "倍", "人", "台", "万", "行", "条", "张", "位", "名")
_EN_NUMBERS = {w: str(n) for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
_EN_NUMBERS.update({"twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100"})


def _zh_number(token: str) -> tuple[str, str] | None:
    """``十分钟`` → ("10", "分钟"), ``二十五天`` → ("25", "天"); None unless a measure word follows."""
    i = 0
    while i < len(token) and (token[i] in _ZH_DIGITS or token[i] in "十百"):
        i += 1
    if i == 0 or not token[i:].startswith(_ZH_UNITS):
        return None
    value, current = 0, 0
    for ch in token[:i]:
        if ch in "十百":
            value += (current or 1) * (10 if ch == "十" else 100)
            current = 0
        else:
            current = _ZH_DIGITS[ch]
    return str(value + current), token[i:]


@dataclass(frozen=True)
class Tok:
    key: str  # comparison key: lowercased, numbers without leading zeros
    kind: str  # num · name · word
    id_of: str  # for a number: the identifier word before it ("worker"), else ""


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[Tok, ...]:
    """The statement's content tokens in order (numbers, names, words); stop words dropped."""
    cased = _simplified(unicodedata.normalize("NFKC", text)).replace("%", " percent ")  # the tokenizer drops "%": keep it as a unit
    # capitalised where no sentence starts: a name even in English ("the staging Postgres")
    capitalised = {m.group(0).rstrip(".-") for m in re.finditer(r"[A-Z][\w.+#-]*", cased)  # "…by Marta Kowalski."
                   if m.group(0) != "I" and (cased[: m.start()].rstrip()[-1:] not in ("", ".", "!", "?", "。", "！", "？", "\n")
                                             or _TITLE.search(cased[: m.start()]))}
    out: list[Tok] = []
    prev = ""
    for raw in _text._split(cased, search_mode=False):
        raw = re.sub(r"['’]s$", "", raw.strip(".,;:!?，。；：！？()（）[]【】\"'`“”‘’$€£¥￥"))  # Bruno's is Bruno
        r = raw.lower()
        if not r:
            continue
        zh = _zh_number(r) if _text.has_han(r[:1]) else None
        if _NUM.match(r) or r in _EN_NUMBERS or zh:
            key = zh[0] if zh else _EN_NUMBERS.get(r) or r.lstrip("v").rstrip(".,").lstrip("0") or "0"
            out.append(Tok(key, "num", prev if prev in _ID_WORDS or (_text.has_han(prev) and prev[-1:] in _ID_SUFFIXES) else ""))
            if zh and zh[1] not in _STOP:  # 十分钟 → 10, 分钟
                out.append(Tok(zh[1], "word", ""))
        elif r not in _STOP:
            # a name: written with capitals past its first letter or with digits and punctuation
            # (FastAPI, orders-api, db-staging.internal), or capitalised where no sentence starts
            kind = "name" if r.isascii() and (_NAMEISH.search(r) or any(c.isupper() for c in raw[1:]) or raw in capitalised
                                              or (raw[:1].isupper() and _text.has_han(cased))) else "word"
            # stemmed alike whether written as a name or not (Kubernetes / kubernetes), but not the short ones (iOS is no "io")
            # …and not the members of parallel sets: "weekly" is no "week"
            key = _text._stemmer().stemWord(r) if len(r) > 3 and r.isascii() and r.isalpha() and r not in _CONTRAST_OF else r
            out.append(Tok(key, kind, ""))
        prev = r if r not in ("的", "the", ":", "：") else prev
    # a number before 号 / 班 / 年级 … is an item of a series too (the word after it names the series)
    # …unless a month stands before it: "3 月 15 号" is a date
    return tuple(Tok(t.key, t.kind, t.id_of or nxt.key) if t.kind == "num" and not t.id_of and nxt.key in _ID_AFTER
                 and prv.key != "月" else t
                 for prv, t, nxt in zip((Tok("", "word", ""), *out[:-1]), out, (*out[1:], Tok("", "word", ""))))


#: a title before a name ends no sentence: "Dr. Lindqvist" is a name
_TITLE = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Prof|St|Sr|Jr)\.\s*$")


def _simplified(text: str) -> str:
    """Mainland simplified Chinese with its vocabulary (zh-cn: 資料庫 → 数据库, not 资料库), so that
    one statement in two scripts compares equal word for word."""
    if not _text.has_han(text):
        return text
    import zhconv_rs  # lazy: only Chinese text needs it

    return zhconv_rs.zhconv(text, "zh-cn")


@dataclass(frozen=True)
class Diff:
    """How two statements differ, token by token."""

    shared: int
    only_old: tuple[Tok, ...]
    only_new: tuple[Tok, ...]
    swaps: tuple[tuple[tuple[Tok, ...], tuple[Tok, ...], int], ...]  # (old part, new part, position in old)
    n_old: int
    n_new: int
    cross: bool  # one is Chinese and the other is not: words cannot be compared, only numbers and names

    @property
    def overlap(self) -> float:
        return self.shared / max(1, min(self.n_old, self.n_new))


def diff(old: str, new: str) -> Diff:
    """Align the two statements' tokens (difflib over the token sequences)."""
    a, b = tokens(old), tokens(new)
    cross = _text.has_han(old) != _text.has_han(new)
    ka, kb = [t.key for t in a], [t.key for t in b]
    sm = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
    shared, swaps = 0, []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            shared += i2 - i1
        elif op == "replace":
            swaps.append((a[i1:i2], b[j1:j2], i1))
    sa, sb = set(ka), set(kb)
    return Diff(shared, tuple(t for t in a if t.key not in sb), tuple(t for t in b if t.key not in sa), tuple(swaps), len(a), len(b), cross)


def announces_change(text: str) -> bool:
    """Does the statement say that something changed (改用, 不再, now, switched to, …)?"""
    return _CHANGE.search(_text.normalize(text)) is not None


def moves(text: str) -> bool:
    """Does the statement change something *to* a value, with a change-to verb (改成, 迁到, 挪到,
    switched … to, goes up to)? Narrower than :func:`announces_change` ("已经换新" moves nothing)."""
    return _MOVES.search(_text.normalize(text)) is not None


def other_subject(old: str, new: str, d: Diff | None = None) -> str | None:
    """Why the two are about different subjects (a reason), or None when nothing says so.

    * an identifier swapped: a number after a series word ("worker 1" / "worker 2", "第 3 条");
    * a member of a set of parallel things swapped (staging / production, iOS / Android);
    * in two statements of one template (most tokens shared), a swapped word or name that is
      followed by the same tail: the head changed and what is said of it did not ("订单表的软删除
      字段是 deleted_at" / "用户表的…"), unless the new one announces a change.
    """
    d = d or diff(old, new)
    # "the review moved to room 5": a numbered thing after the change verb is the new value, not
    # another subject; one before it is what the statement is about ("Server 2 is now up")
    verb = _MOVES.search(_text.normalize(new)) if not moves(old) else None
    subject_ids = {t.id_of for t in tokens(_text.normalize(new)[: verb.start()]) if t.id_of} if verb else None
    a_ids = {(t.id_of, t.key) for t in tokens(old) if t.id_of}
    b_ids = {(t.id_of, t.key) for t in tokens(new) if t.id_of}
    words_a = {t.id_of for t in tokens(old) if t.id_of}
    for w in words_a & {t.id_of for t in tokens(new) if t.id_of}:
        if subject_ids is not None and w not in subject_ids:
            continue
        if {k for i, k in a_ids if i == w} != {k for i, k in b_ids if i == w}:
            return f"another {w}"
    if d.cross and not verb and a_ids and b_ids and {k for _, k in a_ids} != {k for _, k in b_ids}:
        return "another item of a series"  # "Action item 2" / "行动项 3": the series word is in two languages
    ca, cb = _contrasts(old), _contrasts(new)
    # "每周例会不再放在周一，改到周二下午": new names old's member (周一) in the same breath as a change;
    # then it is old's subject that moves, even where another set (上午 / 下午) differs
    changing = moves(new) and not planned(new)
    # …it names old's member and another one of that set (the one it moves to); a member both
    # name alike is no move: in "周二的家教课改到了晚上七点" / "周四的…改到了晚上七点" 晚上 is each one's new value
    moving = changing and any(ca[g] & cb[g] and cb[g] - ca[g] for g in ca.keys() & cb.keys())
    for g in () if moving else ca.keys() & cb.keys():
        if changing and g in _TIME_SETS and not moves(old):
            continue  # "1:1 meeting 挪到每周四上午": a changed day or hour of one meeting, not another meeting
            # (when old moves too, both are changes of the same shape and the day names the subject)
        if not ca[g] & cb[g]:
            name = lambda ms: "/".join(sorted(min(_CONTRASTS[g][m], key=lambda w: (len(w), w)) for m in ms))  # noqa: E731
            return f"{name(ca[g])} / {name(cb[g])}"
    if d.cross or d.overlap < 0.5:
        return None
    for part_a, part_b, _ in d.swaps:  # exp-0412 / exp-0413, node-03 / node-04: one series, two items
        if len(part_a) == 1 == len(part_b) and part_a[0].kind == "name" == part_b[0].kind \
                and re.sub(r"\d+", "#", part_a[0].key) == re.sub(r"\d+", "#", part_b[0].key) \
                and not (announces_change(new) and not announces_change(old)):
            return f"another {part_b[0].key}"
    if announces_change(new) or moves(new):
        return None
    ta, new_keys = tokens(old), {t.key for t in tokens(new)}
    for part_a, part_b, at in d.swaps:
        tail = ta[at + len(part_a):]
        if not tail:
            continue
        kinds = {t.kind for t in part_a + part_b}
        if kinds <= {"num"}:
            # a number followed by its unit or slot word is a value ("port 8080" → "port 9090"); one
            # followed by most of the statement is the item it is about ("Warehouse 2 closes its
            # inbound dock at 18:00" / "Warehouse 7 …", "the Python 3.11 job …" / "the 3.12 job …")
            rest = [t for t in (tail[1:] if tail and tail[0].key in _UNIT_OF else tail) if t.key in new_keys]
            if len(rest) >= 3:
                return f"another {' '.join(t.key for t in part_b)}"
            continue
        if sum(1 for t in tail if t.key in new_keys) >= max(2, (len(tail) + 1) // 2):
            return f"{' '.join(t.key for t in part_a)} / {' '.join(t.key for t in part_b)}"
    return None


_NEGATION = re.compile(r"不|没|别|禁止|勿|\b(?:no|not|never|without|don't|doesn't|isn't|aren't|won't|cannot|can't)\b")


def _contrasts(text: str) -> dict[int, set[int]]:
    """The members of each set of parallel things a statement names, by set (Latin words as
    written, Han words as substrings: jieba keeps 测试环境 or 周二的 whole)."""
    norm = _text.normalize(text)
    words = set(re.findall(r"[a-z0-9]+", norm))  # as written: "production" stems to "product", which is no environment
    found: dict[str, tuple[int, int]] = {w: gm for w, gm in _CONTRAST_OF.items() if ((w in words) if w.isascii() else (w in norm))}
    # 预发布 contains 预发 (one member), 星期一 is not 周一's rival: drop a spelling inside a longer one found
    found = {w: gm for w, gm in found.items() if not any(w != x and not w.isascii() and w in x for x in found)}
    out: dict[int, set[int]] = {}
    for g, m in found.values():
        out.setdefault(g, set()).add(m)
    return out


def adds_nothing(old: str, new: str, d: Diff | None = None) -> bool:
    """Does ``new`` say nothing ``old`` does not? Every number and name of it is in ``old``, it
    negates what ``old`` negates, no word is swapped where the value sits, at least two of its
    words are ``old``'s, and at most as many are new, each in place of an old one (a rewording
    swaps words; a detail adds words and drops none)."""
    d = d or diff(old, new)
    if d.cross or not d.n_new:
        return False  # words of two languages cannot be compared here: keep both (a missed merge is cheap)
    if other_subject(old, new, d):
        return False
    swap = swapped(d)
    if not anchors(new) <= {t.key for t in tokens(old)} or (swap is not None and swap[2]):
        return False  # a word swapped at the end, where the value sits ("负责人是王磊" / "…是赵敏"), is a new fact
    na, nb = _NEGATION.search(_text.normalize(old).lower()), _NEGATION.search(_text.normalize(new).lower())
    if bool(na) != bool(nb):
        return False
    if (moves(new) and not moves(old)) or (announces_change(new) and not announces_change(old)):
        return False  # "…换成渴望了", "…is now Dr. Lindqvist": a change says something the old one does not
    if _new_things(old, new, d):
        return False
    if any(t.key in _CONTRAST_OF for t in d.only_new):
        return False  # a member of a parallel set the old one lacks ("every two weeks" → "weekly", + "staging") says more
    # new words must replace old ones (a rewording), never come on top of them (a detail), and
    # what is shared must be more than a name ("kafka retention note" is no "kafka topic naming rule")
    kept = d.n_new - len(d.only_new)
    return kept >= 2 and len(d.only_new) <= kept and len(d.only_new) <= len(d.only_old)


def anchors(text: str) -> frozenset[str]:
    """Numbers and names of a statement: what a restatement in any wording must keep."""
    return frozenset(t.key for t in tokens(text) if t.kind in ("num", "name"))


#: "X" retired in so many words: no longer X, moved off X, X 已下线, 不再用 X, instead of X …
_RETIRES = (
    re.compile(r"\b(?:no longer(?: use| uses| using| run| runs| rely on| need| on)?|moved (?:\w+ ){0,3}?(?:off|away from)|migrated (?:\w+ ){0,3}?(?:off|away from)"
               r"|stopped(?: using| running)?|stop using|got rid of|switched (?:\w+ )?(?:away )?from|instead of|rather than|replac(?:ed|ing))"
               r"\s+(?:the |our |all )?(?P<x>[\w.+#/-]+(?: [\w.+#/-]+){0,2})"),
    re.compile(r"(?P<x>[\w.+#/-]+(?: [\w.+#/-]+)?) (?:is|was|were|are|has been|have been|got) (?:retired|deprecated|removed|decommissioned|shut down|replaced|dropped|archived)"),
    re.compile(r"(?:不再|停止|停用|弃用|废弃|放弃|不用|淘汰)(?:使用|用|采用|放|走|跑|在)?\s*(?P<x>[^，。；,;！!？?\s]{1,12})"),
    re.compile(r"(?P<x>[\w.+#/-]+|[\u4e00-\u9fff]{2,6})\s*(?:那边|集群|这边)?\s*(?:已经?|被|也)?\s*(?:下线|停用|弃用|废弃|退役|淘汰)"),
    re.compile(r"(?P<x>[\w.+#/-]+|[\u4e00-\u9fff]{2,6})\s*(?:已经?|被)\s*(?:归档|archived?\b)"),  # X 已经 archive 了, not "超过 5 年的归档"
    re.compile(r"(?P<x>[\w.+#/-]{2,}(?: [\w.+#/-]{2,})?|[\u4e00-\u9fff]{2,6})\s*(?:那边|这边)?\s*(?:已经?)?不再(?=[\u4e00-\u9fff])"),  # 钉钉群不再接收
)


_SET_ASIDE = re.compile(r"\b(?:over|rather than|instead of|not)\s+(?:the |our )?(?P<x>[\w.+#/-]+(?: [\w.+#/-]+)?)|(?:而不是|而非|不用)\s*(?P<y>[^，。；,;\s]{1,8})")


def retires(old: str, new: str, d: Diff | None = None) -> str | None:
    """``new`` retires something ``old`` states (it names it after "no longer", "moved off",
    "已下线", "不再用" …) and the two share a subject besides it: the retired thing, else None."""
    d = d or diff(old, new)
    if _NEGATION.search(_text.normalize(old).lower()) or planned(new):
        return None  # old is itself a negation ("we don't use X"), or new only plans the change
    norm = _text.normalize(new).lower()
    old_keys = {t.key for t in tokens(old)}
    # what old itself puts aside ("prefers email over Slack") is not retired by new saying so again
    rejected = {t.key for m in _SET_ASIDE.finditer(_text.normalize(old).lower()) for t in tokens(m.group("x") or m.group("y"))}
    for pattern in _RETIRES:
        for m in pattern.finditer(norm):
            x = [t for t in tokens(m.group("x")) if t.kind != "num" or len(t.key) > 1]
            hit = [t for t in x if t.key in old_keys and t.key not in rejected]
            if not hit:
                continue
            rest = old_keys & {t.key for t in tokens(new)} - {t.key for t in hit}
            if rest or d.cross:
                return " ".join(t.key for t in hit)
    return None


def value_swap(old: str, new: str, d: Diff | None = None) -> str | None:
    """The same sentence with a number changed ("API 网关监听 8080 端口" → "API 网关端口：8443";
    "timeout 10 s" → "timeout: 15 s"): the old and the new number, else None. Only for one
    language, most words shared and at most two words swapped besides the number; identifiers
    are ruled out before (:func:`other_subject`)."""
    d = d or diff(old, new)
    if planned(new):
        return None
    a_num = [t.key for t in d.only_old if t.kind == "num" and not t.id_of]
    b_num = [t.key for t in d.only_new if t.kind == "num" and not t.id_of]
    if not (a_num and b_num):
        return None
    if d.cross:  # one number each with the same unit after it, and a change to it said outright or a shared name or term
        na, nb = _numbers_with_unit(old), _numbers_with_unit(new)
        moved = moves(new)  # "改成 50 MB": a change to the new value, said outright
        if len(na) == 1 == len(nb) and na[0][1] == nb[0][1] and (moved or (na[0][1] and shares_topic(old, new))):
            return f"{a_num[0]} → {b_num[0]}"
        return None
    words_a = [t for t in d.only_old if t.kind != "num"]
    words_b = [t for t in d.only_new if t.kind != "num"]
    if d.overlap < 0.5 or len(words_a) > 2 or len(words_b) > 2 or _new_things(old, new, d, when_ok=True):
        return None  # another thing beside the new number (Redis port → Postgres port) is another subject
    return f"{' '.join(a_num)} → {' '.join(b_num)}"


def planned(text: str) -> bool:
    """A plan, hedge or question ("考虑改用", "we might move to", "should we…?"): not a change yet."""
    from .conflict import _HEDGE, _QUESTION

    norm = _text.normalize(text).lower()
    return _HEDGE.search(norm) is not None or _QUESTION.search(norm) is not None


#: slots that hold one value at a time: a new value there replaces the old one
_SINGLE = frozenset(
    """owner lead manag maintain contact respons head chair assigne approv review name email address timezon zone citi host hostnam domain region
    port version default primari editor shell ide model provid vendor databas db framework languag font theme color colour
    负责人 负责 联系人 对接人 主管 经理 领导 老板 名字 名称 邮箱 地址 时区 城市 域名 主机 区域 端口 版本 默认 主 编辑器 模型 服务商 供应商
    数据库 框架 语言 字体 主题 颜色 值班 审批 审核 管理员 维护""".split()
)


def swapped(d: Diff) -> tuple[tuple[Tok, ...], tuple[Tok, ...], bool] | None:
    """In two statements of one template (one language, most tokens shared), a place where one
    word or name stands for another ("负责人是王磊" / "…是赵敏", "用大写" / "用小写"): the two sides
    and whether the swap is at the end (nothing but units after it). None when there is none."""
    if d.cross or d.overlap < 0.5:
        return None
    for part_a, part_b, at in d.swaps:
        if len(part_a) <= 2 and len(part_b) <= 2 and any(t.kind != "num" for t in part_a + part_b):
            return part_a, part_b, at + len(part_a) >= d.n_old - 1
    return None


def slot_change(old: str, new: str, d: Diff | None = None) -> str | None:
    """A one-word swap at the end of one template whose slot holds a single value (owner, port,
    负责人, 时区 …): "当前值班负责人是王磊" → "…是赵敏". The change as text, else None."""
    d = d or diff(old, new)
    found = swapped(d)
    if found is None or not found[2] or planned(new):
        return None
    part_a, part_b, _ = found
    if all(t.kind == "word" and t.key.isascii() for t in part_b):
        return None  # an English value is a name or a number ("requires it" is no new value)
    head = {t.key for t in tokens(old)} - {t.key for t in part_a}
    if not head & _SINGLE and not any(w in _text.normalize(old) for w in _SINGLE if not w.isascii()):
        return None
    return f"{' '.join(t.key for t in part_a)} → {' '.join(t.key for t in part_b)}"


def _numbers_with_unit(text: str) -> list[tuple[str, str]]:
    """Each number of a statement with the token after it (its unit: "25 MB" → ("25", "mb"))."""
    toks = tokens(text)
    return [(t.key, _UNIT_OF.get(toks[i + 1].key, "") if i + 1 < len(toks) else "") for i, t in enumerate(toks) if t.kind == "num"]


#: unit words (either language, stemmed) → one name per unit, so "25 MB" and "25 mb", "3 天" and "3 days" agree
_UNIT_OF = {w: u.split()[0] for u in (
    "mb 兆", "gb", "kb", "tb", "ms 毫秒", "second sec 秒 s", "minut min 分钟", "hour hr 小时 h", "day 天", "week 周", "month 个月 月",
    "year 年", "% percent", "dollar usd 美元", "元 rmb cny 块", "core 核", "node 节点 台", "gpu 卡 张", "pod", "request 次 请求",
    "hz 赫兹", "khz", "mhz", "ghz", "kv 千伏", "kw 千瓦", "mw 兆瓦", "kwh", "kbit", "mbit", "gbit",
) for w in u.split()}


#: a change with its new value: 迁移到 X, 改用 X, switched to X, now runs on X …
_MOVES = re.compile(
    r"(?:迁移到|迁到|迁移至|改用|改为|改成|改到|改投|改由|换成|换用|换到|切换到|切到|转到|转用|搬到|升级到|替换为|替换成|挪到|调到|调成|调整为|调整到|推迟到|提前到|延期到"
    r"|交给|交由|移交给|转交给|接手|现在由|现在改|现在(?:都|统一|全部)?(?:用|是|发到|走|归|在)|从.{0,8}起)"
    r"|\b(?:switch|migrate|move|upgrade|change)\w* ?(?:到|成)"  # code-mixed: 已经 switch 到 GreenWare
    r"|\b(?:switched|moved|migrated|changed|upgraded|transitioned|converted|bumped|raised|lowered|increased|decreased|reduced|extended|postponed"
    r"|finished (?:upgrading|migrating|moving|switching)|handed|hands)"
    r"(?: \S+){0,5}? (?:to|onto|over to)\b|\bupgrade (?:to|到)"
    r"|\b(?:taken|takes|took) over as\b|\b(?:is|are) now\b"
    r"|\b(?:goes|went|gone|rises|rose|drops|dropped|falls|fell) (?:up |down )?to\b"
    r"|\bnow (?:use|uses|runs? on|lives? in|built (?:with|on)|builds? (?:with|on)|hosted on|deployed (?:on|to))\b"
)
_ADDS = re.compile(r"\b(?:also|too|as well|additionally|in addition)\b|也|同时|还要|并且")


#: who hands something over in a handover: the old holder, though the new statement still names them
_GIVERS = tuple(re.compile(p) for p in (
    r"(?P<x>[\w.-]+(?: [\w.-]+)?) (?:has |had )?hand(?:ed|s) ",
    r"\b(?:took|takes|taken|taking) over (?:\S+ ){0,5}?from (?P<x>[\w.-]+(?: [\w.-]+)?)",
    r"\bsince (?P<x>[\w.-]+) (?:left|moved|retired)",
    r"(?P<x>[\w.-]+) (?:left|has left|is leaving|went on leave|is on (?:\w+ )?leave)\b",
    r"从(?P<x>[^，。；,;\s]{1,8}?)(?:变更为|改为|换成|改成|变成|换为|调整为)",
    r"(?P<x>[\u4e00-\u9fff]{2,4}|[\w.-]+)\s*(?:调岗|离职|休假|休产假|不再负责|卸任|交接给|移交给|转交给|改做|改任)",
))


def moves_to(old: str, new: str, d: Diff | None = None) -> str | None:
    """``new`` moves the subject of ``old`` to a new value ("CI 迁移到了 GitHub Actions" after "CI 跑在
    Jenkins 上"): a change verb, a subject word or name both share, a name of ``old`` that ``new``
    no longer names and a name of ``new`` that ``old`` never named. The change as text, else None."""
    d = d or diff(old, new)
    norm = _text.normalize(new).lower()
    if not _MOVES.search(norm) or planned(new) or _ADDS.search(norm):
        return None
    a, b = tokens(old), tokens(new)
    norm_old = _simplified(_text.normalize(old))
    # the subject both name: a shared word or name (a Han word inside the other's text counts: 健身 / 健身房)
    shared = {t.key for t in b if t.key in {x.key for x in a} or (len(t.key) >= 2 and _text.has_han(t.key) and t.key in norm_old)}
    # a day, a time or another member of a parallel set is when or where, not what: "集群分区维护到周五" and
    # "周五晚上的家教改成线上" share only 周五
    shared = {k for k in shared if k not in _CONTRAST_OF and not any(m in k for m in _CONTRAST_HAN)}
    if d.cross:  # only names cross languages (a name at the start of a sentence is one in the other statement)
        shared = {k for k in shared if any(t.key == k and t.kind != "word" for t in (*a, *b))}
    nouns_old, nouns_new = _han_nouns(old), _han_nouns(new)
    norm_new = _simplified(_text.normalize(new))
    # what old names that new no longer does, and a name, number or Chinese noun new brings (Zendesk → 飞书服务台)
    # (a Han word by substring: jieba may cut it apart differently; a name by token: BP-Staff is gone in BP-Staff-5G)
    keys_old, keys_new = {t.key for t in a}, {t.key for t in b}
    gone = [t.key for t in d.only_old if (t.kind != "word" or t.key in nouns_old) and not t.id_of
            and (t.key not in norm_new if _text.has_han(t.key) else t.key not in keys_new)]
    came = [t.key for t in d.only_new if (t.kind != "word" or t.key in nouns_new) and not t.id_of
            and (t.key not in norm_old if _text.has_han(t.key) else t.key not in keys_old)]
    if d.cross:  # every word of the other language is "gone" and "come": only names and numbers tell a move
        gone = [k for k in gone if any(t.key == k and t.kind != "word" for t in a)]
        came = [k for k in came if any(t.key == k and t.kind != "word" for t in b)]
    # a handover still names the one who goes ("Tom handed … over to Priya", "从刘洋变更为孙悦", "陈老师调岗了")
    givers = {t.key for p in _GIVERS for m in p.finditer(norm) for t in tokens(m.group("x"))} & keys_old
    gone += [k for k in givers if k not in gone]
    shared -= givers
    if not (shared - set(came) and gone and came):
        return None
    # what is moved is named before the verb: a Chinese noun there that old never names is another
    # thing, and the shared word only where both happen ("东湖变电站…阈值 85℃" / "东湖边的团建活动改到下周六")
    verb = _MOVES.search(norm_new.lower())
    before = norm_new[: verb.start()] if verb else ""
    if not d.cross and any(n not in norm_old and n not in _CONTRAST_OF for n in _han_nouns(before)):
        return None
    return f"{' '.join(gone)} → {' '.join(came)}"


def other_facts(old: str, new: str) -> str | None:
    """A clause of ``old`` that ``new`` does not touch at all ("我的名字是张伟" in "我的名字是张伟，时区是
    UTC+8" against "我现在的时区是 UTC-5"): replacing ``old`` would hide it, so the pair is only a
    possible conflict. That clause, else None."""
    new_keys = {t.key for t in tokens(new)}
    clauses = [c for c in re.split(r"[,;，；。!?！？]+|\band\b|\bwhile\b|并且|而且", _text.normalize(old)) if c.strip()]
    if len(clauses) < 2:
        return None
    for clause in clauses:
        keys = {t.key for t in tokens(clause)}
        if keys and not keys & new_keys:
            return clause.strip()
    return None


def shares_topic(old: str, new: str) -> bool:
    """Do the two name something in common — a word, a name, a number (or, across languages, a
    name, a number or a glossary translation)? Two statements a person calls "about the same
    thing" do; a high cosine between "Invoices are generated on the 1st" and "The staging
    database is refreshed every Monday" is only the model's sense of one project's register."""
    a, b = _topics(old), _topics(new)
    if a & b:
        return True
    if _text.has_han(old) == _text.has_han(new):
        return False
    return bool(set(_text.translations(sorted(a), limit=64)) & b or set(_text.translations(sorted(b), limit=64)) & a)


def _topics(text: str) -> set[str]:
    """The words, names and numbers of a statement that can name a topic: not one Han character
    (写, 跑) or a two-letter word, which say too little, and not a unit ("sampled at 50 Hz" /
    "显示器刷新率 60 Hz")."""
    return {t.key for t in tokens(text) if (len(t.key) >= (2 if _text.has_han(t.key) else 3) or t.kind != "word") and t.key not in _UNIT_OF}


def replaces(old: str, new: str, d: Diff | None = None, *, close: bool = True) -> tuple[str, bool] | None:
    """Whether ``new`` replaces ``old`` (same subject assumed, see ``pairs.other_subject``): the
    change as text and whether it is sure enough to supersede (else a possible conflict), or None.
    Sure: what the conflict rules see (an announced change, a negation, the same slot with a new
    value), a retirement in so many words, a move to a new name, and — when the two are close by
    calibrated similarity — a number or a single-valued slot that changed. Unsure: a new value
    the rules see but that nothing announces in a sentence of another shape, a number change
    between two distant statements, a word swapped at the end of one template."""
    from .conflict import detect_conflict

    d = d or diff(old, new)
    if not d.cross and not d.only_new:
        return None  # new names nothing old does not: it cannot bring a new value
    if other_subject(old, new, d):
        return None  # another subject of one template replaces nothing
    if not shares_topic(old, new):
        return None  # nothing named in common: a unit or a verb alone ("50 Hz" / "…换成 4K，60 Hz") is no subject
    conflict = detect_conflict(old, new)
    if conflict is not None and not _enumerates(conflict.reason, conflict.detail):
        return conflict.detail, conflict.reason != "new_value" or announces_change(new) or d.overlap >= 0.6
    if (gone := retires(old, new, d)) is not None:
        return f"retires {gone}", True
    if (moved := moves_to(old, new, d)) is not None:
        return moved, True
    if (swap := value_swap(old, new, d) or slot_change(old, new, d)) is not None:
        return swap, close or d.cross
    found = swapped(d)
    if found is not None and found[2] and not planned(new):
        return f"{' '.join(t.key for t in found[0])} → {' '.join(t.key for t in found[1])}?", False
    return None


def _enumerates(reason: str, detail: str) -> bool:
    """A conflict rules' "new value" that is only the next item of a numbered series ("tip number
    5" / "tip number 6" are two tips, while "port 5432" → "port 5433" is a change)."""
    if reason != "new_value":
        return False
    head = detail.split("→")[0].strip().split()
    return len(head) >= 2 and head[-2].casefold().lstrip("#") in _ID_WORDS | {""}


@lru_cache(maxsize=4096)
def _han_nouns(text: str) -> frozenset[str]:
    """The Chinese nouns of a statement (jieba's part-of-speech tags n*, vn): what it talks about.
    A new one in a "repeat" or beside a changed number names another thing (目前接口延迟的大头在
    搜索接口; 测试环境数据库端口 → 测试环境 Web 服务端口)."""
    import rjieba

    cased = _simplified(unicodedata.normalize("NFKC", text))
    return frozenset(w.lower() for w, tag in rjieba.tag(cased) if (tag.startswith("n") or tag == "vn") and _text.has_han(w))


def _new_things(old: str, new: str, d: Diff, *, when_ok: bool = False) -> bool:
    """Does ``new`` name a thing ``old`` does not: a name, or a Chinese noun (checked by substring:
    jieba may cut the same noun apart differently in the two)? With ``when_ok`` a month or a day
    is no thing: "…is $24.99 starting May 1" says when a value changes."""
    if any(t.kind == "name" and not (when_ok and (t.key[:3] in _MONTHS or t.key in _CONTRAST_OF)) for t in d.only_new):
        return True
    norm_old = _simplified(_text.normalize(old))
    return any(t.key in _han_nouns(new) and t.key not in norm_old for t in d.only_new)
