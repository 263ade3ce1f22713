"""The capture detector's second stage (``mnemo._capture.detect_model``): it only removes or retypes what
the rules found, what it removes on held-out text is mostly false alarms, a missing or damaged
data file leaves the rules alone (and ``doctor`` says so), and training is deterministic."""

from __future__ import annotations

from pathlib import Path

import benchmod
import numpy as np
import pytest

from mnemo import Mnemo
from mnemo._capture import detect_model as _detect_model
from mnemo._capture.detect import detect

BENCH = Path(__file__).parents[1] / "bench"


def _bench(name: str):
    return benchmod.load(name)


def _key(d) -> tuple[int, int]:
    return d.start, d.end


@pytest.fixture
def swapped_model(tmp_path, monkeypatch):
    """Point the second stage at a file of the test's making, and load the shipped one again after."""
    path = tmp_path / "capture_model.npz"
    monkeypatch.setattr(_detect_model, "MODEL_FILE", path)
    _detect_model.reset()
    yield path
    monkeypatch.undo()
    _detect_model.reset()


def test_the_shipped_model_loads() -> None:
    assert _detect_model.model() is not None and _detect_model.problem() is None


def test_it_keeps_explicit_instructions_and_adds_only_sentences_no_rule_fired_in() -> None:
    bench = _bench("detect")
    rows = bench.load_split("j") + bench.load_split("k")
    removed = retyped = added = 0
    for r in rows:
        rules = {_key(d): d for d in detect(r["text"], role=r["role"], second_stage=False)}
        staged = detect(r["text"], role=r["role"])
        assert all(_key(d) in {_key(s) for s in staged} for d in rules.values() if d.explicit), r["id"]
        for d in staged:
            if _key(d) in rules:
                retyped += d.type != rules[_key(d)].type
            else:
                assert d.rule.endswith(":model") and not d.explicit, (r["id"], d)
                assert not any(s < d.end and e > d.start for s, e in rules), (r["id"], d)
                assert d.content == r["text"][d.start:d.end] and d.confidence >= _detect_model.model().add_threshold * 0.75
                added += 1
        removed += sum(_key(d) not in {_key(s) for s in staged} for d in rules.values())
    assert removed > 0 and retyped > 0 and added > 0
    assert detect("记住：部署前要跑 make check")[0].explicit


def test_on_held_out_text_its_removals_additions_and_retypes_are_mostly_right() -> None:
    """Splits j and k were written after the model was trained, blind to it: measured there, a
    removal should more often hit a false alarm than a memory, an added sentence should usually be
    a memory, and a retype should fix more than it breaks."""
    bench = _bench("detect")
    removed = {"false alarm": 0, "memory": 0}
    added = {"false alarm": 0, "memory": 0}
    retypes = {"fixed": 0, "broke": 0}
    for r in bench.load_split("j") + bench.load_split("k"):
        rules = detect(r["text"], role=r["role"], second_stage=False)
        staged = detect(r["text"], role=r["role"])
        by_span = {_key(d): d for d in staged}
        matched, _, _ = bench.match(r, rules)
        gold = {_key(d): e["type"] for e, d in matched}
        for d in rules:
            if _key(d) not in by_span:
                removed["memory" if _key(d) in gold else "false alarm"] += 1
            elif _key(d) in gold and by_span[_key(d)].type != d.type:
                retypes["fixed"] += by_span[_key(d)].type == gold[_key(d)]
                retypes["broke"] += d.type == gold[_key(d)]
        new = [d for d in staged if d.rule.endswith(":model")]
        hits, extra, _ = bench.match(r, new)
        added["memory"] += len(hits)
        added["false alarm"] += len(extra)
    # measured when the model shipped: removed 18 false alarms and 10 memories, added 40 memories
    # and 4 false alarms, retyped 28 right and 9 wrong
    assert removed["false alarm"] > 1.3 * removed["memory"], removed
    assert added["memory"] >= 5 * added["false alarm"], added
    assert retypes["fixed"] >= 2 * retypes["broke"], retypes


