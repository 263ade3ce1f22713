"""Recall's Chinese ⇄ English dictionary (``mnemo._recall.dictionary``): what it takes from
CC-CEDICT, what recall finds with it through the real model, and its cache on disk."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest

from mnemo import Mnemo
from mnemo._base import text as _text
from mnemo._recall import dictionary
from mnemo._stores.lookup import LookupTable

SAMPLE = """\
# a few CC-CEDICT lines, written the way the dictionary writes them
寶安 宝安 [Bao3 an1] /Bao'an district of Shenzhen City 深圳市[Shen1 zhen4 Shi4], Guangdong/
中央 中央 [zhong1 yang1] /central/middle/center/
中環 中环 [Zhong1 huan2] /Central, the business district of Hong Kong Island/
倉庫 仓库 [cang1 ku4] /depot/storehouse/warehouse/
貨倉 货仓 [huo4 cang1] /warehouse/
棧房 栈房 [zhan4 fang2] /warehouse/inn/
庫房 库房 [ku4 fang2] /storeroom/warehouse/
提單 提单 [ti2 dan1] /bill of lading/
核銷 核销 [he2 xiao1] /to write off (a debt)/to verify and cancel/CL:次[ci4]/
鳥 鸟 [niao3] /bird/
張三 张三 [Zhang1 San1] /John Doe/Zhang San, name for an unspecified person/
蘇菲 苏菲 [Su1 fei1] /Sophie (name)/
一 一 [yi1] /one/
"""


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module's process-wide table forgotten for the test, and put back after it."""
    monkeypatch.setattr(dictionary, "_table", None)
    monkeypatch.setattr(dictionary, "_absent", False)


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None) -> Path:
    """The table built from SAMPLE instead of the package's file."""
    source = tmp_path / "cedict.txt.gz"
    source.write_bytes(gzip.compress(SAMPLE.encode("utf-8")))
    monkeypatch.setattr(dictionary, "_table", LookupTable.build(dictionary._rows(source)))
    return source


def _translate(query: str) -> tuple[list[str], list[str]]:
    return dictionary.translate(_text.query_terms(query)[0])


def test_what_an_entry_gives(sample: Path) -> None:
    words, names = _translate("宝安 中央")
    assert "bao'an" in words and names == ["bao'an"]  # a proper noun's name; "central" is a word here (中环's is a name)
    assert {"central", "center"} <= set(words)
    as_indexed = lambda phrase: " ".join(_text.query_terms(phrase)[0])  # noqa: E731
    assert _translate("提单")[0] == [as_indexed("bill of lading")]
    assert _translate("核销")[0] == [as_indexed("write off"), as_indexed("verify and cancel")]  # "to ", "(a debt)", "CL:" left out
    words, names = _translate("the cold room at Bao'an")
    assert "宝安" in words and "宝安" in names  # and back


def test_chinese_people_are_left_to_the_name_rules_and_foreign_names_stay(sample: Path) -> None:
    """names.py spells a person as the store spells them; a dictionary's "Zhang San" would match
    any Zhang where full text matches a phrase by its words (PostgreSQL)."""
    assert _translate("张三") == ([], [])
    words, names = _translate("苏菲")
    assert "sophi" in words and "sophi" in names
    assert "苏菲" in _translate("Sophie")[1]


def test_an_english_word_of_many_headwords_is_not_turned_back(sample: Path) -> None:
    as_indexed = lambda phrase: " ".join(_text.query_terms(phrase)[0])  # noqa: E731
    assert _translate("warehouse")[0] == []  # 仓库, 货仓, 栈房, 库房: four, too many to choose
    assert _translate("栈房")[0] == [as_indexed("warehouse"), as_indexed("inn")]  # the Chinese side still reads "warehouse"
    assert _translate("鸟")[0] == []  # one character: too ambiguous to translate


def test_the_package_file_parses_and_a_compound_is_read_by_its_parts(fresh: None) -> None:
    words, names = _translate("鼓浪屿夏令营")
    assert "gulangyu" in words and "gulangyu" in names
    assert "鼓浪屿" in _translate("Gulangyu summer camp")[0]
    words, names = _translate("苏州工业园区的仓库")  # one word to the segmenter, no entry: its parts
    assert "suzhou" in names and "park" in words


