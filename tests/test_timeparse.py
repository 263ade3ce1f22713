"""Tests for mnemo._recall.timeparse: relative/named time expressions in Chinese and English queries."""

from __future__ import annotations

import dataclasses
import random
import time
import unicodedata
from datetime import datetime, timedelta, timezone, tzinfo

import pytest

from mnemo._recall.timeparse import RECENT_DAYS, TimeWindow, find_time_window

UTC = timezone.utc
NOW = datetime(2023, 10, 22, 9, 55, tzinfo=UTC)  # a Sunday; its week starts Monday 2023-10-16
CST = timezone(timedelta(hours=8))
NOW8 = datetime(2024, 3, 1, 0, 30, tzinfo=CST)  # a Friday in a leap year; in UTC it is still 29 Feb

Span = tuple[datetime, datetime]


def day(y: int, m: int, d: int, tz: tzinfo = UTC) -> Span:
    start = datetime(y, m, d, tzinfo=tz)
    return start, start + timedelta(days=1)


def week(y: int, m: int, d: int, tz: tzinfo = UTC) -> Span:
    start = datetime(y, m, d, tzinfo=tz)
    assert start.weekday() == 0, "weeks start on Monday"
    return start, start + timedelta(days=7)


def month(y: int, m: int, tz: tzinfo = UTC) -> Span:
    end = datetime(y + 1, 1, 1, tzinfo=tz) if m == 12 else datetime(y, m + 1, 1, tzinfo=tz)
    return datetime(y, m, 1, tzinfo=tz), end


def year(y: int, tz: tzinfo = UTC) -> Span:
    return datetime(y, 1, 1, tzinfo=tz), datetime(y + 1, 1, 1, tzinfo=tz)


def back(**delta: float) -> Span:
    return NOW - timedelta(**delta), NOW


def since(start: datetime) -> Span:
    return start, NOW


RECENT = back(days=RECENT_DAYS)

