"""Tests for bench/_data.py: dataset loaders and retrieval metrics."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import _data as bd  # noqa: E402

UTC = timezone.utc


# --------------------------------------------------------------------------- LoCoMo


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("10:37 am on 27 June, 2023", datetime(2023, 6, 27, 10, 37, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 January, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
        ("  9:05 PM on 3 Dec 2022 ", datetime(2022, 12, 3, 21, 5, tzinfo=UTC)),
    ],
)
def test_parse_locomo_datetime(text: str, expected: datetime) -> None:
    got = bd.parse_locomo_datetime(text)
    assert got == expected
    assert got.utcoffset() is not None and got.utcoffset().total_seconds() == 0


@pytest.mark.parametrize("text", ["", "8 May 2023", "13:56 pm on 8 May, 2023", "1:56 pm on 8 Maybe, 2023x"])
def test_parse_locomo_datetime_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        bd.parse_locomo_datetime(text)


def test_parse_evidence_handles_malformed_and_duplicates() -> None:
    assert bd.parse_evidence(["D8:6; D9:17", "D8:6", "D10:2", "D 3 : 4"]) == ["D8:6", "D9:17", "D10:2", "D3:4"]
    assert bd.parse_evidence([]) == []
    assert bd.parse_evidence(["none"]) == []


def _locomo_fixture(path: Path) -> Path:
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a cat"},
        ],
        "session_2_date_time": "10:37 am on 27 June, 2023",
        "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "I ran a marathon."}],
        # a dangling date-time with no session (as in conv-26): must not become "now"
        "session_3_date_time": "12:19 am on 4 January, 2024",
    }
    qa = [
        {"question": "Who has a cat?", "answer": "Ann", "evidence": ["D1:1"], "category": 4},
        {"question": "When marathon?", "answer": "June", "evidence": ["D2:1; D1:2", "D2:1"], "category": 2},
        {"question": "Both?", "answer": "x", "evidence": ["D1:1", "D2:1"], "category": 1},
        {"question": "Guess?", "answer": "y", "evidence": ["D1:2"], "category": 3},
        {"question": "Adversarial?", "adversarial_answer": "z", "evidence": ["D1:1"], "category": 5},
        {"question": "No evidence?", "answer": "q", "evidence": [], "category": 3},
        {"question": "Missing turn?", "answer": "q", "evidence": ["D1:1", "D9:99"], "category": 4},
    ]
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conv, "qa": qa}]), encoding="utf-8")
    return path


def test_load_locomo(tmp_path: Path) -> None:
    [spec] = bd.load_locomo(_locomo_fixture(tmp_path / "locomo.json"))
    assert spec.name == "conv-x"
    assert [r.id for r in spec.records] == ["D1:1", "D1:2", "D2:1"]
    assert spec.records[0].content == "Ann: I adopted a cat."
    assert spec.records[1].content == "Bob: Nice!"
    assert spec.records[0].created_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert spec.records[2].created_at == datetime(2023, 6, 27, 10, 37, tzinfo=UTC)

    assert [q.query for q in spec.queries] == ["Who has a cat?", "When marathon?", "Both?", "Guess?"]
    assert [q.category for q in spec.queries] == ["single-hop", "temporal", "multi-hop", "open-domain"]
    assert spec.queries[1].gold == ["D2:1", "D1:2"]  # malformed string split, deduplicated, order kept
    assert len({q.qid for q in spec.queries}) == 4
    newest = datetime(2023, 6, 27, 10, 37, tzinfo=UTC)
    assert all(q.now == newest for q in spec.queries)

    assert spec.skip_reasons == {"adversarial": 1, "no-gold": 1, "gold-not-in-store": 1}
    assert spec.skipped == 3
    assert bd.skip_summary([spec, spec]) == {"adversarial": 2, "no-gold": 2, "gold-not-in-store": 2}


# --------------------------------------------------------------------------- MADial


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _madial_fixture(root: Path) -> Path:
    zh_mem = [
        {"1": {"time": "2023-12-25", "event": "Bart在圣诞节晚会上跳舞。", "user-id": 1, "id": "1"}},
        {"2": {"time": "2024-03-07", "event": "Bart赢得了绘画比赛。", "user-id": 1, "id": "2"}},
        {"7": {"time": "2022-05-01", "event": "Lisa去了动物园。", "user-id": 2, "id": "7"}},
        {"9": {"time": "2021-01-01", "event": "Lisa only in zh.", "user-id": 2, "id": "9"}},
    ]
    en_mem = [  # no user-id: it comes from the zh file
        {"1": {"time": "2023-12-25", "event": "Bart danced at the Christmas party."}},
        {"2": {"time": "2024-03-07", "event": "Bart won the painting competition."}},
        {"7": {"time": "2022-05-01", "event": "Lisa went to the zoo."}},
    ]
    zh_dia = [
        {"dialogue": ["<BOD>\n", '<Bart>:"我要表演魔术！"\n', '<Assistant>:"太棒了！"\n',
                      '<Bart>:"我有点紧张。"\n', '<Assistant>:"记得圣诞节跳舞吗？"\n', '<Bart>:"记得！"\n',
                      '<Assistant>:"换个说法：记得跳舞吗？"\n', "<EOD>\n"],
         "test-turn": [4, 6], "relevant-id": [1, 2, 1], "user-id": 1, "id": 0},
        {"dialogue": ["<BOD>\n", ' <Lisa>:"地铁好挤。"\n', '<Assistant>:"上次动物园也很挤。"\n', "<EOD>\n"],
         "test-turn": 2, "relevant-id": [7], "user-id": 2, "id": 2},
        {"dialogue": ["<BOD>\n", '<Lisa>:"嗨"\n', '<Assistant>:"嗨"\n', "<EOD>\n"],
         "test-turn": [2], "relevant-id": [], "user-id": 2, "id": 4},
    ]
    en_dia = [
        {"dialogue": ["<BOD>\n", '<Bart>: "I will do a magic trick!"\n', '"That\'s fantastic!"\n',
                      '<Bart>: "I am nervous."\n', "<Remember dancing at Christmas?>\n", "<EOD>\n"],
         "test-turn": [4], "relevant-id": [1, 2], "user-id": 1},
        {"dialogue": ["<BOD>\n", '<Lisa>: "The subway is crowded."\n', '<Assistant>: "Like the zoo."\n',
                      "<EOD>\n"],
         "test-turn": 2, "relevant-id": [7, 8], "user-id": 2},
    ]
    _write_jsonl(root / "zh" / "MADial-Bench-zh-memory.json", zh_mem)
    _write_jsonl(root / "en" / "MADial-Bench-en-memory.json", en_mem)
    _write_jsonl(root / "zh" / "MADial-Bench-zh-dialogue.json", zh_dia)
    _write_jsonl(root / "en" / "MADial-Bench-en-dialogue.json", en_dia)
    return root


def test_load_madial_zh(tmp_path: Path) -> None:
    specs = bd.load_madial(_madial_fixture(tmp_path / "madial"), "zh")
    assert [s.name for s in specs] == ["madial-zh-user1", "madial-zh-user2"]
    user1, user2 = specs
    assert [r.id for r in user1.records] == ["1", "2"]
    assert user1.records[0].content == "Bart在圣诞节晚会上跳舞。"
    assert user1.records[0].created_at == datetime(2023, 12, 25, tzinfo=UTC)

    [q1] = user1.queries  # list test-turn [4, 6] -> dialogue[1:4]
    assert q1.query == "Bart: 我要表演魔术！\nAssistant: 太棒了！\nBart: 我有点紧张。"
    assert q1.gold == ["1", "2"]
    assert q1.category == "all"
    assert q1.now == datetime(2024, 3, 7, tzinfo=UTC)
    assert q1.qid == "madial-zh:0"

    [q2] = user2.queries  # int test-turn 2 -> dialogue[1:2], leading space before the tag
    assert q2.query == "Lisa: 地铁好挤。"
    assert q2.gold == ["7"]
    assert q2.now == datetime(2022, 5, 1, tzinfo=UTC)
    assert user2.skip_reasons == {"no-gold": 1}
    assert bd.skip_summary(specs) == {"no-gold": 1}


def test_load_madial_en_joins_user_id_from_zh(tmp_path: Path) -> None:
    specs = bd.load_madial(_madial_fixture(tmp_path / "madial"), "en")
    user1, user2 = specs
    assert [r.id for r in user1.records] == ["1", "2"]
    assert [r.id for r in user2.records] == ["7"]  # "9" exists only in zh
    assert user1.records[1].content == "Bart won the painting competition."
    [q1] = user1.queries  # untagged turn 2 is the assistant's by alternation
    assert q1.query == "Bart: I will do a magic trick!\nAssistant: That's fantastic!\nBart: I am nervous."
    assert user2.queries == []
    assert user2.skip_reasons == {"gold-not-in-store": 1}  # memory 8 does not exist


def test_madial_en_memory_without_owner_is_an_error(tmp_path: Path) -> None:
    root = _madial_fixture(tmp_path / "madial")
    _write_jsonl(root / "en" / "MADial-Bench-en-memory.json", [{"5": {"time": "2023-01-01", "event": "orphan"}}])
    with pytest.raises(ValueError, match="user-id"):
        bd.load_madial(root, "en")
    with pytest.raises(ValueError):
        bd.load_madial(root, "fr")


def test_render_madial_turn_variants() -> None:
    assert bd.render_madial_turn('<Bart>:"嗨"\n', 1, "Bart") == "Bart: 嗨"
    assert bd.render_madial_turn('<Assistant>: "Hi there"\n', 2, "Bart") == "Assistant: Hi there"
    assert bd.render_madial_turn('"Wow, nice!"\n', 4, "Lisa") == "Assistant: Wow, nice!"
    assert bd.render_madial_turn("<Pizza is great!>\n", 6, "Lisa") == "Assistant: Pizza is great!"
    assert bd.render_madial_turn('"I like it"', 3, "Lisa") == "Lisa: I like it"
    # unbalanced quote, and inner quotes kept
    assert bd.render_madial_turn('<Bart>:喜欢，很美。"\n', 1, "Bart") == "Bart: 喜欢，很美。"
    assert bd.render_madial_turn('<Lisa>: "电影"Minions"首映"\n', 1, "Lisa") == 'Lisa: 电影"Minions"首映'


def test_madial_query_text_int_and_list() -> None:
    dialogue = ["<BOD>\n", '<A>:"1"\n', '<Assistant>:"2"\n', '<A>:"3"\n', '<Assistant>:"4"\n', "<EOD>\n"]
    assert bd.madial_query_text(dialogue, 4, "A") == "A: 1\nAssistant: 2\nA: 3"
    assert bd.madial_query_text(dialogue, [4, 2], "A") == "A: 1"


# --------------------------------------------------------------------------- metrics


def test_score_ranking_hand_computed() -> None:
    ranked = list("abcdefghijkl")
    assert bd.score_ranking(ranked, ["c", "k", "z"]) == pytest.approx({"r@5": 1 / 3, "r@10": 1 / 3, "mrr@10": 1 / 3})
    assert bd.score_ranking(ranked, ["a", "g"]) == pytest.approx({"r@5": 0.5, "r@10": 1.0, "mrr@10": 1.0})
    assert bd.score_ranking(ranked, ["j"]) == pytest.approx({"r@5": 0.0, "r@10": 1.0, "mrr@10": 0.1})
    assert bd.score_ranking(ranked, ["k"]) == {"r@5": 0.0, "r@10": 0.0, "mrr@10": 0.0}
    assert bd.score_ranking([], ["x"]) == {"r@5": 0.0, "r@10": 0.0, "mrr@10": 0.0}
    assert bd.score_ranking(["b", "b", "a"], ["a", "a"]) == pytest.approx({"r@5": 1.0, "r@10": 1.0, "mrr@10": 1 / 3})
    with pytest.raises(ValueError):
        bd.score_ranking(ranked, [])


def test_aggregate() -> None:
    rows = [
        ("temporal", {"r@5": 1.0, "r@10": 1.0, "mrr@10": 1.0}),
        ("temporal", {"r@5": 0.0, "r@10": 0.5, "mrr@10": 0.25}),
        ("single-hop", {"r@5": 0.5, "r@10": 1.0, "mrr@10": 0.5}),
    ]
    out = bd.aggregate(rows)
    assert set(out) == {"temporal", "single-hop", "overall"}
    assert out["temporal"] == pytest.approx({"r@5": 0.5, "r@10": 0.75, "mrr@10": 0.625, "n": 2})
    assert out["single-hop"] == pytest.approx({"r@5": 0.5, "r@10": 1.0, "mrr@10": 0.5, "n": 1})
    assert out["overall"] == pytest.approx({"r@5": 0.5, "r@10": 2.5 / 3, "mrr@10": 1.75 / 3, "n": 3})
    assert bd.aggregate([]) == {"overall": {"n": 0}}


def test_default_bench_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MNEMO_BENCH_DATA", raising=False)
    assert bd.default_bench_root() == (REPO / ".." / "shared" / "bench").resolve()
    monkeypatch.setenv("MNEMO_BENCH_DATA", str(tmp_path))
    assert bd.default_bench_root() == tmp_path.resolve()


# --------------------------------------------------------------------------- real data

_REAL = bd.default_bench_root()


@pytest.mark.skipif(
    not (_REAL / "locomo" / "locomo-dev.json").is_file() or not (_REAL / "madial" / "zh").is_dir(),
    reason="shared benchmark data not available",
)
def test_real_data_counts() -> None:
    locomo = bd.load_locomo(_REAL / "locomo" / "locomo-dev.json")
    cats: dict[str, int] = {}
    for spec in locomo:
        for q in spec.queries:
            cats[q.category] = cats.get(q.category, 0) + 1
    n_rec = sum(len(s.records) for s in locomo)
    n_q = sum(len(s.queries) for s in locomo)
    print(f"\nLoCoMo: stores={len(locomo)} records={n_rec} queries={n_q} per-category={cats} "
          f"skipped={bd.skip_summary(locomo)}")
    assert len(locomo) == 3
    assert 1000 <= n_rec <= 2000 and 300 <= n_q <= 450
    assert set(cats) == {"multi-hop", "temporal", "open-domain", "single-hop"}
    for spec in locomo:
        ids = {r.id for r in spec.records}
        assert len(ids) == len(spec.records)
        assert all(set(q.gold) <= ids and q.now.tzinfo is not None for q in spec.queries)

    for lang in ("zh", "en"):
        specs = bd.load_madial(_REAL / "madial", lang)
        n_rec = sum(len(s.records) for s in specs)
        n_q = sum(len(s.queries) for s in specs)
        print(f"MADial {lang}: stores={len(specs)} records={n_rec} queries={n_q} "
              f"skipped={bd.skip_summary(specs)}")
        assert len(specs) == 2
        assert 100 <= n_rec <= 200 and 60 <= n_q <= 80
        for spec in specs:
            ids = {r.id for r in spec.records}
            for q in spec.queries:
                assert set(q.gold) <= ids
                assert q.query and "<BOD>" not in q.query and "<EOD>" not in q.query
                assert all(": " in line for line in q.query.split("\n"))