def test_a_missing_model_file_leaves_the_rules_alone(swapped_model: Path) -> None:
    text = "我们后端是 Go 1.22 + Gin，别给我写成 MySQL 的语法"
    assert _detect_model.model() is None and "missing" in (_detect_model.problem() or "")
    assert detect(text) == detect(text, second_stage=False)


def test_a_damaged_model_file_leaves_the_rules_alone_and_doctor_says_so(swapped_model: Path, m: Mnemo) -> None:
    swapped_model.write_bytes(b"PK\x03\x04 this is not a zip archive")
    text = "I decided to take a break, then we'll pick the migration up again."
    assert detect(text) == detect(text, second_stage=False)
    check = next(c for c in m.doctor() if c["check"] == "capture model")
    assert check["status"] == "warn" and "unreadable" in check["detail"] and check["fix"]


def test_weights_of_the_wrong_shape_are_refused(swapped_model: Path) -> None:
    _detect_model.Model(np.zeros(16), np.zeros((16, 9)), 0.5, 0.0, np.zeros(16), 0.8).save(swapped_model)
    with pytest.raises(ValueError, match="shape"):
        _detect_model.Model.load(swapped_model)
    assert _detect_model.model() is None and "unreadable" in (_detect_model.problem() or "")


def test_training_is_deterministic_and_survives_saving(tmp_path: Path) -> None:
    train = _bench("train_capture")
    rows = _bench("detect").load_split("c")
    found = train.current(rows)
    ex = train.examples(rows, [found])
    for xs, ys, ws in (ex.keep, ex.add):
        assert len(xs) == len(ys) == len(ws) and 0 < sum(ys) < len(ys)
    w1, w2 = train.train_binary(*ex.keep, 1e-4, iters=60), train.train_binary(*ex.keep, 1e-4, iters=60)
    assert np.array_equal(w1, w2)
    model = _detect_model.Model(w1, train.train_types(*ex.types, 1e-4, iters=60), 0.5, 0.0,
                                train.train_binary(*ex.add, 1e-4, iters=60), 0.8)
    model.save(tmp_path / "m.npz")
    loaded = _detect_model.Model.load(tmp_path / "m.npz")
    before = train.score(rows, found, model)
    after = train.score(rows, found, loaded)
    # int8 weights: the scores may move by a detection or two, not more
    assert all(abs(before[k] - after[k]) <= 0.02 for k in before), (before, after)
    assert before["precision"] > train.score(rows, found, None)["precision"]


def test_plain_statements_with_strong_triggers_survive_it() -> None:
    """The labelled sets are full of trigger words used in passing ("I decided to take a break");
    a strong trigger is kept whatever the model thinks, so plain statements are never lost."""
    assert [d.type for d in detect("Never commit secrets to the repo.")] == ["constraint"]
    assert [d.content for d in detect("I prefer vim. We decided to use Go.")] == ["I prefer vim", "We decided to use Go"]
    assert [d.type for d in detect("我们决定采用 Redis 做缓存")] == ["decision"]


def test_an_explicit_instruction_is_feedback_only_when_it_reacts_to_the_assistant() -> None:
    for text in ("Remember that the staging DB is read-only.", "记住：以后都用 uv 管理依赖", "From now on, answer in English."):
        (d,) = detect(text)
        assert d.explicit and d.type != "feedback", (text, d)
    (d,) = detect("你刚才又把密钥硬编码了，记住以后密钥一律从环境变量读")
    assert d.type == "feedback"


def test_a_sentence_without_a_trigger_can_be_kept_and_says_so() -> None:
    """The third model: on held-out text it adds memories the rules had no trigger for (see the
    counts above); each carries the rule ``<lang>:model`` and the model's probability."""
    bench = _bench("detect")
    added = [(r["id"], d) for r in bench.load_split("j") + bench.load_split("k")
             for d in detect(r["text"], role=r["role"]) if d.rule.endswith(":model")]
    assert len(added) >= 20
    assert all(0.6 <= d.confidence <= 1.0 and d.lang in ("zh", "en") for _, d in added)