def test_the_table_is_built_once_into_the_cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    monkeypatch.setenv("MNEMO_CACHE_DIR", str(tmp_path / "cache"))
    built = []
    rows = dictionary._rows
    monkeypatch.setattr(dictionary, "_rows", lambda source: (built.append(1), rows(source))[1])
    assert "gulangyu" in _translate("鼓浪屿")[0]
    files = list((tmp_path / "cache").glob("dictionary-*.sqlite"))
    assert len(files) == 1 and not list((tmp_path / "cache").glob("*.tmp"))
    monkeypatch.setattr(dictionary, "_table", None)  # another process
    assert "gulangyu" in _translate("鼓浪屿")[0]
    assert built == [1]


def test_an_unwritable_or_damaged_cache_is_worked_around(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("MNEMO_CACHE_DIR", str(blocker / "cache"))  # cannot be created
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    assert "gulangyu" in _translate("鼓浪屿")[0]
    assert list((tmp_path / "tmp").glob("mnemo-cache-*/dictionary-*.sqlite"))  # the next process finds it there
    monkeypatch.setattr(dictionary, "_table", None)
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "tmp"))  # neither can be written: built in memory
    assert "gulangyu" in _translate("鼓浪屿")[0]
    monkeypatch.setattr(dictionary, "_table", None)
    cache = tmp_path / "cache"
    monkeypatch.setenv("MNEMO_CACHE_DIR", str(cache))
    _translate("鼓浪屿")
    [table] = cache.glob("dictionary-*.sqlite")
    table.write_bytes(b"\x00garbage" * 100)
    monkeypatch.setattr(dictionary, "_table", None)
    assert "gulangyu" in _translate("鼓浪屿")[0]


def test_without_the_package_recall_keeps_to_the_glossary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    monkeypatch.setattr(dictionary, "_PACKAGE", "no_such_dictionary_package")
    assert _translate("鼓浪屿") == ([], [])
    with Mnemo(tmp_path / "s.db", model="e5") as m:
        m.remember("Summer camp on Gulangyu: no mobile signal on the north beach.")
        assert m.recall("Gulangyu summer camp", top_k=3)  # the glossary-free search still works


# ---------------------------------------------------------------- through the real model

NOTES = [
    "The cold room at the Bao'an central kitchen holds two tonnes; frozen dumplings go on the left racks.",
    "Gulangyu summer camp: there is no mobile signal on the north beach, bring walkie-talkies.",
    "The Suzhou Industrial Park warehouse only stores packaging materials, never finished goods.",
    "Ship every bill of lading scan to Lin Hao before the vessel sails.",
    "The Futian office coffee machine is serviced every Thursday.",
    "Our Nanshan data room has two UPS units and a diesel generator.",
    "The Lisbon trip is planned for May; book the train to Porto early.",
    "Weekly sales review is on Monday at 10am with the regional leads.",
]
QUESTIONS = {
    "宝安中央厨房的冷库能放多少？": 0,
    "鼓浪屿夏令营那边手机信号怎么样？": 1,
    "苏州工业园区的仓库放什么？": 2,
    "提单扫描件要发给谁？": 3,
}


def test_questions_in_chinese_find_english_notes_about_places_and_terms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Mnemo(tmp_path / "s.db", model="e5") as m:
        ids = [m.remember(note).id for note in NOTES]
        found = {q: [h.memory.id for h in m.recall(q, top_k=3, touch=False)] for q in QUESTIONS}
        assert all(ids[i] in found[q] for q, i in QUESTIONS.items()), found
        monkeypatch.setattr(dictionary, "_absent", True)
        monkeypatch.setattr(dictionary, "_table", None)
        without = {q: [h.memory.id for h in m.recall(q, top_k=3, touch=False)] for q in QUESTIONS}
        assert sum(ids[i] in without[q] for q, i in QUESTIONS.items()) < len(QUESTIONS), without  # the dictionary found them


def test_the_tables_fingerprint_segments_no_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table's name carries a fingerprint of the index's normalisation, computed in every
    process; on Chinese text it loaded jieba's dictionary (~160 ms of a cold English search)."""
    split = _text._split
    seen: list[str] = []
    monkeypatch.setattr(_text, "_split", lambda text, **kw: (seen.append(text), split(text, **kw))[1])
    fingerprint = dictionary._tokens_id()
    assert seen and not any(_text.has_han(t) for t in seen)
    assert fingerprint == dictionary._tokens_id()