# (query, expected span, expected phrase); phrase None means "the whole query".
CASES: list[tuple[str, Span, str | None]] = [
    # -- days
    ("今天", day(2023, 10, 22), None),
    ("今日的会议", day(2023, 10, 22), "今日"),
    ("what did I do today", day(2023, 10, 22), "today"),
    ("Today's notes", day(2023, 10, 22), "Today"),
    ("tonight", day(2023, 10, 22), None),
    ("this morning", day(2023, 10, 22), None),
    ("昨天", day(2023, 10, 21), None),
    ("昨日", day(2023, 10, 21), None),
    ("昨晚说的", day(2023, 10, 21), "昨晚"),
    ("yesterday", day(2023, 10, 21), None),
    ("YESTERDAY", day(2023, 10, 21), None),
    ("last night", day(2023, 10, 21), None),
    ("前天", day(2023, 10, 20), None),
    ("the day before yesterday", day(2023, 10, 20), None),
    ("day before yesterday", day(2023, 10, 20), None),
    ("大前天", day(2023, 10, 19), None),
    ("3天前", day(2023, 10, 19), None),
    ("三天前", day(2023, 10, 19), None),
    ("3天之前", day(2023, 10, 19), None),
    ("两天前", day(2023, 10, 20), None),
    ("十天前", day(2023, 10, 12), None),
    ("二十天前", day(2023, 10, 2), None),
    ("3 days ago", day(2023, 10, 19), None),
    ("3days ago", day(2023, 10, 19), None),
    ("1 day ago", day(2023, 10, 21), None),
    ("a day ago", day(2023, 10, 21), None),
    ("two days ago", day(2023, 10, 20), None),
    ("30 days ago", day(2023, 9, 22), None),
    # -- weeks (Monday-based)
    ("本周", week(2023, 10, 16), None),
    ("这周", week(2023, 10, 16), None),
    ("这个星期", week(2023, 10, 16), None),
    ("这星期", week(2023, 10, 16), None),
    ("这礼拜", week(2023, 10, 16), None),
    ("this week", week(2023, 10, 16), None),
    ("上周", week(2023, 10, 9), None),
    ("上个星期", week(2023, 10, 9), None),
    ("上星期", week(2023, 10, 9), None),
    ("上礼拜", week(2023, 10, 9), None),
    ("上个礼拜", week(2023, 10, 9), None),
    ("last week", week(2023, 10, 9), None),
    ("Last Week", week(2023, 10, 9), None),
    ("上周三的会议", week(2023, 10, 9), "上周"),  # weekday itself is not read
    ("上周末", week(2023, 10, 9), "上周"),
    ("上上周", week(2023, 10, 2), None),
    ("上上个星期", week(2023, 10, 2), None),
    ("the week before last", week(2023, 10, 2), None),
    ("2周前", week(2023, 10, 2), None),
    ("两周前", week(2023, 10, 2), None),
    ("2 weeks ago", week(2023, 10, 2), None),
    ("two weeks ago", week(2023, 10, 2), None),
    ("1 week ago", week(2023, 10, 9), None),
    ("a week ago", week(2023, 10, 9), None),
    ("3个星期前", week(2023, 9, 25), None),
    ("5 weeks ago", week(2023, 9, 11), None),
    # -- months
    ("本月", month(2023, 10), None),
    ("这个月", month(2023, 10), None),
    ("this month", month(2023, 10), None),
    ("上个月", month(2023, 9), None),
    ("上月", month(2023, 9), None),
    ("last month", month(2023, 9), None),
    ("上上个月", month(2023, 8), None),
    ("the month before last", month(2023, 8), None),
    ("3个月前", month(2023, 7), None),
    ("三个月前", month(2023, 7), None),
    ("十二个月前", month(2022, 10), None),
    ("3 months ago", month(2023, 7), None),
    ("a month ago", month(2023, 9), None),
    ("12 months ago", month(2022, 10), None),
    ("in May", month(2023, 5), None),
    ("during May", month(2023, 5), None),
    ("what happened in may", month(2023, 5), "in may"),
    ("May 2023", month(2023, 5), None),
    ("May, 2022", month(2022, 5), None),
    ("Sept 2023", month(2023, 9), None),
    ("Jan 2024", month(2024, 1), None),
    ("in December 2022", month(2022, 12), None),
    ("in October", month(2023, 10), None),  # the current month counts as "not in the future"
    ("in November", month(2022, 11), None),
    ("October", month(2023, 10), None),
    ("notes from September", month(2023, 9), "September"),
    ("last May", month(2023, 5), None),
    ("last October", month(2022, 10), None),
    ("this May", month(2023, 5), None),
    ("next May", month(2024, 5), None),
    ("next November", month(2023, 11), None),
    ("5月", month(2023, 5), None),
    ("5月份的报告", month(2023, 5), "5月"),
    ("五月", month(2023, 5), None),
    ("十月", month(2023, 10), None),
    ("十一月", month(2022, 11), None),
    ("十二月", month(2022, 12), None),
    ("2023年5月", month(2023, 5), None),
    ("2021年 12 月", month(2021, 12), None),
    ("今年3月", month(2023, 3), None),
    ("去年五月", month(2022, 5), None),
    ("前年8月", month(2021, 8), None),
    ("2023-05", month(2023, 5), None),
    # -- years
    ("今年", year(2023), None),
    ("this year", year(2023), None),
    ("去年", year(2022), None),
    ("last year", year(2022), None),
    ("前年", year(2021), None),
    ("the year before last", year(2021), None),
    ("大前年", year(2020), None),
    ("in 2023", year(2023), None),
    ("during 2021", year(2021), None),
    ("2023年", year(2023), None),
    ("2022年的总结", year(2022), "2022年"),
    ("3年前", year(2020), None),
    ("3 years ago", year(2020), None),
    ("one year ago", year(2022), None),
    # -- recently, and rolling windows ending now
    ("最近", RECENT, None),
    ("最近的会议", RECENT, "最近"),
    ("近期", RECENT, None),
    ("近来", RECENT, None),
    ("recently", RECENT, None),
    ("lately", RECENT, None),
    ("what did I decide lately?", RECENT, "lately"),
    ("past 3 days", back(days=3), None),
    ("the past week", back(days=7), None),
    ("last 2 weeks", back(days=14), None),
    ("in the last two weeks", back(days=14), None),
    ("past month", since(datetime(2023, 9, 22, 9, 55, tzinfo=UTC)), None),
    ("the past year", since(datetime(2022, 10, 22, 9, 55, tzinfo=UTC)), None),
    ("最近3天", back(days=3), None),
    ("过去一周", back(days=7), None),
    ("近三个月", since(datetime(2023, 7, 22, 9, 55, tzinfo=UTC)), None),
    ("最近两年", since(datetime(2021, 10, 22, 9, 55, tzinfo=UTC)), None),
    # -- explicit dates
    ("2023-05-08", day(2023, 5, 8), None),
    ("2023-05-08T10:00:00", day(2023, 5, 8), "2023-05-08"),
    ("2023/5/8", day(2023, 5, 8), None),
    ("2023-5-8", day(2023, 5, 8), None),
    ("5月8日", day(2023, 5, 8), None),
    ("5月8号", day(2023, 5, 8), None),
    ("2023年5月8日", day(2023, 5, 8), None),
    ("2022年十二月二十五日", day(2022, 12, 25), None),
    ("12月25日", day(2022, 12, 25), None),  # most recent one not in the future
    ("8 May 2023", day(2023, 5, 8), None),
    ("8th of May 2023", day(2023, 5, 8), None),
    ("May 8, 2023", day(2023, 5, 8), None),
    ("May 8th 2023", day(2023, 5, 8), None),
    ("May 8th", day(2023, 5, 8), None),
    ("May 8", day(2023, 5, 8), None),
    ("8 May", day(2023, 5, 8), None),
    ("Oct 22", day(2023, 10, 22), None),
    ("Oct 23", day(2022, 10, 23), None),
    ("Dec 25", day(2022, 12, 25), None),
    ("Feb 29", day(2020, 2, 29), None),
    ("on 1 March", day(2023, 3, 1), "1 March"),
    # -- since
    ("since May", since(datetime(2023, 5, 1, tzinfo=UTC)), None),
    ("since yesterday", since(datetime(2023, 10, 21, tzinfo=UTC)), None),
    ("since 2021", since(datetime(2021, 1, 1, tzinfo=UTC)), None),
    ("自从上个月", since(datetime(2023, 9, 1, tzinfo=UTC)), None),
    # -- future expressions are read (their windows start after now)
    ("tomorrow", day(2023, 10, 23), None),
    ("明天", day(2023, 10, 23), None),
    ("next week", week(2023, 10, 23), None),
    ("下周", week(2023, 10, 23), None),
    ("下个星期", week(2023, 10, 23), None),
    ("下个月", month(2023, 11), None),
    ("next month", month(2023, 11), None),
    ("next year", year(2024), None),
    ("明年", year(2024), None),
    # -- mixed text, leftmost wins, rejected candidates are skipped
    ("上周yesterday", week(2023, 10, 9), "上周"),
    ("我yesterday说的", day(2023, 10, 21), "yesterday"),
    ("what did we discuss 上周 about mnemo", week(2023, 10, 9), "上周"),
    ("yesterday or last week", day(2023, 10, 21), "yesterday"),
    ("last week or yesterday", week(2023, 10, 9), "last week"),
    ("I may go in May", month(2023, 5), "in May"),
    ("May I ask what happened yesterday?", day(2023, 10, 21), "yesterday"),
    ("we may revisit this in 2022", year(2022), "in 2022"),
    ("Python 3.11 upgrade last month", month(2023, 9), "last month"),
    ("PostgreSQL 15 升级是上个月做的", month(2023, 9), "上个月"),
    ("之前天气很好, 昨天下雨", day(2023, 10, 21), "昨天"),
    ("2023-02-30 or 2023-03", month(2023, 3), "2023-03"),
    (unicodedata.normalize("NFKC", "３天前"), day(2023, 10, 19), None),
    (unicodedata.normalize("NFKC", "２０２３年５月"), month(2023, 5), None),
    ("３天前", day(2023, 10, 19), None),  # raw full-width digits work too
    ("Python 3.11 " + "lorem ipsum " * 60 + "yesterday", day(2023, 10, 21), "yesterday"),
    ("x " * 200 + "the past eleven weeks", back(days=77), "the past eleven weeks"),
]


