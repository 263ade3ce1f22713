"""`mnemo install` / `uninstall` on temporary settings files: merge, idempotence, exact undo."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import default_store
from mnemo import InvalidInputError
from mnemo._cli.install import CLAUDE_EVENTS, install, uninstall

USER_SETTINGS = """{
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "~/bin/log-prompt.sh"}]}
        ],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]}
        ]
    }
}
"""
CLAUDE_JSON = '{"numStartups": 12, "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}}, "projects": {}}'



@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "userhome"
    (h / ".claude").mkdir(parents=True)
    (h / ".claude" / "settings.json").write_text(USER_SETTINGS, "utf-8")
    (h / ".claude.json").write_text(CLAUDE_JSON, "utf-8")
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return h


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_install_merges_and_keeps_everything_else(home: Path) -> None:
    report = install("claude-code", where="user")
    assert {f["action"] for f in report["files"]} == {"updated"}
    settings = json.loads((home / ".claude" / "settings.json").read_text("utf-8"))
    assert settings["model"] == "opus" and settings["permissions"] == {"allow": ["Bash(npm test:*)"]}
    assert settings["hooks"]["PreToolUse"] == [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]}]
    ups = settings["hooks"]["UserPromptSubmit"]
    assert ups[0] == {"hooks": [{"type": "command", "command": "~/bin/log-prompt.sh"}]}  # theirs first, untouched
    for claude_event, event in CLAUDE_EVENTS.items():
        commands = [h["command"] for g in settings["hooks"][claude_event] for h in g["hooks"]]
        assert sum(c.endswith(f"mnemo hook {event}") for c in commands) == 1
    servers = json.loads((home / ".claude.json").read_text("utf-8"))
    assert servers["numStartups"] == 12 and servers["mcpServers"]["github"]["command"] == "gh-mcp"
    assert servers["mcpServers"]["mnemo"]["args"] == ["mcp"] and servers["mcpServers"]["mnemo"]["command"].endswith("mnemo")


def test_install_twice_is_install_once_and_uninstall_restores_bytes(home: Path) -> None:
    before = _snapshot(home)
    install("claude-code", where="user")
    once = _snapshot(home)
    report = install("claude-code", where="user")
    assert {f["action"] for f in report["files"]} == {"unchanged"}
    assert _snapshot(home) == once
    uninstall("claude-code", where="user")
    assert _snapshot(home) == before  # byte for byte, and no backup files left behind


def test_uninstall_after_someone_edited_removes_only_mnemos_entries(home: Path) -> None:
    install("claude-code", where="user")
    path = home / ".claude" / "settings.json"
    data = json.loads(path.read_text("utf-8"))
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "notify-send done"}]})
    data["theme"] = "dark"
    path.write_text(json.dumps(data), "utf-8")
    uninstall("claude-code", where="user")
    after = json.loads(path.read_text("utf-8"))
    assert after["theme"] == "dark" and after["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
    assert "mnemo" not in path.read_text("utf-8")
    assert after["hooks"]["UserPromptSubmit"] == [{"hooks": [{"type": "command", "command": "~/bin/log-prompt.sh"}]}]
    assert not list(home.rglob("*.mnemo-backup"))


def test_project_install_creates_files_and_uninstall_removes_them(home: Path, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "README.md").write_text("hi", "utf-8")
    before = _snapshot(proj)
    report = install("claude-code", where="project", directory=proj)
    assert {f["action"] for f in report["files"]} == {"created"}
    assert json.loads((proj / ".mcp.json").read_text("utf-8"))["mcpServers"]["mnemo"]["args"] == ["mcp"]
    assert "UserPromptSubmit" in json.loads((proj / ".claude" / "settings.json").read_text("utf-8"))["hooks"]
    uninstall("claude-code", where="project", directory=proj)
    assert _snapshot(proj) == before and not (proj / ".claude").exists()


def test_installed_hook_command_runs(home: Path, tmp_path: Path) -> None:
    install("claude-code", where="user")
    settings = json.loads((home / ".claude" / "settings.json").read_text("utf-8"))
    cmd = next(h["command"] for g in settings["hooks"]["UserPromptSubmit"] for h in g["hooks"] if "mnemo" in h["command"])
    payload = {"session_id": "x", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "prompt": "hello"}
    r = subprocess.run(cmd, shell=True, input=json.dumps(payload), capture_output=True, text=True, timeout=120,
                       env={**os.environ, "MNEMO_SERVE_IDLE_SECONDS": "0"})
    assert r.returncode == 0, r.stderr  # no store yet: nothing to inject, and no error


def test_settings_that_are_not_json_are_left_alone(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text("{ // comments are not JSON\n}", "utf-8")
    before = _snapshot(home)
    with pytest.raises(InvalidInputError, match="not plain JSON"):
        install("claude-code", where="user")
    assert _snapshot(home) == before


def test_opencode_install_registers_mcp_and_plugin_and_uninstalls_exactly(home: Path, tmp_path: Path) -> None:
    proj = tmp_path / "ocproj"
    proj.mkdir()
    (proj / "opencode.json").write_text('{"$schema": "https://opencode.ai/config.json", "model": "anthropic/claude-sonnet-4-5"}\n', "utf-8")
    before = _snapshot(proj)
    install("opencode", where="project", directory=proj)
    cfg = json.loads((proj / "opencode.json").read_text("utf-8"))
    assert cfg["model"] == "anthropic/claude-sonnet-4-5"
    assert cfg["mcp"]["mnemo"]["type"] == "local" and cfg["mcp"]["mnemo"]["command"][1:] == ["mcp"]
    plugin = (proj / ".opencode" / "plugin" / "mnemo.js").read_text("utf-8")
    assert "__MNEMO_COMMAND__" not in plugin and json.dumps(cfg["mcp"]["mnemo"]["command"][0]) in plugin
    assert install("opencode", where="project", directory=proj)["files"][0]["action"] == "unchanged"
    uninstall("opencode", where="project", directory=proj)
    assert _snapshot(proj) == before
    install("opencode", where="user")
    assert (home / ".config" / "opencode" / "plugin" / "mnemo.js").exists()
    uninstall("opencode", where="user")
    assert not (home / ".config" / "opencode" / "opencode.json").exists()


def test_cli_install_and_uninstall(home: Path, cli) -> None:
    before = _snapshot(home)
    r = cli("install", "claude-code", "--json")
    assert r.code == 0 and len(r.json()["files"]) == 2
    r = cli("uninstall", "claude-code")
    assert r.code == 0 and "restored" in r.out
    assert _snapshot(home) == before


def test_install_can_import_claude_md_as_project_context(home: Path, tmp_path: Path, cli) -> None:
    from fake_embedder import FakeEmbedder

    from mnemo import Mnemo
    from mnemo._settings.scope import project_scope

    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "CLAUDE.md").write_text("# Conventions\n\nAlways run ruff before committing.\n", "utf-8")
    r = cli("install", "claude-code", "--project", "--dir", str(proj), "--import-instructions", "--json")
    assert r.code == 0, r.err
    assert r.json()["imported"] == [str(proj / "CLAUDE.md")]
    with Mnemo(default_store(), embedder=FakeEmbedder()) as m:
        mems = m.list(scope=project_scope(proj))
    assert any("ruff" in x.content and x.type == "project_context" for x in mems)


def test_a_claude_md_without_a_body_is_skipped_and_the_install_still_succeeds(home: Path, tmp_path: Path, cli) -> None:
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "CLAUDE.md").write_text("# Conventions\n", "utf-8")
    r = cli("install", "claude-code", "--project", "--dir", str(proj), "--import-instructions", "--json")
    assert r.code == 0, r.err
    (note,) = r.json()["imported"]
    assert note.startswith(f"{proj / 'CLAUDE.md'}: skipped (")
    assert (proj / ".claude" / "settings.json").exists()


def test_opencode_jsonc_is_named_not_shadowed_by_a_second_config(home: Path, tmp_path: Path, cli) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "opencode.jsonc").write_text('{\n  // my settings\n  "model": "x"\n}\n', "utf-8")
    r = cli("install", "opencode", "--project", "--dir", str(proj))
    assert r.code == 2 and "opencode.jsonc" in r.err and "by hand" in r.err
    assert sorted(p.name for p in proj.iterdir()) == ["opencode.jsonc"]


def test_install_with_db_and_model_writes_them_into_every_command(home: Path, tmp_path: Path, cli) -> None:
    """`mnemo --db PATH --model M install …` (or the options after the command): the hooks, the MCP
    server and the plugin use that store and model, not the default one; uninstall still finds
    mnemo's entries."""
    from fake_embedder import FakeEmbedder

    from mnemo import Mnemo

    store = tmp_path / "work" / "team.db"
    store.parent.mkdir()
    with Mnemo(store, embedder=FakeEmbedder()) as m:
        m.remember("The team store says: deploys happen on Tuesdays", scope="global")
    model = os.environ["MNEMO_MODEL"]  # the fake model's plugin spec: what this store was built with
    r = cli("--db", str(store), "--model", model, "install", "claude-code", "--json")
    assert r.code == 0, r.err
    settings = json.loads((home / ".claude" / "settings.json").read_text("utf-8"))
    cmd = next(h["command"] for g in settings["hooks"]["UserPromptSubmit"] for h in g["hooks"] if "mnemo" in h["command"])
    assert f"--db {store}" in cmd and f"--model {model}" in cmd
    server = json.loads((home / ".claude.json").read_text("utf-8"))["mcpServers"]["mnemo"]
    assert server["args"] == ["--db", str(store), "--model", model, "mcp"]
    payload = {"session_id": "x", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "prompt": "when do deploys happen?"}
    env = {k: v for k, v in os.environ.items() if k not in ("MNEMO_DB", "MNEMO_MODEL")}
    run = subprocess.run(cmd, shell=True, input=json.dumps(payload), capture_output=True, text=True, timeout=120,
                         env={**env, "MNEMO_SERVE_IDLE_SECONDS": "0"})
    assert run.returncode == 0 and "Tuesdays" in run.stdout, run.stderr  # read from the store given to install
    assert not Path(default_store()).exists()  # the default store was never touched
    r = cli("install", "opencode", "--project", "--dir", str(tmp_path), "--db", str(store), "--json")
    assert r.code == 0, r.err
    oc = json.loads((tmp_path / "opencode.json").read_text("utf-8"))["mcp"]["mnemo"]
    assert oc["command"][1:] == ["--db", str(store), "mcp"]
    plugin = (tmp_path / ".opencode" / "plugin" / "mnemo.js").read_text("utf-8")
    assert f'const OPTIONS = ["--db", "{store}"]' in plugin
    uninstall("claude-code", where="user")
    settings = json.loads((home / ".claude" / "settings.json").read_text("utf-8"))
    assert not any("mnemo" in h["command"] for g in settings["hooks"].get("UserPromptSubmit", []) for h in g["hooks"])
