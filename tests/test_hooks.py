"""Claude Code hooks, run as Claude Code runs them: a new `mnemo hook EVENT` process per event,
fed the recorded payloads in tests/data/hooks (written from Claude Code's documented formats)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import default_store
from mnemo import Mnemo
from mnemo._core.context import MARKERS
from mnemo._settings.scope import project_scope

DATA = Path(__file__).parent / "data" / "hooks"
MNEMO = str(Path(sys.executable).with_name("mnemo"))



@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout with a store that knows a few things about it; no warm service."""
    monkeypatch.setenv("MNEMO_SERVE_IDLE_SECONDS", "0")
    root = tmp_path / "app"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    from fake_embedder import FakeEmbedder

    home = Path(os.environ["MNEMO_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    with Mnemo(default_store(), embedder=FakeEmbedder()) as m:
        scope = project_scope(root)
        m.remember("We use PostgreSQL 16 for the main database", type="decision", scope=scope)
        m.remember("Never commit directly to the main branch", type="constraint", scope=scope)
        m.remember("The user prefers short answers", type="user_preference")  # global: applies everywhere
        m.remember("The billing service is written in Go", type="decision", scope="project:other-123456")
    return root


def store() -> Mnemo:
    from fake_embedder import FakeEmbedder

    return Mnemo(default_store(), create=False, embedder=FakeEmbedder())


def payload(name: str, cwd: Path, transcript: Path | None = None) -> str:
    text = (DATA / name).read_text("utf-8")
    return text.replace("__CWD__", str(cwd)).replace("__TRANSCRIPT__", str(transcript or cwd / "none.jsonl"))


def hook(event: str, stdin: str, *, via: str = "script", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [MNEMO, "hook", event] if via == "script" else [sys.executable, "-m", "mnemo", "hook", event]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def context_of(r: subprocess.CompletedProcess[str], event_name: str) -> str:
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == event_name
    return answer["hookSpecificOutput"]["additionalContext"]


def test_session_start_injects_the_projects_key_memories_and_global_ones(project: Path) -> None:
    text = context_of(hook("session-start", payload("session_start.json", project)), "SessionStart")
    assert text.startswith(MARKERS["en"][0]) and text.endswith(MARKERS["en"][1])
    assert "Never commit directly" in text and "PostgreSQL 16" in text and "short answers" in text
    assert "billing service" not in text  # another project's memory


@pytest.mark.parametrize("via", ["script", "module"])
def test_user_prompt_injects_relevant_memories_once_per_session(project: Path, via: str) -> None:
    p = payload("user_prompt.json", project)
    text = context_of(hook("user-prompt", p, via=via), "UserPromptSubmit")
    assert "PostgreSQL 16" in text and "(decision · " in text
    again = hook("user-prompt", p, via=via)
    assert again.returncode == 0 and again.stdout.strip() == ""  # already injected in this session
    with store() as m:
        log = m.log()
    assert log[0]["session"] == "3f1c9a52-7b0e-4d1a-9c55-0a6f2e8d1b77" and log[0]["surface"] == "claude-code:user-prompt"


def test_chinese_prompt_gets_the_chinese_wrapper(project: Path) -> None:
    with store() as m:
        m.remember("主数据库使用 PostgreSQL 16", type="decision", scope=project_scope(project))
    text = context_of(hook("user-prompt", payload("user_prompt_zh.json", project)), "UserPromptSubmit")
    assert text.startswith(MARKERS["zh"][0]) and text.endswith(MARKERS["zh"][1]) and "PostgreSQL" in text


def test_pre_compact_then_session_start_reinjects_what_compaction_drops(project: Path) -> None:
    sid = "3f1c9a52-7b0e-4d1a-9c55-0a6f2e8d1b77"
    first = context_of(hook("user-prompt", payload("user_prompt.json", project)), "UserPromptSubmit")
    assert "PostgreSQL 16" in first
    r = hook("pre-compact", payload("pre_compact.json", project))
    assert r.returncode == 0 and r.stdout.strip() == ""
    text = context_of(hook("session-start", payload("session_start_compact.json", project)), "SessionStart")
    assert "PostgreSQL 16" in text  # injected before compaction, injected again after it
    with store() as m:
        assert m._session_value(sid, "pending_key") is None


def test_prompt_after_compaction_without_session_start_reinjects(project: Path) -> None:
    context_of(hook("user-prompt", payload("user_prompt.json", project)), "UserPromptSubmit")
    assert hook("pre-compact", payload("pre_compact.json", project)).returncode == 0
    text = context_of(hook("user-prompt", payload("user_prompt.json", project)), "UserPromptSubmit")
    assert "PostgreSQL 16" in text and "Never commit" in text


@pytest.mark.parametrize("event, fixture", [("stop", "stop.json"), ("session-end", "session_end.json")])
def test_stop_and_session_end_capture_the_transcript_in_the_background(project: Path, tmp_path: Path, event: str, fixture: str) -> None:
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text((DATA / "transcript.jsonl").read_text("utf-8").replace("__CWD__", str(project)), "utf-8")
    started = time.monotonic()
    r = hook(event, payload(fixture, project, transcript))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""  # Stop must not answer with a decision: that would keep Claude going
    deadline = time.monotonic() + 60
    found: list[Any] = []
    while time.monotonic() < deadline:
        with store() as m:
            found = [x for x in m.list(scope="all", limit=500) if "pytest" in x.content]
            stored = " ".join(x.content for x in m.list(scope="all", limit=500))
        if found:
            break
        time.sleep(0.5)
    assert found, "the background capture saved nothing from the transcript"
    assert found[0].scope == project_scope(project)
    assert "hunter2" not in stored  # <private> spans are never stored
    assert time.monotonic() - started < 60


def test_malformed_payload_is_a_clear_non_blocking_error(project: Path) -> None:
    for stdin in [(DATA / "malformed.json").read_text("utf-8"), "[1, 2]", "", "\xff"]:
        r = hook("user-prompt", stdin)
        assert r.returncode == 1, (stdin, r.returncode)  # 2 would block the user's prompt
        assert r.stdout == "" and "Traceback" not in r.stderr
        assert r.stderr.startswith("mnemo hook user-prompt: ") and len(r.stderr.strip().splitlines()) == 1
    r = hook("user-prompt", payload("no_prompt.json", project))
    assert r.returncode == 1 and "prompt" in r.stderr
    r = hook("bogus-event", payload("user_prompt.json", project), via="module")
    assert r.returncode == 1 and "unknown hook event" in r.stderr


def test_missing_store_is_not_an_error_and_creates_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_DB", str(tmp_path / "nowhere" / "memory.db"))
    for event, fixture in [("session-start", "session_start.json"), ("user-prompt", "user_prompt.json"), ("stop", "stop.json")]:
        r = hook(event, payload(fixture, tmp_path))
        assert r.returncode == 0 and r.stdout == ""
        assert "mnemo init" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "nowhere").exists()


def test_disable_and_pause_turn_injection_off(project: Path, cli) -> None:
    p = payload("user_prompt.json", project)
    r = hook("user-prompt", p, env={"MNEMO_DISABLE": "1"})
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    assert cli("pause", "--session", "3f1c9a52-7b0e-4d1a-9c55-0a6f2e8d1b77").code == 0
    r = hook("user-prompt", p)
    assert r.returncode == 0 and r.stdout == ""
    assert cli("resume", "--session", "3f1c9a52-7b0e-4d1a-9c55-0a6f2e8d1b77").code == 0
    assert "PostgreSQL 16" in context_of(hook("user-prompt", p), "UserPromptSubmit")


def test_project_scope_is_the_git_root_name_plus_a_path_hash(tmp_path: Path) -> None:
    a = tmp_path / "one" / "app"
    b = tmp_path / "two" / "app"
    for root in (a, b):
        (root / ".git").mkdir(parents=True)
        (root / "pkg" / "deep").mkdir(parents=True)
    sa, sb = project_scope(a), project_scope(b / "pkg" / "deep")
    assert sa.startswith("project:app-") and sb.startswith("project:app-") and sa != sb
    assert project_scope(a / "pkg" / "deep") == sa
    (b / ".mnemo.toml").write_text('scope = "project:shared-app"\n', "utf-8")
    assert project_scope(b / "pkg") == "project:shared-app"
    (b / ".mnemo.toml").write_text("scope = 3\n", "utf-8")
    from mnemo import InvalidInputError

    with pytest.raises(InvalidInputError):
        project_scope(b)


def test_a_damaged_store_is_one_line_and_does_not_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_SERVE_IDLE_SECONDS", "0")
    db = tmp_path / "broken.db"
    db.write_bytes(b"this is not a database at all" * 100)
    monkeypatch.setenv("MNEMO_DB", str(db))
    r = hook("user-prompt", payload("user_prompt.json", tmp_path))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("mnemo hook user-prompt: ") and "Traceback" not in r.stderr


def test_a_retry_after_a_lost_answer_injects_again_a_repeat_does_not(m: Any, tmp_path: Path) -> None:
    """A warm service killed after it recorded a prompt's injection and before it replied: the
    hook's in-process retry (``retry``) offers those memories again; the user sending the same
    prompt again (no retry) still gets nothing twice, and a retry of another prompt retracts nothing."""
    from mnemo._hooks.handlers import run_hook

    m.remember("The main database is PostgreSQL 16", type="decision")
    settings = {"context_top_k": 5, "context_budget_tokens": 400, "scope": ["global", "default"]}
    p = {"session_id": "s-retry", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "prompt": "which database do we use?"}
    first = run_hook(m, "user-prompt", p, settings)
    assert "PostgreSQL 16" in first["stdout"]
    assert run_hook(m, "user-prompt", p, settings)["stdout"] == ""  # sent again: already injected
    retried = run_hook(m, "user-prompt", p, {**settings, "retry": True})
    assert "PostgreSQL 16" in retried["stdout"] and retried["memory_ids"] == first["memory_ids"]
    other = {**p, "prompt": "what about the database version?"}
    assert run_hook(m, "user-prompt", other, {**settings, "retry": True})["stdout"] == ""  # not the last prompt