@pytest.mark.parametrize(("query", "span", "phrase"), CASES, ids=[c[0][:40] for c in CASES])
def test_expressions(query: str, span: Span, phrase: str | None) -> None:
    w = find_time_window(query, NOW)
    assert w is not None
    assert (w.start, w.end) == span
    assert w.phrase == (query if phrase is None else phrase)
    assert w.start.tzinfo is NOW.tzinfo and w.end.tzinfo is NOW.tzinfo


NEGATIVE = [
    "",
    "how do we deploy the service",
    "I may go",
    "this may work",
    "May I ask a question",
    "you may 2 times",
    "we may 2023",
    "3 days",
    "3天",
    "3 weeks of work",
    "15 years of experience",
    "in 15 minutes",
    "Python 3.11",
    "PostgreSQL 15",
    "upgrade to Python 3.11 and PostgreSQL 15",
    "2023 roadmap",
    "port 8080",
    "we served 2023 users",
    "在2023",
    "ticket #2023",
    "version 1.2023",
    "1969年",
    "in 1969",
    "in 2101",
    "2023年前",
    "2010年前后",
    "the 1990s",
    "in the 1990s",
    "5/8",
    "2023.5.8",
    "2023-02-30",
    "Feb 30",
    "May 35",
    "march on",
    "Jan said hi",
    "August Rush",
    "mayday",
    "monthly report",
    "daily standup",
    "yearly review",
    "a few days ago",
    "几天前",
    "in 3 days",
    "2 hours ago",
    "之前天气很好",
    "提前天数",
    "目前天气",
    "马上周末了",
    "看一下周报",
    "说明天数",
    "日本周边",
    "上周期的数据",
    "过去年代",
    "每月",
    "每年",
    "一年",
]


