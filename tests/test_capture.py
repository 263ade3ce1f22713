"""Capture: the rule detector (Chinese and English), conversation formats, saving through the
lifecycle path, private spans, transcripts read incrementally, the background worker (a real
detached process), the CLI, and the detector's quality floor on the hand-labelled set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import benchmod
import pytest
from fake_embedder import FakeEmbedder

from mnemo import Mnemo
from mnemo._base.models import MEMORY_TYPES
from mnemo._capture.detect import detect, split_sentences
from mnemo._capture.transcript import parse
from mnemo._core.capture import strip_private
from mnemo.errors import InvalidInputError

DATA = Path(__file__).parent / "data"
TRANSCRIPT = DATA / "claude_transcript.jsonl"
ISSUE_EXAMPLE = "项目使用 FastAPI + PostgreSQL，架构选择 DeepSeek V4 Flash 作为 LLM"


def found(text: str, role: str = "user") -> list[tuple[str, str]]:
    """What the rules alone find (the trained second stage has its own tests in test_detect_model.py)."""
    return [(d.type, d.content) for d in detect(text, role=role, second_stage=False)]


# ---------------------------------------------------------------- the rule detector (first stage)

def test_the_issue_example_exactly() -> None:
    assert found(ISSUE_EXAMPLE) == [("project_context", "项目使用 FastAPI + PostgreSQL"), ("decision", "选择 DeepSeek V4 Flash 作为 LLM")]


@pytest.mark.parametrize(("text", "mtype"), [
    ("我喜欢用 vim 写代码。", "user_preference"),
    ("我们的技术栈是 Go + gRPC", "project_context"),
    ("我们决定采用 Redis 做缓存", "decision"),
    ("接口响应时间不超过 200 毫秒", "constraint"),
    ("目标是年底前上线 2.0", "goal"),
    ("你刚才的回答太啰嗦了", "feedback"),
    ("部署时先跑测试，然后再打包", "workflow"),
    ("张三负责后端开发", "entity"),
    ("I prefer tabs over spaces.", "user_preference"),
    ("Our backend is written in Rust.", "project_context"),
    ("We decided to go with Postgres.", "decision"),
    ("Never commit secrets to the repo.", "constraint"),
    ("The goal is to ship v1.2 by March.", "goal"),
    ("That was too verbose.", "feedback"),
    ("First run make lint, then run make test.", "workflow"),
    ("Marcus is the tech lead.", "entity"),
])
def test_each_type_in_both_languages(text: str, mtype: str) -> None:
    assert [t for t, _ in found(text)] == [mtype]


@pytest.mark.parametrize("text", [
    "好的", "明白了，谢谢！", "嗯嗯", "收到", "ok", "Thanks!", "got it, thanks", "sounds good",
    "这个方案可以吗？", "如果下雨我们就取消", "帮我看一下这个报错", "我必须先去吃饭", "我先试试",
    "Should we use Redis?", "What if we used Kafka instead", "Can you run the tests?", "Let me try that again.",
    "Please run the linter on this file.", "I have to go grab lunch.", "Remember that helper we wrote yesterday?",
])
def test_chit_chat_questions_and_transient_steps_are_never_saved(text: str) -> None:
    assert found(text) == []


def test_explicit_instructions_save_with_high_importance_and_lose_their_words() -> None:
    (d,) = detect("记住：部署前要跑 make check")
    assert d.content == "部署前要跑 make check" and d.importance == 0.9 and d.explicit
    (d,) = detect("From now on, answer in English.")
    assert d.content == "answer in English" and d.type == "user_preference" and d.importance == 0.9
    (d,) = detect("Remember that the staging DB is read-only.")
    assert d.content == "the staging DB is read-only" and d.importance == 0.9
    assert all(x.importance == 0.5 and not x.explicit for x in detect("I prefer tabs."))


def test_the_assistants_words_get_a_lower_confidence() -> None:
    (user,) = detect("We decided to go with Postgres.", role="user", second_stage=False)
    (bot,) = detect("We decided to go with Postgres.", role="assistant", second_stage=False)
    assert bot.confidence < user.confidence


def test_sentence_splitting_handles_both_languages_and_keeps_versions_and_abbreviations() -> None:
    text = "我喜欢 Python。我们用 v1.2 版本！Use e.g. pytest 3.5 here. Done? Yes\nnext line"
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "我喜欢 Python。", "我们用 v1.2 版本！", "Use e.g. pytest 3.5 here.", "Done?", "Yes", "next line"]


def test_detections_are_verbatim_spans_and_code_blocks_are_ignored() -> None:
    text = "好的。\n```python\n# we decided to use MySQL\nprint(1)\n```\n我们决定用 SQLite。"
    ds = detect(text)
    assert [(d.type, d.content) for d in ds] == [("decision", "我们决定用 SQLite")]
    assert all(text[d.start:d.end] == d.content for d in ds)


def test_rules_are_data_tables_per_language() -> None:
    import tomllib

    from mnemo._base.text import DATA as PKG_DATA

    for lang in ("zh", "en"):
        table = tomllib.loads((PKG_DATA / f"capture_rules_{lang}.toml").read_text("utf-8"))
        assert table["lang"] == lang and table["chitchat"] and table["negatives"] and table["explicit"]
        assert {r["type"] for r in table["rule"]} >= {"user_preference", "project_context", "decision", "constraint", "goal",
                                                      "feedback", "workflow", "entity"}


def test_pasted_output_is_not_a_statement() -> None:
    trace = ('Traceback (most recent call last):\n  File "train.py", line 88, in <module>\n    loss.backward()\n'
             "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.69 GiB total capacity)")
    assert found(trace) == []
    log = "2024-05-12 03:14:07 ERROR [worker-3] Task failed: must retry 3 times\n$ kubectl get pods\nI prefer tabs over spaces."
    hits = detect(log)
    assert [(d.type, d.content) for d in hits] == [("user_preference", "I prefer tabs over spaces")]
    assert log[hits[0].start:hits[0].end] == hits[0].content  # spans still point into the original


def test_a_reaction_and_the_instruction_after_it_are_one_feedback() -> None:
    text = "You keep wrapping everything in try/except. Stop that — let exceptions propagate unless there's a real recovery path."
    assert found(text) == [("feedback", text.rstrip("."))]
    # an imperative with no trigger of its own counts after a reaction, and not otherwise
    after = "You guessed the schema again instead of asking. If the requirements are vague, ask me a clarifying question first."
    assert [t for t, _ in found(after)] == ["feedback"]
    assert found("If the requirements are vague, ask me a clarifying question first.") == []
    # a reaction that already says what to do next time leaves the next sentence alone
    zh = "你上次生成的建表 SQL 没给外键加索引，以后注意。我们 DBA 规定所有外键必须有索引。"
    assert [t for t, _ in found(zh)] == ["feedback", "constraint"]
    assert found("Which Django version does the project use again? Check the requirements.") == []


def test_fact_is_the_leftover_type() -> None:
    assert [t for t, _ in found("Our staging server is at staging.acme-internal.net.")] == ["project_context"]
    assert [t for t, _ in found("线上是两台 4C8G 的阿里云 ECS，前面挂了一个 SLB。")] == ["project_context"]
    assert [t for t, _ in found("I'm on a Windows laptop with WSL2.")] == ["fact"]


def test_a_transient_clause_drops_only_itself() -> None:
    text = "我们的 Android 端还是 minSdk 21，所以 Compose 暂时用不了，别推荐那些只支持新版本的库。"
    assert ("constraint", "别推荐那些只支持新版本的库") in found(text)  # before, the whole sentence was dropped
    assert "用不了" not in "".join(c for _, c in found(text))
    assert found("如果你们决定迁到 Go，可以先从无状态的服务开始。") == []  # the opening clause still decides


def test_an_announced_decision_types_what_follows() -> None:
    assert found("评审会上已经拍板了，v2 接口不做向后兼容，老客户端强制升级。") == [("decision", "v2 接口不做向后兼容，老客户端强制升级")]


def test_the_assistant_explaining_things_in_general_is_not_remembered() -> None:
    assert found("TCP 三次握手是为了确认双方的收发能力都正常，所以必须三次。", role="assistant") == []
    assert found("A Bloom filter never gives false negatives, so it must sit in front of the disk lookup.", role="assistant") == []
    # the same kind of sentence about this user's project is kept
    kept = found("Noted: your Bloom filter must sit in front of the disk lookup.", role="assistant")
    assert [t for t, _ in kept] == ["constraint"]


def test_near_ties_go_by_the_guides_order_of_types() -> None:
    from mnemo._capture.detect import PRECEDENCE

    assert set(PRECEDENCE) == set(MEMORY_TYPES) - {"note"}
    # "decided" and "must" fire equally strongly: a decision comes before a constraint
    assert found("We decided that every service must export traces with OpenTelemetry.")[0][0] == "decision"


def test_strip_private() -> None:
    assert strip_private("a <private>secret</private> b <PRIVATE x=1>more</private>c") == "a  b c"
    assert strip_private("keep <private>unclosed to the end") == "keep "


# ---------------------------------------------------------------- quality floor on the labelled set

def _bench():
    return benchmod.load("detect")


@pytest.mark.parametrize("split", ["ab", "c", "d", "e", "f", "g", "h", "i", "p", "j", "k"])
def test_the_evaluation_sets_are_well_formed(split: str) -> None:
    bench = _bench()
    rows = bench.load() if split == "ab" else bench.load_split(split)
    assert len(rows) >= (300 if split != "c" else 200)
    langs = {lang: sum(r["lang"] == lang for r in rows) for lang in ("zh", "en")}
    assert min(langs.values()) >= 0.4 * len(rows)
    assert sum(not r["expected"] for r in rows) >= 60  # chit-chat and tricky negatives
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["split"] in (("a", "b") if split == "ab" else (split,))
        for e in r["expected"]:
            assert e["content"] in r["text"], r["id"]
            assert e["type"] in MEMORY_TYPES and e.get("alt", e["type"]) in MEMORY_TYPES, r["id"]


def test_the_rules_alone_stay_above_their_floor() -> None:
    """The first stage on its own (bench/detect.py, column "rules alone"): a rule change that loses
    quality fails here, before the second stage can hide it. Splits a to h have been used to write
    the rules; i, p, j and k never were."""
    bench = _bench()
    rows = bench.load()
    for split in ("a", "b"):
        res = bench.evaluate([r for r in rows if r["split"] == split], second_stage=False)
        assert res["precision"] >= 0.96 and res["recall"] >= 0.96 and res["type_accuracy"] >= 0.9, (split, res)
    floors = {"c": (0.89, 0.86, 0.74), "d": (0.89, 0.8, 0.73), "e": (0.89, 0.83, 0.77), "f": (0.91, 0.8, 0.77),
              "g": (0.9, 0.86, 0.76), "h": (0.88, 0.73, 0.76), "i": (0.83, 0.74, 0.7), "p": (0.94, 0.86, 0.85),
              "j": (0.81, 0.71, 0.69), "k": (0.82, 0.65, 0.73)}
    assert set(floors) == set(bench.LATER_SPLITS)
    for split, (precision, recall, type_accuracy) in floors.items():
        res = bench.evaluate(bench.load_split(split), second_stage=False)
        assert res["precision"] >= precision and res["recall"] >= recall and res["type_accuracy"] >= type_accuracy, (split, res)


def test_the_detector_stays_above_its_floor() -> None:
    """Rules and second stage together, as ``mnemo auto`` runs them. The model was trained on a to
    i and p (so it scores high there); j and k were written blind to both stages and never trained
    or tuned on: their floors sit a few points under what they measured when the model shipped
    (j 0.891 / 0.791 / 0.789, k 0.905 / 0.780 / 0.807), and catch a retrained model or a rule change
    that does worse on new text."""
    bench = _bench()
    rows = bench.load()
    for split in ("a", "b"):
        res = bench.evaluate([r for r in rows if r["split"] == split])
        assert res["precision"] >= 0.96 and res["recall"] >= 0.96 and res["type_accuracy"] >= 0.95, (split, res)
    floors = {**{split: (0.92, 0.86, 0.95) for split in "cdefghi"}, "p": (0.97, 0.95, 0.95),
              "j": (0.86, 0.76, 0.76), "k": (0.87, 0.75, 0.77)}
    assert set(floors) == set(bench.LATER_SPLITS)
    for split, (precision, recall, type_accuracy) in floors.items():
        res = bench.evaluate(bench.load_split(split))
        assert res["precision"] >= precision and res["recall"] >= recall and res["type_accuracy"] >= type_accuracy, (split, res)


# ---------------------------------------------------------------- conversation formats

def test_input_formats_text_messages_and_claude_transcript() -> None:
    assert parse("我喜欢 vim") == parse("我喜欢 vim", "text")
    msgs = json.dumps([{"role": "system", "content": "You must obey"}, {"role": "user", "content": "I prefer tabs."},
                       {"role": "assistant", "content": [{"type": "text", "text": "We decided on Go."}, {"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
                       {"role": "tool", "content": "we must never deploy"}])
    assert [(m.role, m.text) for m in parse(msgs)] == [("user", "I prefer tabs."), ("assistant", "We decided on Go.")]
    got = parse(TRANSCRIPT.read_text("utf-8"))
    text = " ".join(m.text for m in got)
    assert [m.role for m in got] == ["user", "assistant", "assistant", "user", "user", "user"]
    # tool calls, tool results inside user entries, thinking, meta/command entries, system reminders
    # and sidechains are not conversation
    for leaked in ("MySQL", "MongoDB", "sudo", "French", "/init", "Rust"):
        assert leaked not in text
    with pytest.raises(InvalidInputError, match="line 2"):
        parse('{"type": "user", "message": {"content": "hi"}}\nnot json', "claude-jsonl")
    with pytest.raises(InvalidInputError):
        parse("[1, 2]", "messages")


def test_auto_saves_with_source_session_and_speaker(m: Mnemo) -> None:
    out = m.auto([{"role": "user", "content": ISSUE_EXAMPLE}, {"role": "assistant", "content": "We decided to keep the API under /v2."}],
                 session="sess-1", scope="project:shop")
    assert out["extractor"] == "rules" and out["fallback"] is None and out["counts"]["created"] == 3
    mems = {mem.content: mem for mem in m.list()}
    assert set(mems) == {"项目使用 FastAPI + PostgreSQL", "选择 DeepSeek V4 Flash 作为 LLM", "We decided to keep the API under /v2"}
    for mem in mems.values():
        assert mem.source == "auto" and mem.source_session == "sess-1" and mem.scope == "project:shop"
    bot = mems["We decided to keep the API under /v2"]
    assert bot.metadata["speaker"] == "assistant" and bot.confidence < mems["选择 DeepSeek V4 Flash 作为 LLM"].confidence


def test_dry_run_saves_nothing(m: Mnemo) -> None:
    out = m.auto(ISSUE_EXAMPLE, dry_run=True)
    assert [(d["type"], d["confidence"]) for d in out["detected"]] == [("project_context", 0.75), ("decision", 0.85)]
    assert out["saved"] == [] and m.stats()["total"] == 0


def test_a_statement_repeated_across_sessions_gains_importance(m: Mnemo) -> None:
    first = m.auto("I prefer small pull requests.", session="s1")["saved"][0]
    again = m.auto("I prefer small pull requests.", session="s2")["saved"][0]
    assert again["action"] == "merged" and again["id"] == first["id"]
    assert m.get(first["id"]).importance > first["importance"]
    assert m.stats()["total"] == 1


def test_private_spans_never_reach_the_store(m: Mnemo) -> None:
    out = m.auto("I prefer vim. <private>I prefer emacs in secret.</private> We decided to use Go.")
    assert {s["content"] for s in out["saved"]} == {"I prefer vim", "We decided to use Go"}
    assert all("emacs" not in mem.content for mem in m.list())


def test_bad_input_is_a_clear_error(m: Mnemo) -> None:
    with pytest.raises(InvalidInputError):
        m.auto(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="LLM"):
        m.auto("I prefer tabs.", llm=True)
    with pytest.raises(InvalidInputError, match="no transcript"):
        m.auto_transcript("/nonexistent/x.jsonl")
    assert m.stats()["total"] == 0


# ---------------------------------------------------------------- transcripts, incrementally

def test_transcript_is_read_incrementally(m: Mnemo, tmp_path: Path) -> None:
    lines = TRANSCRIPT.read_text("utf-8").splitlines(keepends=True)
    path = tmp_path / "t.jsonl"
    path.write_text("".join(lines[:4]) + lines[4].rstrip("\n"), "utf-8")  # the last line is still being written
    first = m.auto_transcript(path)
    assert first["from_line"] == 1 and first["to_line"] == 4
    assert {s["content"] for s in first["saved"]} == {"项目使用 FastAPI + PostgreSQL", "选择 DeepSeek V4 Flash 作为 LLM"}
    assert first["session"] == "5f1c2a9e-7b3d-4e8a-9c21-0d6e4b7a1f35"
    path.write_text("".join(lines), "utf-8")
    second = m.auto_transcript(path)
    assert second["from_line"] == 5 and second["to_line"] == len(lines)
    assert {s["content"] for s in second["saved"]} == {"We decided to keep the API versioned under /v2 for all public endpoints",
                                                       "I prefer small pull requests", "Never commit the .env file"}
    assert m.auto_transcript(path)["saved"] == []  # nothing new
    with path.open("a", encoding="utf-8") as fh:  # a damaged line is reported and skipped, not a dead end
        fh.write("{not json\n" + json.dumps({"type": "user", "message": {"role": "user", "content": "We decided to use Go."}}) + "\n")
    third = m.auto_transcript(path)
    assert third["skipped_lines"] == [len(lines) + 1] and [s["content"] for s in third["saved"]] == ["We decided to use Go"]
    m.forget(third["saved"][0]["id"])
    assert m.capture_job(path)["state"] == "done"
    assert m.stats()["total"] == 5 and all(e["kind"] == "created" for mem in m.list() for e in m.history(mem.id))


@pytest.mark.parametrize("fmt", ["text", "messages"])
def test_text_and_message_files_are_read_again_only_from_what_was_added(m: Mnemo, tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "notes"
    one, two = "I prefer tabs.", "We decided to use Go."

    def write(*texts: str) -> None:
        if fmt == "text":
            path.write_text("\n".join(texts) + "\n", "utf-8")
        else:
            path.write_text(json.dumps([{"role": "user", "content": t} for t in texts]), "utf-8")

    write(one)
    assert [s["content"] for s in m.auto_transcript(path, fmt=fmt)["saved"]] == ["I prefer tabs"]
    assert m.auto_transcript(path, fmt=fmt)["saved"] == []
    write(one, two)
    assert [s["content"] for s in m.auto_transcript(path, fmt=fmt)["saved"]] == ["We decided to use Go"]
    write(two)  # rewritten, not appended to: read whole again (the repeat merges)
    assert [s["action"] for s in m.auto_transcript(path, fmt=fmt)["saved"]] == ["merged"]


def test_a_running_extraction_of_the_same_transcript_is_not_repeated(m: Mnemo, tmp_path: Path) -> None:
    from mnemo._base.models import format_time, utcnow

    path = tmp_path / "t.jsonl"
    path.write_text(TRANSCRIPT.read_text("utf-8"), "utf-8")
    with m.store.transaction():
        assert m.store.claim_job(f"capture:{path.resolve()}", "someone-else", at=format_time(utcnow()), stale_before="0")
    out = m.auto_transcript(path)
    assert "running" in out["skipped"] and m.stats()["total"] == 0
    assert m.auto_transcript(path, background=True)["started"] is False


def _wait_for(pred, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


@pytest.mark.slow
def test_background_worker_outlives_its_caller(tmp_path: Path) -> None:
    db, path = tmp_path / "s.db", tmp_path / "t.jsonl"
    path.write_text(TRANSCRIPT.read_text("utf-8"), "utf-8")
    caller = textwrap.dedent(f"""
        import json, time
        from mnemo import Mnemo
        from fake_embedder import FakeEmbedder
        with Mnemo({str(db)!r}, embedder=FakeEmbedder()) as m:
            t0 = time.perf_counter()
            out = m.auto_transcript({str(path)!r}, background=True)
            out["elapsed"] = time.perf_counter() - t0
        print(json.dumps(out))
    """)
    done = subprocess.run([sys.executable, "-c", caller], capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["started"] and out["elapsed"] < 2.0  # the caller did not wait for the extraction
    # the caller has exited; the detached worker finishes the job
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        _wait_for(lambda: (m.capture_job(path) or {}).get("state") == "done")
        assert m.stats()["total"] == 5


@pytest.mark.slow
def test_two_concurrent_workers_do_not_duplicate_work(tmp_path: Path) -> None:
    db, path = tmp_path / "s.db", tmp_path / "t.jsonl"
    path.write_text(TRANSCRIPT.read_text("utf-8"), "utf-8")
    Mnemo(db, embedder=FakeEmbedder()).close()
    cmd = [sys.executable, "-m", "mnemo", "auto", "--file", str(path), "--json", "--db", str(db)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    saved = [len(o["saved"]) for o in outs]
    assert sorted(saved) == [0, 5]  # one did the work; the other skipped it or found nothing new
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        assert m.stats()["total"] == 5
        assert all(e["kind"] == "created" for mem in m.list() for e in m.history(mem.id))  # nothing merged twice


# ---------------------------------------------------------------- CLI

def test_cli_auto_json_shapes(cli, tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    dry = cli("auto", ISSUE_EXAMPLE, "--dry-run", "--json", "--db", db)
    assert dry.code == 0, dry.err
    d = dry.json()
    assert d["dry_run"] is True and d["saved"] == [] and [x["type"] for x in d["detected"]] == ["project_context", "decision"]
    assert {"content", "type", "confidence", "importance", "speaker"} <= set(d["detected"][0])
    out = cli("auto", ISSUE_EXAMPLE, "--json", "--db", db, "--session", "abc").json()
    assert out["extractor"] == "rules" and out["counts"] == {"created": 2, "merged": 0, "related": 0, "superseded": 0}
    assert {"action", "id", "type", "content", "confidence", "importance", "speaker"} <= set(out["saved"][0])
    msgs = json.dumps([{"role": "user", "content": "I prefer tabs."}, {"role": "assistant", "content": "ok"}])
    via_stdin = cli("auto", "--stdin", "--json", "--db", db, stdin=msgs).json()
    assert [s["content"] for s in via_stdin["saved"]] == ["I prefer tabs"]
    from_file = cli("auto", "--file", str(TRANSCRIPT), "--json", "--db", db).json()
    assert from_file["counts"]["created"] + from_file["counts"]["related"] == 3 and from_file["counts"]["merged"] == 2
    status = cli("auto", "--file", str(TRANSCRIPT), "--status", "--json", "--db", db).json()["job"]
    assert status["state"] == "done" and status["progress"]["lines"] == 12
    assert "done · 12 lines read" in cli("auto", "--file", str(TRANSCRIPT), "--status", "--db", db).out
    text = cli("auto", "--dry-run", "--db", db, "我喜欢用 vim")
    assert "user_preference" in text.out and "0.80" in text.out and "nothing saved" in text.out


def test_cli_auto_errors(cli, tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    assert cli("auto", "--db", db).code == 2
    assert cli("auto", "x", "--stdin", "--db", db).code == 2
    assert cli("auto", "I prefer tabs", "--background", "--db", db).code == 2
    bad = cli("auto", "I prefer tabs", "--llm", "--json", "--db", db)
    assert bad.code == 2 and "LLM" in bad.json()["error"] and "Traceback" not in bad.err
    missing = cli("auto", "--file", str(tmp_path / "nope.jsonl"), "--db", db)
    assert missing.code == 2 and missing.err.startswith("error:")


# ---------------------------------------------------------------- the real model

@pytest.mark.model
def test_auto_with_the_real_e5_model(tmp_path: Path) -> None:
    with Mnemo(tmp_path / "e5.db", model="e5") as m:
        out = m.auto(ISSUE_EXAMPLE + "。I prefer concise answers with code first.", session="s1")
        assert out["counts"]["created"] + out["counts"]["related"] == 3 and m.stats()["total"] == 3
        hits = m.recall("which LLM did we pick", top_k=1)
        assert hits and "DeepSeek" in hits[0].memory.content
        again = m.auto("我们的项目使用 FastAPI + PostgreSQL。", session="s2")  # a near repeat in another session
        assert [(s["action"], s["content"]) for s in again["saved"]] == [("merged", "项目使用 FastAPI + PostgreSQL")]
        assert again["saved"][0]["importance"] > 0.5 and m.stats()["total"] == 3
