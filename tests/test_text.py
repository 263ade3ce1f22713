"""Tokenisation and the full-text channel, in Chinese and English (fake embedder: words only)."""

from __future__ import annotations

import pytest

from mnemo import Mnemo
from mnemo._base import text as _text


def test_technical_terms_stay_whole() -> None:
    words = _text.segment("项目使用FastAPI和PostgreSQL，我们用Redis Stream做消息队列")
    assert "fastapi" in words and "postgresql" in words and "redis stream" in words
    assert "消息" in words and "队列" in words


def test_nfkc_and_traditional_to_simplified() -> None:
    assert _text.normalize("ＦａｓｔＡＰＩ　１２３") == "fastapi 123"
    assert _text.normalize("資料庫遷移與後端開發") == "资料库迁移与后端开发"
    assert _text.content_hash("Hello   World") == _text.content_hash("hello world")
    assert _text.content_hash("後端") == _text.content_hash("后端")


def test_english_stemming_matches_word_forms() -> None:
    assert _text.query_terms("deployment")[0] == _text.query_terms("deploying")[0] == ["deploy"]
    assert "deploy" in _text.index_tokens("We deploy on Fridays").split()


def test_stop_words_are_dropped_but_meaningful_single_characters_stay() -> None:
    terms, _ = _text.query_terms("what is the name of my cat")
    assert terms == ["name", "cat"]
    terms, _ = _text.query_terms("我养的猫是什么品种")
    assert "猫" in terms and "的" not in terms


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "a AND OR NOT b", "NEAR(a b)", "col:value", "x*", "^start", "(((", "- + *", "'; DROP TABLE memories; --"],
)
def test_fts_syntax_in_queries_is_harmless(m: Mnemo, query: str) -> None:
    m.remember("a note about tables and values")
    m.recall(query, mode="fts")  # must not raise
    assert m.stats()["total"] == 1


@pytest.mark.parametrize(
    ("memory", "query"),
    [
        ("我喜欢猫，不喜欢狗", "猫"),  # one-character word
        ("周末去爬山", "爬山"),  # two-character word a trigram index would miss
        ("後端服務使用 Go 語言", "后端服务"),  # traditional memory, simplified query
        ("后端服务使用 Go 语言", "後端服務"),  # and the other way round
        ("ＡＰＩ　ｇａｔｅｗａｙ ｔｉｍｅｏｕｔ", "api gateway"),  # full-width memory
        ("消息队列用 Redis Stream", "Redis Stream"),
        ("We are deploying the new release tonight", "deployment"),
    ],
)
def test_full_text_channel_finds_words(m: Mnemo, memory: str, query: str) -> None:
    m.remember(memory)
    m.remember("完全无关的一条记录 about gardening")
    hits = m.recall(query, mode="fts", min_score=0.0)
    assert hits and hits[0].memory.content == memory


def test_relative_time_in_query_boosts_memories_from_that_period(m: Mnemo) -> None:
    old = m.remember("我们讨论了缓存方案", created_at="2023-09-01T10:00:00+00:00")
    last_week = m.remember("我们讨论了缓存方案的细节", created_at="2023-10-11T10:00:00+00:00")  # Oct 22 2023 is a Sunday
    now = "2023-10-22T09:55:00+00:00"
    plain = m.recall("缓存方案", now=now, explain=True, touch=False)
    boosted = m.recall("上周讨论的缓存方案", now=now, explain=True, touch=False)
    factor = {h.memory.id: h.explain["time_factor"] for h in boosted}
    assert factor[last_week.id] > 1.0 and factor[old.id] == 1.0
    assert boosted[0].memory.id == last_week.id
    assert {h.memory.id for h in plain} == {old.id, last_week.id}
    english = m.recall("what did we discuss last week about caching", now=now, explain=True, touch=False)
    assert all(h.explain["time_factor"] == 1.0 for h in english if h.memory.id == old.id)