@pytest.mark.parametrize("query", NEGATIVE)
def test_non_matches(query: str) -> None:
    assert find_time_window(query, NOW) is None


CASES_CST: list[tuple[str, Span]] = [
    ("今天", day(2024, 3, 1, CST)),
    ("yesterday", day(2024, 2, 29, CST)),
    ("前天", day(2024, 2, 28, CST)),
    ("本周", week(2024, 2, 26, CST)),
    ("上周", week(2024, 2, 19, CST)),
    ("上个月", month(2024, 2, CST)),
    ("last month", month(2024, 2, CST)),
    ("3个月前", month(2023, 12, CST)),
    ("去年", year(2023, CST)),
    ("12月", month(2023, 12, CST)),
    ("三月", month(2024, 3, CST)),
    ("四月", month(2023, 4, CST)),
    ("Feb 29", day(2024, 2, 29, CST)),
    ("2月29日", day(2024, 2, 29, CST)),
    ("最近", (NOW8 - timedelta(days=14), NOW8)),
    ("past month", (datetime(2024, 2, 1, 0, 30, tzinfo=CST), NOW8)),
]


@pytest.mark.parametrize(("query", "span"), CASES_CST)
def test_arithmetic_happens_in_nows_timezone(query: str, span: Span) -> None:
    w = find_time_window(query, NOW8)
    assert w is not None
    assert (w.start, w.end) == span
    assert w.start.utcoffset() == timedelta(hours=8)


