"""Names across scripts: 张伟 ⇄ Zhang Wei, 王志远 ⇄ Wang Zhiyuan, 杭州 ⇄ Hangzhou, grown from the store."""

from __future__ import annotations

import pytest

from fake_embedder import FakeEmbedder
from mnemo import Mnemo
from mnemo._base import pinyin
from mnemo._recall.names import cross_script

NOTES = [
    ("Zhang Wei reviews every pull request that touches the checkout flow.", "workflow"),
    ("王志远在做 iOS 的推送通知，下周要换成新的推送证书。", "fact"),  # jieba cuts the name: 王 | 志远
    ("李娜是商户后台的产品负责人，每周一开需求评审会。", "entity"),
    ("预发布集群放在阿里云的杭州地域。", "project_context"),
    ("Chen Yuting manages the player community on Discord.", "fact"),
    ("我们的测试服务器放在成都机房。", "project_context"),
    # look-alikes: the same topics, other people and places
    ("Code review of the payment service is done by the backend team on Fridays.", "workflow"),
    ("推送服务的证书每年续一次，负责人是运维组。", "fact"),
    ("The product owner of the analytics dashboard is Maria.", "entity"),
    ("Production runs in the Frankfurt region.", "project_context"),
]


def test_readings_of_names_and_places() -> None:
    assert pinyin.romanizations("张伟") == ["zhang wei"]
    assert pinyin.romanizations("曾国强")[0] == "zeng guo qiang"  # a surname's own reading first
    assert pinyin.romanizations("吕布")[0] == "lu bu"  # ü as names write it
    assert pinyin.romanizations("杭州")[0] == "hang zhou"
    assert pinyin.romanizations("x张") == []
    assert pinyin.syllables("hangzhou") == ["hang", "zhou"] and pinyin.syllables("xian") == ["xian"]
    assert pinyin.syllables("expect") is None and pinyin.syllables("What") is None
    assert "李娜" in pinyin.han_spellings(["li", "na"]) and "杭州" in pinyin.han_spellings(["hang", "zhou"])
    assert pinyin.han_spellings(["zhi", "yuan"], limit=150) == []  # 860 spellings: too ambiguous
    assert "志远" in pinyin.han_spellings(["zhi", "yuan"], limit=150, given_name=True)  # given-name characters
    assert set(pinyin.surnames_read("li")) >= {"李", "黎"} and "里" not in pinyin.surnames_read("li")
    assert len(pinyin._table()) == 6763  # every GB2312 character has its readings
    assert all("\u4e00" <= ch <= "\u9fff" for ch in pinyin._table())  # is_han's shortcut rests on it
    assert pinyin.is_han("杭州") and not pinyin.is_han("杭州x") and not pinyin.is_han("") and not pinyin.is_han("ｈａ")


def test_only_the_spellings_the_store_holds_are_searched() -> None:
    held = {"zhang": 3, "wei": 5, "李娜": 1, "杭州": 2, "王": 4, "志远": 1}
    df = lambda terms: {t: held.get(t, 0) for t in terms}  # noqa: E731
    terms, phrases = cross_script("张伟主要负责审哪块代码？", df)
    assert terms == [] and "zhang wei" in phrases and "wei zhang" in phrases  # either order, as people write it
    assert cross_script("What does Li Na do before the weekly sync?", df) == (["李娜"], [])
    assert cross_script("Which servers are in Hangzhou?", df) == (["杭州"], [])
    assert cross_script("What is Wang Zhiyuan working on?", df) == ([], ["王 志远"])  # the name as jieba cuts it
    assert cross_script("Ask Zhiyuan Wang about it", df) == ([], ["王 志远"])  # given name first
    assert cross_script("张三负责什么？", df) == ([], [])  # a name the store never mentions adds nothing
    assert cross_script("What does the weekly sync cover?", df) == ([], [])
    assert cross_script("数据库端口是多少", df) == ([], [])


#: (question, the start of the memory that answers it), each across scripts; the real model's
#: test takes all but the last
ACROSS = [
    ("张伟负责审哪些代码？", "Zhang Wei reviews"),
    ("陈雨婷管理哪个社区？", "Chen Yuting manages"),
    ("What is Wang Zhiyuan working on?", "王志远在做"),
    ("What does Li Na do?", "李娜是商户后台"),
    ("What runs in Hangzhou?", "预发布集群放在阿里云的杭州"),
    ("Where are the test servers, Chengdu?", "我们的测试服务器放在成都"),
]


