"""Find the period a search query talks about: "上周", "last week", "in May 2023", "3天前".

The ranker boosts memories created inside that period. This runs on every search, so it
is stdlib-only: a keyword pre-check rejects most queries in microseconds, the rest get one
scan with one big regex, compiled on first use so that importing stays cheap.

Decisions (tests/test_timeparse.py pins each one):

* Periods are ``[start, end)`` in ``now``'s time zone; weeks start on Monday. "N units
  ago" is the calendar day/week/month/year that far back ("2周前" == "上上周").
* "recently/lately/最近/近期/近来" = the 14 days up to ``now``; "past 3 days", "last 2
  weeks", "the past month", "最近3天", "过去一周" are rolling windows up to ``now``.
* A month or day without a year is the latest one not in the future (asked in May, "May"
  is this May); "last May" is the latest before the current month. "since X"/"自从X"
  runs from the start of X to ``now``. Future expressions (tomorrow, next week, 下个月,
  明年, "next May") are read too; the caller may ignore windows that start after ``now``.
* English month names need a day or year ("May 8", "8 May", "Jan 2023"), "in/during/
  since", or "last/this/next"; without a preposition "May" must also be capitalised, so
  "I may go" and "this may work" never match. Full names except May/March/August also
  stand alone ("October").
* Numbers alone never match: "3 days" needs "ago"/"前"; a year needs 年, a month, a date
  form or "in/during/since", and must be 1970..2100 ("Python 3.11", "PostgreSQL 15",
  "2023 roadmap" give None).
* Not read: vague counts ("a few days ago", "几天前"), weekdays, hours, "in 3 days",
  decades ("the 1990s"), numeric month/day without a year ("5/8": US or European?),
  dotted dates ("2023.5.8" looks like a version such as "PyCharm 2023.2").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

__all__ = ["TimeWindow", "find_time_window"]

RECENT_DAYS = 14


@dataclass(frozen=True)
class TimeWindow:
    """The period ``[start, end)`` a query refers to, and the text that named it."""

    start: datetime  # aware, inclusive
    end: datetime  # aware, exclusive
    phrase: str


_ZH_DIGIT = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_EN_NUM = {"a": 1, "an": 1} | {w: i for i, w in enumerate(
    "one two three four five six seven eight nine ten eleven twelve".split(), 1)}
_UNIT = dict(zip("天日周星礼月年dwmy", "ddwwwmydwmy", strict=True))  # unit char/first letter -> unit
_MONTH = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
# Full month names that are not also everyday English words, so they may stand alone.
_SAFE_MONTHS = frozenset("january february april june july september october november december".split())

# -- the pattern ------------------------------------------------------------------
# One alternation over a lowercased copy of the query. sre skips an alternative in C when
# its first opcode (a literal or a char class) cannot match the current char, so every
# alternative starts with one: lookbehinds sit after the first char, the English
# word-start check is done in Python, and values are re-read from the matched text rather
# than from capture groups. Each alternative ends in an empty marker group, so
# match.lastgroup names the form; _MARKS maps it to (kind, unit or qualifier, offset).
_MARKS: dict[str, tuple[str, str, int]] = {}


def _mark(kind: str, unit: str = "", k: int = 0) -> str:
    name = f"k{len(_MARKS)}"
    _MARKS[name] = (kind, unit, k)
    return f"(?P<{name}>)"


def _rel(unit: str, k: int = 0) -> str:  # fixed phrases: "上周" is _rel("w", -1)
    return _mark("rel", unit, k)


_E = r"(?![a-z])"  # not \b: CJK chars are \w, so "上周yesterday的" has no word boundary
_N = r"[\d一二两三四五六七八九十]"
_YR = r"[12]\d{3}(?!\d)"  # 1970..2100 is checked in code
_DAY = r"(?:3[01]|[12]\d|0?[1-9])"
_ZU = r"(?:天|日|周|个?星期|个?礼拜|个月|年)"
_EU = rf"(?:day|week|month|year)s?{_E}"
_EW = "an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_WK = r"(?:周(?!期)|星期|礼拜)"
_MN = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
       r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?(?![a-z])")
_ZMD = rf"\s*{_N}{{1,3}}\s*月(?:\s*{_N}{{1,3}}\s*[日号])?"  # month [day], after a year
_ALTS = [
    # Everything that starts with a number not glued to another number or a decimal point
    # (so "3.11" and "12345" give nothing). Tails are tried in order.
    rf"{_N}(?<![\d一二两三四五六七八九十.]{_N}){_N}{{0,3}}(?:"
    rf"(?P<sep>[-/])(?:1[0-2]|0?[1-9])(?:(?P=sep){_DAY})?(?!\d|[-/]\d){_mark('iso')}"
    rf"|\s*年{_ZMD}{_mark('zym')}"
    rf"|\s*{_ZU}之?前{_mark('ago')}"
    rf"|\s*年(?!之?前){_mark('zy')}"  # "2023年前" is "before 2023", not a period
    rf"|\s*月(?:\s*{_N}{{1,3}}\s*[日号])?{_mark('zmd')}"
    rf"|\s*{_EU}\s+ago{_E}{_mark('ago')}"
    rf"|(?:st|nd|rd|th)?\s+(?:of\s+)?{_MN}(?:,?\s*{_YR})?{_mark('edm')}"
    rf"|(?<=\d{{4}})(?!\.\d|'?s{_E}){_mark('yr')})",
    # 之前年薪, 目前天气, 马上周末, 看一下周报, 说明天数, 过去年代, 日本周边: words that
    # straddle 前年/前天/上周/下周/明天/去年/本周 are excluded by the lookbehinds below.
    rf"[今去前](?<![之以提此从先事目当]前)(?<!过去)年{_ZMD}{_mark('zrm')}",
    rf"最近的?\s*{_N}{{1,3}}\s*{_ZU}{_mark('past')}",
    rf"过去的?\s*{_N}{{1,3}}\s*{_ZU}{_mark('past')}",
    rf"近(?<![将接附靠]近)\s*{_N}{{1,3}}\s*{_ZU}{_mark('past')}",
    rf"今(?:[天日早晨晚]{_rel('d')}|年{_rel('y')})",
    rf"昨[天日晚夜]{_rel('d', -1)}",
    rf"前(?<![之以提此从先事目当]前)(?:天{_rel('d', -2)}|年{_rel('y', -2)})",
    rf"大前(?:天{_rel('d', -3)}|年{_rel('y', -3)})",
    rf"明(?<![说证表声发聪透]明)(?:天{_rel('d', 1)}|年{_rel('y', 1)})",
    rf"去(?<!过去)年{_rel('y', -1)}",
    rf"上(?<![马向往早北之]上)(?:上个?(?:{_WK}{_rel('w', -2)}|月{_rel('m', -2)})"
    rf"|个?(?:{_WK}{_rel('w', -1)}|月{_rel('m', -1)}))",
    rf"本(?<![日基]本)(?:{_WK}{_rel('w')}|月{_rel('m')})",
    rf"这个?(?:{_WK}{_rel('w')}|月{_rel('m')})",
    rf"下(?<![一两几]下)个?(?:{_WK}{_rel('w', 1)}|月{_rel('m', 1)})",
    rf"最近{_mark('recent')}",
    rf"近[期来]{_mark('recent')}",
    rf"day\s+before\s+yesterday{_E}{_rel('d', -2)}",
    rf"yesterday{_E}{_rel('d', -1)}",
    rf"to(?:day{_E}{_rel('d')}|night{_E}{_rel('d')}|morrow{_E}{_rel('d', 1)})",
    rf"recently{_E}{_mark('recent')}",
    rf"lately{_E}{_mark('recent')}",
    rf"last\s+(?:night{_E}{_rel('d', -1)}|week{_E}{_rel('w', -1)}|month{_E}{_rel('m', -1)}"
    rf"|year{_E}{_rel('y', -1)}|(?:\d{{1,3}}|{_EW})\s*{_EU}{_mark('past')}|{_MN}{_mark('emo', 'last')})",
    rf"this\s+(?:(?:morning|afternoon|evening){_E}{_rel('d')}|week{_E}{_rel('w')}"
    rf"|month{_E}{_rel('m')}|year{_E}{_rel('y')}|{_MN}{_mark('emo', 'this')})",
    rf"next\s+(?:week{_E}{_rel('w', 1)}|month{_E}{_rel('m', 1)}|year{_E}{_rel('y', 1)}"
    rf"|{_MN}{_mark('emo', 'next')})",
    rf"past\s+(?:(?:\d{{1,3}}|{_EW})\s*{_EU}|(?:day|week|month|year){_E}){_mark('past')}",
    rf"week\s+before\s+last{_E}{_rel('w', -2)}",
    rf"month\s+before\s+last{_E}{_rel('m', -2)}",
    rf"year\s+before\s+last{_E}{_rel('y', -2)}",
    rf"(?:{_EW})\s+{_EU}\s+ago{_E}{_mark('ago')}",
    rf"{_MN}(?:\s*{_DAY}(?:st|nd|rd|th)?(?![\d:a-z])(?:,?\s*{_YR})?{_mark('emd')}"
    rf"|,?\s*{_YR}{_mark('emy')}|{_mark('emo')})",
]
_pattern: re.Pattern[str] | None = None  # compiling takes ~5 ms: done on first use, not import
# Every form contains a digit, one of these CJK chars or one of these words (its "anchor").
_TRIGGER = re.compile(r"[\d今昨前明去上本这下近过月年]")
_WORD = re.compile(r"[a-z]+")
_KEYWORDS = frozenset(
    "today tonight tomorrow yesterday ago recently lately day days week weeks month months year"
    " years night morning afternoon evening jan january feb february mar march apr april may jun"
    " june jul july aug august sep sept september oct october nov november dec december".split())
_MAX_LEAD = 32  # a form starts at most ~12 chars before its anchor ("last twelve months")
# What may precede a form: a preposition (bare years and lowercase "may" need one) or "the".
_LEAD = re.compile(r"(?:(?<![a-z])(in|during|since)\s+(?:the\s+)?|(?<![a-z])the\s+|(自从)\s*)\Z")
_TOKEN = re.compile(r"\d+|[一二两三四五六七八九十]+|[a-z]+")
_UNIT_WORD = re.compile(r"[天日周星礼月年]|day|week|month|year")
_ASCII_LOWER = {c: c + 32 for c in range(65, 91)}


def _num(s: str) -> int:
    if s.isdigit():
        return int(s)
    if s in _EN_NUM:
        return _EN_NUM[s]
    tens, ten, ones = s.partition("十")  # KeyError on nonsense like "一二" rejects the match
    if not ten:
        return _ZH_DIGIT[s]
    return (_ZH_DIGIT[tens] if tens else 1) * 10 + (_ZH_DIGIT[ones] if ones else 0)


def _year(s: str) -> int:
    if len(s) != 4 or not 1970 <= int(s) <= 2100:
        raise ValueError(s)
    return int(s)


def _shift(y: int, m: int, k: int) -> tuple[int, int]:
    i = y * 12 + m - 1 + k
    return i // 12, i % 12 + 1


def _month(y: int, m: int) -> tuple[date, date]:
    return date(y, m, 1), date(*_shift(y, m, 1), 1)


def _one_day(d: date) -> tuple[date, date]:
    return d, d + timedelta(days=1)


def _period(today: date, unit: str, k: int) -> tuple[date, date]:
    """The calendar day/week/month/year ``k`` units away from the one holding ``today``."""
    if unit == "d":
        return _one_day(today + timedelta(days=k))
    if unit == "w":
        monday = today - timedelta(days=today.weekday() - 7 * k)
        return monday, monday + timedelta(days=7)
    if unit == "m":
        return _month(*_shift(today.year, today.month, k))
    return date(today.year + k, 1, 1), date(today.year + k + 1, 1, 1)


def _rolling(now: datetime, unit: str, n: int) -> tuple[datetime, datetime]:
    if unit in "dw":
        return now - timedelta(days=n * (7 if unit == "w" else 1)), now
    y, m = _shift(now.year, now.month, -n * (12 if unit == "y" else 1))
    last_day = (date(*_shift(y, m, 1), 1) - timedelta(days=1)).day
    return now.replace(year=y, month=m, day=min(now.day, last_day)), now


def _day_in_past(today: date, m: int, d: int) -> tuple[date, date]:
    for y in range(today.year, today.year - 9, -1):  # 9 years back always holds a 29 February
        try:
            day = date(y, m, d)
        except ValueError:
            continue
        if day <= today:
            return _one_day(day)
    raise ValueError("no such day")


def _month_year(today: date, m: int, qual: str) -> int:
    if qual == "this":
        return today.year
    if qual == "next":
        return today.year if m > today.month else today.year + 1
    latest = today.month - 1 if qual == "last" else today.month
    return today.year if m <= latest else today.year - 1


def _resolve(name: str, low: str, query: str, s: int, e: int, now: datetime,
             prep: bool) -> tuple[date | datetime, date | datetime] | None:
    kind, unit, k = _MARKS[name]
    today = now.date()
    if kind == "rel":
        return _period(today, unit, k)
    if kind == "recent":
        return now - timedelta(days=RECENT_DAYS), now
    toks = [(t.group(), t.start()) for t in _TOKEN.finditer(low, s, e)]
    nums = [t for t, _ in toks if not "a" <= t[0] <= "z" or t in _EN_NUM]
    if kind in ("ago", "past"):
        u = _UNIT[_UNIT_WORD.search(low, s, e).group()[0]]  # type: ignore[union-attr]
        if kind == "past":
            return _rolling(now, u, _num(nums[0]) if nums else 1)
        if len(nums[0]) > 3:  # "2010年前" means "before 2010", not 2010 years ago
            return None
        return _period(today, u, -_num(nums[0]))
    if kind == "zmd":
        mo = _num(nums[0])
        if len(nums) > 1:
            return _day_in_past(today, mo, _num(nums[1]))
        return _month(_month_year(today, mo, ""), mo)
    if kind in ("zym", "zrm"):
        if kind == "zym":
            y, nums = _year(nums[0]), nums[1:]
        else:
            y = today.year + {"今": 0, "去": -1, "前": -2}[low[s]]
        mo = _num(nums[0])
        return _one_day(date(y, mo, _num(nums[1]))) if len(nums) > 1 else _month(y, mo)
    if kind == "iso":
        y, mo = _year(nums[0]), int(nums[1])
        return _one_day(date(y, mo, int(nums[2]))) if len(nums) > 2 else _month(y, mo)
    if kind in ("zy", "yr"):
        if kind == "yr" and not prep:  # a bare "2023" is as likely a count, port or ticket
            return None
        y = _year(nums[0])
        return date(y, 1, 1), date(y + 1, 1, 1)
    # English month names: emd "May 8[, 2023]", edm "8 May [2023]", emy "May 2023", emo "[last] May".
    word, at = next(((t, i) for t, i in toks if t[:3] in _MONTH), ("", 0))
    mo, qual = _MONTH[word[:3]], unit
    context = kind != "emo" or bool(qual)
    if not prep:
        if word == "may":  # "I may", "this may work": only a capitalised May, with context
            if not (context and query[at] == "M"):
                return None
        elif not context and word not in _SAFE_MONTHS:  # "march on", "Jan said"
            return None
    digits = [t for t in nums if t.isdigit()]
    if kind == "emy":
        return _month(_year(digits[0]), mo)
    if kind == "emo":
        return _month(_month_year(today, mo, qual), mo)
    if len(digits) > 1:
        return _one_day(date(_year(digits[1]), mo, int(digits[0])))
    return _day_in_past(today, mo, int(digits[0]))


def find_time_window(query: str, now: datetime) -> TimeWindow | None:
    """Return the period the leftmost time expression in ``query`` refers to, or None.

    ``now`` must be timezone-aware; calendar arithmetic happens in its time zone.
    """
    tz = now.tzinfo
    if tz is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    low = query.lower()
    if len(low) != len(query):  # "İ" lowercases to two code points; keep offsets aligned
        low = query.translate(_ASCII_LOWER)
    trigger, words = _TRIGGER.search(low), _KEYWORDS.intersection(_WORD.findall(low))
    if trigger is None and not words:
        return None
    # Every form has its anchor within _MAX_LEAD chars of its start, so scanning can begin
    # that far before the first anchor. str.find may hit a keyword inside a longer word,
    # which only moves the start earlier, so nothing is missed.
    anchors = [low.find(w) for w in words] + ([trigger.start()] if trigger else [])
    global _pattern
    if _pattern is None:
        _pattern = re.compile("|".join(_ALTS))
    pos = max(0, min(anchors) - _MAX_LEAD)
    while (m := _pattern.search(low, pos)) is not None:
        s, e = m.span()
        pos = s + 1
        if s and "a" <= low[s] <= "z" and "a" <= low[s - 1] <= "z":
            continue  # English forms must start a word: not "mayday", not "hmtoday"
        lead = _LEAD.search(low, max(0, s - 16), s)
        prep = lead is not None and (lead.group(1) or lead.group(2)) is not None
        try:
            span = _resolve(m.lastgroup or "", low, query, s, e, now, prep)
        except (ValueError, OverflowError, KeyError, IndexError):  # 2023-02-30, "一二月", ...
            span = None
        if span is None:
            continue  # rejected here; a later position may still match
        start, end = (x if isinstance(x, datetime) else datetime(x.year, x.month, x.day, tzinfo=tz) for x in span)
        if lead is not None and (lead.group(1) == "since" or lead.group(2)):
            end = max(end, now)
        return TimeWindow(start, end, query[lead.start() if lead else s:e])
    return None