@pytest.mark.parametrize(
    ("query", "now", "span"),
    [
        # Monday 00:00 already belongs to the new week.
        ("this week", datetime(2023, 10, 23, tzinfo=UTC), week(2023, 10, 23)),
        ("上周", datetime(2023, 10, 23, tzinfo=UTC), week(2023, 10, 16)),
        # Year boundaries.
        ("上个月", datetime(2024, 1, 5, tzinfo=UTC), month(2023, 12)),
        ("last week", datetime(2024, 1, 5, tzinfo=UTC), week(2023, 12, 25)),
        ("本周", datetime(2024, 1, 5, tzinfo=UTC), week(2024, 1, 1)),
        ("二月", datetime(2024, 1, 5, tzinfo=UTC), month(2023, 2)),
        ("last January", datetime(2024, 1, 5, tzinfo=UTC), month(2023, 1)),
        ("3 months ago", datetime(2024, 1, 5, tzinfo=UTC), month(2023, 10)),
        # Rolling months clamp to the end of a shorter month.
        ("past month", datetime(2024, 3, 31, 12, tzinfo=UTC), (datetime(2024, 2, 29, 12, tzinfo=UTC),
                                                                 datetime(2024, 3, 31, 12, tzinfo=UTC))),
        ("过去一个月", datetime(2023, 3, 31, 12, tzinfo=UTC), (datetime(2023, 2, 28, 12, tzinfo=UTC),
                                                               datetime(2023, 3, 31, 12, tzinfo=UTC))),
    ],
)
def test_boundaries(query: str, now: datetime, span: Span) -> None:
    w = find_time_window(query, now)
    assert w is not None and (w.start, w.end) == span


def test_dst_transition_uses_wall_clock_midnights() -> None:
    zoneinfo = pytest.importorskip("zoneinfo")
    try:
        berlin = zoneinfo.ZoneInfo("Europe/Berlin")
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip("no tz database")
    now = datetime(2023, 10, 30, 12, tzinfo=berlin)  # the day after clocks went back
    w = find_time_window("yesterday", now)
    assert w is not None
    assert (w.start, w.end) == (datetime(2023, 10, 29, tzinfo=berlin), datetime(2023, 10, 30, tzinfo=berlin))
    assert w.end.timestamp() - w.start.timestamp() == 25 * 3600
    w = find_time_window("last week", now)
    assert w is not None
    assert w.start.utcoffset() == timedelta(hours=2) and w.end.utcoffset() == timedelta(hours=1)


def test_naive_now_is_rejected() -> None:
    with pytest.raises(ValueError):
        find_time_window("yesterday", datetime(2023, 10, 22))


def test_time_window_is_frozen() -> None:
    w = find_time_window("yesterday", NOW)
    assert isinstance(w, TimeWindow)
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.phrase = "x"  # type: ignore[misc]


_FUZZ_PIECES = [
    "上周", "上", "周", "期", "前", "天", "年", "月", "日", "号", "个", "近", "最", "过去", "今", "去", "明", "下",
    "一", "两", "十", "五", "3", "12", "2023", "1999", "15", "3.11", "-", "/", ".", ",", " ", "  ", "的",
    "may", "May", "in ", "since ", "during ", "the ", "last ", "this ", "next ", "past ", "ago", "days",
    "week", "month", "years", "yesterday", "today", "8th", "of ", "Sept", "Feb", "recently", "自从", "İ",
]


def test_fuzz_never_raises_and_keeps_invariants() -> None:
    rng = random.Random(20231022)
    for _ in range(3000):
        query = "".join(rng.choice(_FUZZ_PIECES) for _ in range(rng.randint(0, 12)))
        for now in (NOW, NOW8):
            w = find_time_window(query, now)
            if w is None:
                continue
            assert w.start < w.end or w.start == w.end == now
            assert w.start.tzinfo is now.tzinfo and w.end.tzinfo is now.tzinfo
            assert w.phrase and w.phrase in query


@pytest.mark.parametrize(
    "query",
    ["1 " * 5000, "一" * 10000, "may " * 3000, "last " * 3000, "2023-" * 2000, "上" * 10000, "1" * 10000],
)
def test_pathological_inputs_stay_fast(query: str) -> None:
    t = time.perf_counter()
    find_time_window(query, NOW)
    assert time.perf_counter() - t < 1.0