@pytest.mark.parametrize("mode", ["fts", "hybrid"])
@pytest.mark.parametrize("query, expected", ACROSS)
def test_a_name_in_one_script_finds_the_memory_that_writes_it_in_the_other(m: Mnemo, mode: str, query: str, expected: str) -> None:
    """On both backends, words alone (fts) and fused with the fake model's vectors, which rank
    the rest at random: the memory is among the first three (the real model's test below wants it first)."""
    m.remember_many([{"content": c, "type": t} for c, t in NOTES])
    hits = m.recall(query, mode=mode, top_k=3, touch=False)
    assert any(h.memory.content.startswith(expected) for h in hits), [(h.memory.content[:30], round(h.score, 3)) for h in hits]


def test_a_name_match_is_explained_and_a_name_not_stored_matches_nothing(m: Mnemo) -> None:
    m.remember_many([{"content": c, "type": t} for c, t in NOTES])
    hit = m.recall("张伟负责审哪些代码？", top_k=1, touch=False, explain=True)[0]
    assert hit.memory.content.startswith("Zhang Wei") and hit.explain["relevance"] == pytest.approx(hit.explain["lexical_relevance"], abs=1e-3)
    assert not [h for h in m.recall("张三负责审哪些代码？", mode="fts", top_k=5, touch=False) if "Zhang Wei" in h.memory.content]


@pytest.mark.model
@pytest.mark.parametrize("query, expected", ACROSS[:-1])
def test_names_across_scripts_with_the_real_model(tmp_path, query: str, expected: str) -> None:
    with Mnemo(tmp_path / "s.db", model="e5") as m:
        m.remember_many([{"content": c, "type": t} for c, t in NOTES])
        hits = m.recall(query, top_k=3, touch=False)
        assert hits and hits[0].memory.content.startswith(expected), [(h.memory.content[:30], round(h.score, 3)) for h in hits]


def test_the_fake_model_is_not_what_finds_them(tmp_path) -> None:
    """Without the name forms the fake model's vectors alone do not find the memory (the test
    above would otherwise pass for the wrong reason)."""
    with Mnemo(tmp_path / "s.db", embedder=FakeEmbedder()) as m:
        m.remember_many([{"content": c, "type": t} for c, t in NOTES])
        hits = m.recall("张伟负责审哪些代码？", mode="vector", top_k=3, touch=False)
        assert not hits or not hits[0].memory.content.startswith("Zhang Wei")


def test_the_chinese_names_of_a_query_as_jieba_cuts_them() -> None:
    from mnemo._recall.names import _han_names

    assert _han_names("张伟负责什么") == [("张伟", True)]
    assert _han_names("王志远在做什么") == [("王志远", True)]  # jieba: 王 | 志远
    assert _han_names("李想答应给我的是哪份数据？") == [("李想", True)]  # jieba: a verb, "to think"
    assert ("刘洋", True) in _han_names("这学期和刘洋一起写的文章") and ("和刘洋", True) not in _han_names("这学期和刘洋一起写的文章")
    assert _han_names("我们部署在杭州") == [("杭州", False)]
    assert _han_names("我们数据库的端口是多少") == []


PAIRED = [
    "我们的安卓包接了友盟（Umeng）做崩溃统计。",
    "The Umeng dashboard shows the crash-free rate for each release.",
    "Neusoft (东软) supplies the HIS at the city hospital.",
    "东软的接口文档在共享盘里。",
    "Crash reports of the web app go to Sentry.",
    "接口文档的模板在 Confluence 上。",
]


@pytest.mark.parametrize("query, expected", [
    ("友盟的面板上能看到什么？", "The Umeng dashboard"),
    ("Where are the Neusoft interface docs?", "东软的接口文档"),
])
def test_a_name_the_store_wrote_beside_its_other_form_is_found_in_either(m: Mnemo, query: str, expected: str) -> None:
    """No glossary knows 友盟 or 东软; one note that writes both forms teaches the store."""
    m.remember_many([{"content": c} for c in PAIRED])
    hits = m.recall(query, top_k=3, touch=False)
    assert any(h.memory.content.startswith(expected) for h in hits), [h.memory.content[:30] for h in hits]
    m.forget(next(h.memory.id for h in m.recall(query, top_k=5, touch=False) if "（" in h.memory.content or "(" in h.memory.content))
    # with the note that paired them gone, nothing teaches it any more
    from mnemo._base import text
    from mnemo._recall.names import paired_forms
    from mnemo._stores.base import Filters

    assert paired_forms(query, text.query_terms(query)[0], lambda w: m._texts_naming(w, Filters(statuses=("active",))),
                        m.store.doc_freqs) == ([], [])


