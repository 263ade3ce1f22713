"""Find the period a search query talks about: "上周", "last week", "in May 2023", "3天前".

The search ranker uses the result to boost memories created inside that period.
This runs on every search, so it is stdlib-only and does one regex scan per query;
the pattern is compiled once, at import.

Decisions worth knowing (the tests pin each one):

* Periods are half-open ``[start, end)`` in ``now``'s time zone; weeks start on Monday.
  "N days/weeks/months/years ago" is the calendar day/week/month/year that far back
  (so "1 week ago" == "last week" and "2周前" == "上上周").
* "recently"/"lately"/"最近"/"近期"/"近来" = the 14 days ending at ``now``; "past 3 days",
  "last 2 weeks", "the past month", "最近3天", "过去一周" are rolling windows ending at ``now``.
* A month or day without a year is the most recent one not in the future ("May" asked
  in May is this May); "last May" is the one before the current month, "next May" the
  next one after it.
* "since X"/"自从X" runs from the start of X to ``now`` (or to X's end, if later).
* Future expressions (tomorrow, next week/month/year, 明天, 下周, 下个月, 明年) are
  supported; their windows lie after ``now`` and the caller may ignore them.
* English month names need context: a day or a year ("May 8", "8 May", "Jan 2023"),
  a preposition ("in/during/since may"), or "last/this/next". "May" also has to be
  capitalised unless a preposition precedes it, so "I may go" / "this may work" never
  match. Full names other than May/March/August also match on their own ("October").
* Bare numbers never match: "3 days" needs "ago"/"前", a bare "2023" needs
  "in"/"during"/"since", 年, a month or a date form, and years must be 1970..2100,
  so "Python 3.11" and "PostgreSQL 15" are not years. Slashed month/day without
  a year ("5/8") is ambiguous between US and European order and is not read.
* Vague counts ("a few days ago", "几天前", "several weeks") and weekdays are not read.
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


# -- vocabulary ---------------------------------------------------------------

_ZH_DIGIT = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_EN_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_UNIT = {"天": "d", "日": "d", "周": "w", "星": "w", "礼": "w", "月": "m", "年": "y",
         "d": "d", "w": "w", "m": "m", "y": "y"}
_MONTH = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
# Full names that are not also common English words, so they may stand alone.
_SAFE_MONTHS = frozenset("january february april june july september october november december".split())
_ZH_YEAR_REL = {"今": 0, "去": -1, "前": -2}

# -- pattern ------------------------------------------------------------------
# Matching runs on a lowercased copy, so the pattern is case-sensitive lowercase
# (cheaper than IGNORECASE); capitalisation is checked on the original text.
# \b is useless here: CJK characters are \w, so "上周yesterday的" has no boundaries.
_B = r"(?<![a-z])"
_E = r"(?![a-z])"
_Y = r"(?:19[7-9]\d|20\d\d|2100)"
_M = r"(?:1[0-2]|0?[1-9])"
_D = r"(?:3[01]|[12]\d|0?[1-9])"
_ZN = r"(?:\d{1,3}|[一二两三四五六七八九]?十[一二三四五六七八九]?|[一二两三四五六七八九])"
_ZM = rf"(?:{_M}|十[一二]?|[一二三四五六七八九])"
_ZD = rf"(?:{_D}|[二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"
_ZU = r"(?:天|日|周|个?星期|个?礼拜|个月|年)"
_EN = r"(?:\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_EU = r"(?:day|week|month|year)s?"
_MN = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
       r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?(?![a-z])")
_ORD = r"(?:st|nd|rd|th)?"
_NO_PREFIX = r"(?<![之以提此从先事])"  # 之前天气, 提前天数, 之前年薪: "前天/前年" inside words
_UP = r"(?<![马向往早北之])"  # 马上周末 ("soon, at the weekend") is not 上周

# Fixed phrases: (pattern, unit, offset); unit "r" means "recently".
_REL: list[tuple[str, str, int]] = [
    ("大前天", "d", -3), (_NO_PREFIX + "前天", "d", -2), ("昨天|昨日|昨晚|昨夜", "d", -1),
    ("今天|今日|今早|今晨|今晚", "d", 0), ("明天", "d", 1),
    (_UP + "上上个?(?:周(?!期)|星期|礼拜)", "w", -2), (_UP + "上个?(?:周(?!期)|星期|礼拜)", "w", -1),
    ("(?<![日基])本(?:周(?!期)|星期|礼拜)|这个?(?:周(?!期)|星期|礼拜)", "w", 0),
    ("下个?(?:周(?!期)|星期|礼拜)", "w", 1),
    (_UP + "上上个?月", "m", -2), (_UP + "上个?月", "m", -1), ("(?<![日基])本月|这个?月", "m", 0),
    ("下个?月", "m", 1),
    ("大前年", "y", -3), (_NO_PREFIX + "前年", "y", -2), ("去年", "y", -1), ("今年", "y", 0),
    ("明年", "y", 1),
    ("最近|近期|近来", "r", 0),
    (rf"{_B}(?:the\s+)?day\s+before\s+yesterday{_E}", "d", -2),
    (rf"{_B}(?:yesterday|last\s+night){_E}", "d", -1),
    (rf"{_B}(?:today|tonight|this\s+(?:morning|afternoon|evening)){_E}", "d", 0),
    (rf"{_B}tomorrow{_E}", "d", 1),
    (rf"{_B}(?:recently|lately){_E}", "r", 0),
]
for _u in ("week", "month", "year"):
    _REL += [(rf"{_B}(?:the\s+)?{_u}\s+before\s+last{_E}", _u[0], -2),
             (rf"{_B}last\s+{_u}{_E}", _u[0], -1), (rf"{_B}this\s+{_u}{_E}", _u[0], 0),
             (rf"{_B}next\s+{_u}{_E}", _u[0], 1)]
_REL_BY_NAME = {f"rel{i}": (unit, k) for i, (_, unit, k) in enumerate(_REL)}

# Order matters where two forms can start at the same place: longer/more specific first.
_FORMS = [
    ("iso", rf"(?<![\d.])(?P<iso_y>{_Y})(?P<iso_s>[-/])(?P<iso_m>{_M})"
            rf"(?:(?P=iso_s)(?P<iso_d>{_D}))?(?!\d|[-/]\d)"),
    ("zym", rf"(?:(?<!\d)(?P<zym_y>{_Y})\s*年|(?P<zym_r>[今去]|{_NO_PREFIX}前)年)\s*"
            rf"(?P<zym_m>{_ZM})\s*月(?:\s*(?P<zym_d>{_ZD})\s*[日号])?"),
    ("zmd", rf"(?<![\d一二两三四五六七八九十])(?P<zmd_m>{_ZM})\s*月(?:\s*(?P<zmd_d>{_ZD})\s*[日号])?"),
    ("zy", rf"(?<!\d)(?P<zy_y>{_Y})\s*年"),
    ("zago", rf"(?<!\d)(?P<zago_n>{_ZN})\s*(?P<zago_u>{_ZU})之?前"),
    ("zpast", rf"(?:最近|(?<![将接附靠])近|过去)的?\s*(?P<zpast_n>{_ZN})\s*(?P<zpast_u>{_ZU})"),
    ("eago", rf"{_B}(?P<eago_n>{_EN})\s*(?P<eago_u>{_EU})\s+ago{_E}"),
    ("epast", rf"{_B}(?:the\s+)?(?:(?:last|past)\s+(?P<epast_n>{_EN})\s*|past\s+)(?P<epast_u>{_EU}){_E}"),
    ("emd", rf"{_B}(?P<emd_m>{_MN})\s*(?P<emd_d>{_D}){_ORD}(?![\d:a-z])(?:,?\s*(?P<emd_y>{_Y})(?!\d))?"),
    ("edm", rf"(?<![\d.])(?P<edm_d>{_D}){_ORD}\s+(?:of\s+)?(?P<edm_m>{_MN})(?:,?\s*(?P<edm_y>{_Y})(?!\d))?"),
    ("emy", rf"{_B}(?P<emy_m>{_MN}),?\s*(?P<emy_y>{_Y})(?!\d)"),
    ("emo", rf"{_B}(?:(?P<emo_q>last|this|next)\s+)?(?P<emo_m>{_MN})"),
    ("yr", rf"(?<![\d.])(?P<yr_y>{_Y})(?!\d|\.\d)"),
] + [(f"rel{i}", p) for i, (p, _, _) in enumerate(_REL)]

_PATTERN = re.compile(
    rf"(?:(?P<prep>{_B}(?:in|during|since)\s+|自从\s*))?"
    + "(?:" + "|".join(f"(?P<{name}>{p})" for name, p in _FORMS) + ")"
)
_ASCII_LOWER = {c: c + 32 for c in range(65, 91)}


# -- calendar helpers -----------------------------------------------------------

def _num(s: str) -> int:
    if s.isdigit():
        return int(s)
    if s in _EN_NUM:
        return _EN_NUM[s]
    tens, ten, ones = s.partition("十")
    if not ten:
        return _ZH_DIGIT[s]
    return (_ZH_DIGIT[tens] if tens else 1) * 10 + (_ZH_DIGIT[ones] if ones else 0)


def _shift(y: int, m: int, k: int) -> tuple[int, int]:
    i = y * 12 + m - 1 + k
    return i // 12, i % 12 + 1


def _month(y: int, m: int) -> tuple[date, date]:
    return date(y, m, 1), date(*_shift(y, m, 1), 1)


def _period(today: date, unit: str, k: int) -> tuple[date, date]:
    """The calendar day/week/month/year ``k`` units away from the one holding ``today``."""
    if unit == "d":
        s = today + timedelta(days=k)
        return s, s + timedelta(days=1)
    if unit == "w":
        s = today - timedelta(days=today.weekday() - 7 * k)
        return s, s + timedelta(days=7)
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
    # Most recent (month, day) not after today; loops to find the last 29 February.
    for y in range(today.year, today.year - 9, -1):
        try:
            day = date(y, m, d)
        except ValueError:
            continue
        if day <= today:
            return day, day + timedelta(days=1)
    raise ValueError("no such day")


def _month_year(today: date, m: int, qual: str | None) -> int:
    if qual == "this":
        return today.year
    if qual == "next":
        return today.year if m > today.month else today.year + 1
    latest = today.month - 1 if qual == "last" else today.month
    return today.year if m <= latest else today.year - 1


def _name_ok(name: str, prep: bool, context: bool) -> bool:
    """Whether an English month name is meant as one; ``context`` = a day, year or last/this/next."""
    if prep:
        return True
    if name[:3].lower() == "may":
        return context and name[0] == "M"
    return context or name.rstrip(".").lower() in _SAFE_MONTHS


def _resolve(m: re.Match[str], query: str, now: datetime) -> tuple[date | datetime, date | datetime] | None:
    kind, g, today, prep = m.lastgroup, m.group, now.date(), m.group("prep") is not None

    def name(group: str) -> str:
        return query[m.start(group):m.end(group)]

    if kind in _REL_BY_NAME:
        unit, k = _REL_BY_NAME[kind]
        if unit == "r":
            return now - timedelta(days=RECENT_DAYS), now
        return _period(today, unit, k)
    if kind == "iso":
        y, mo = int(g("iso_y")), int(g("iso_m"))
        if g("iso_d"):
            day = date(y, mo, int(g("iso_d")))
            return day, day + timedelta(days=1)
        return _month(y, mo)
    if kind == "zym":
        y = int(g("zym_y")) if g("zym_y") else today.year + _ZH_YEAR_REL[g("zym_r")]
        mo = _num(g("zym_m"))
        if g("zym_d"):
            day = date(y, mo, _num(g("zym_d")))
            return day, day + timedelta(days=1)
        return _month(y, mo)
    if kind == "zmd":
        mo = _num(g("zmd_m"))
        if g("zmd_d"):
            return _day_in_past(today, mo, _num(g("zmd_d")))
        return _month(_month_year(today, mo, None), mo)
    if kind == "zy":
        y = int(g("zy_y"))
        return date(y, 1, 1), date(y + 1, 1, 1)
    if kind in ("zago", "eago"):
        return _period(today, _UNIT[g(kind + "_u").lstrip("个")[0]], -_num(g(kind + "_n")))
    if kind in ("zpast", "epast"):
        n = g(kind + "_n")
        return _rolling(now, _UNIT[g(kind + "_u").lstrip("个")[0]], _num(n) if n else 1)
    if kind in ("emd", "edm"):
        y = g(kind + "_y")
        if not _name_ok(name(kind + "_m"), prep, True):
            return None
        mo, d = _MONTH[g(kind + "_m")[:3]], int(g(kind + "_d"))
        if y is None:
            return _day_in_past(today, mo, d)
        day = date(int(y), mo, d)
        return day, day + timedelta(days=1)
    if kind == "emy":
        if not _name_ok(name("emy_m"), prep, True):
            return None
        return _month(int(g("emy_y")), _MONTH[g("emy_m")[:3]])
    if kind == "emo":
        qual = g("emo_q")
        if not _name_ok(name("emo_m"), prep, qual is not None):
            return None
        mo = _MONTH[g("emo_m")[:3]]
        return _month(_month_year(today, mo, qual), mo)
    if kind == "yr" and prep:
        y = int(g("yr_y"))
        return date(y, 1, 1), date(y + 1, 1, 1)
    return None


def find_time_window(query: str, now: datetime) -> TimeWindow | None:
    """Return the period the leftmost time expression in ``query`` refers to, or None.

    ``now`` must be timezone-aware; calendar arithmetic happens in its time zone.
    """
    tz = now.tzinfo
    if tz is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    low = query.lower()
    if len(low) != len(query):  # e.g. "İ" lowercases to two code points; keep offsets aligned
        low = query.translate(_ASCII_LOWER)
    pos = 0
    while (m := _PATTERN.search(low, pos)) is not None:
        try:
            span = _resolve(m, query, now)
        except (ValueError, OverflowError):  # 2023-02-30, "999 years ago" before year 1
            span = None
        if span is not None:
            start, end = (x if isinstance(x, datetime) else datetime(x.year, x.month, x.day, tzinfo=tz)
                          for x in span)
            if m.group("prep") and m.group("prep").strip() in ("since", "自从"):
                end = max(end, now)
            return TimeWindow(start, end, query[m.start():m.end()])
        pos = m.start() + 1
    return None