def test_a_phrase_counts_as_a_name_only_with_its_words_in_a_row(m: Mnemo) -> None:
    """PostgreSQL matches a phrase by any of its words; the name boost wants them together."""
    from mnemo._stores.base import Filters

    m.remember_many([{"content": "Li Na reviews the schema changes."}, {"content": "Li wrote the report and Na reviewed it."},
                     {"content": "Zhang Wei owns the deploy scripts."}])
    named = m._naming(["zhangwei", "wei"], ["li na"], Filters(statuses=("active",)), 10)
    contents = {mem.content for mem in m.store.get_many_by_pk(list(named)).values()}
    assert contents == {"Li Na reviews the schema changes.", "Zhang Wei owns the deploy scripts."}


def test_the_glossary_names_products_and_places_but_not_words() -> None:
    from mnemo._base import text

    assert text.name_translations(["支付宝"]) == ["alipay"] and text.name_translations(["melbourn"]) == ["墨尔本"]
    assert "阿里云" in text.name_translations(["alibaba", "cloud"])  # two words, one name
    assert "us" not in text.name_translations(["美国"]) and "usa" in text.name_translations(["美国"])  # "us" is a word too
    assert text.name_translations(["部署"]) == [] and text.translations(["部署"])  # a term, not a name


def test_the_glossary_is_written_in_simplified_chinese() -> None:
    """The glossary is loaded without the traditional → simplified converter (its dictionary
    costs a cold English search ~5 ms): a traditional form added to the file would never match."""
    import unicodedata

    from mnemo._base import text

    folded = unicodedata.normalize("NFKC", (text.DATA / "glossary.tsv").read_text("utf-8")).casefold()
    assert [line for line in folded.splitlines() if text.normalize(line) != line] == []
    assert text.normalize("支付寶") == "支付宝"  # the check above can fail: the converter does change traditional forms


STUDIO = [
    "健身房的会员费走支付宝收款，钱隔天才到账。",
    "The fitness studio's members book classes in the app.",
    "The fitness studio wants a monthly revenue report by email.",
    "Payments of the fitness studio are reconciled every Monday.",
    "健身房的教练排班表放在共享文档里。",
]
STUDIO_Q = "Why does the fitness studio's Alipay money arrive a day late?"


def test_a_product_named_in_the_other_language_counts_like_a_name(m: Mnemo) -> None:
    """Many notes about one client share its words; the one that names the product asked about,
    in the other language, takes its word match whole, as a person's name does."""
    m.remember_many([{"content": c} for c in STUDIO])
    hits = m.recall(STUDIO_Q, top_k=3, touch=False, explain=True)
    found = [h for h in hits if h.memory.content.startswith("健身房的会员费走支付宝")]
    assert found and found[0].explain["relevance"] >= found[0].explain["lexical_relevance"] - 1e-3, [h.memory.content[:30] for h in hits]


@pytest.mark.model
def test_a_product_named_in_the_other_language_comes_first_with_the_real_model(tmp_path) -> None:
    with Mnemo(tmp_path / "s.db", model="e5") as m:
        m.remember_many([{"content": c} for c in STUDIO])
        hits = m.recall(STUDIO_Q, top_k=3, touch=False)
        assert hits and hits[0].memory.content.startswith("健身房的会员费走支付宝"), [h.memory.content[:30] for h in hits]


def test_a_name_saved_after_a_question_is_found_by_the_next_one(m: Mnemo) -> None:
    """Spellings the store lacked are remembered as absent only until the store changes."""
    m.remember("The release checklist lives in the wiki.")
    assert not [h for h in m.recall("张伟负责什么？", mode="fts", top_k=5, touch=False) if "Zhang" in h.memory.content]
    m.remember("Zhang Wei owns the deploy scripts.")
    assert any("Zhang Wei" in h.memory.content for h in m.recall("张伟负责什么？", mode="fts", top_k=5, touch=False))
