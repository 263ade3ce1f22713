"""``mnemo install`` / ``uninstall``: put mnemo's hooks, MCP server and plugin into an assistant's settings.

Claude Code (documented locations):

* hooks: ``~/.claude/settings.json`` (``--user``) or ``<project>/.claude/settings.json``
  (``--project``), under ``"hooks"`` → event → ``[{"hooks": [{"type": "command", …}]}]``;
* MCP server: ``~/.claude.json`` (``--user``) or ``<project>/.mcp.json`` (``--project``),
  under ``"mcpServers"``.

OpenCode: the MCP server under ``"mcp"`` in ``~/.config/opencode/opencode.json`` (or the
project's ``opencode.json``), and the plugin file ``mnemo.js`` in ``~/.config/opencode/plugin/``
(or ``<project>/.opencode/plugin/``).

Every change is a merge: other settings and other hooks stay as they are. Before a file is
changed its bytes are kept in ``<file>.mnemo-backup``; installing twice changes nothing the
second time. ``uninstall`` puts the backup back byte for byte when the file is still exactly
what mnemo wrote, and otherwise removes only mnemo's entries. The bookkeeping lives in
``installs.json`` in the mnemo home.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from .._settings import config as _config
from ..errors import InvalidInputError

#: Claude Code hook event → mnemo hook event
CLAUDE_EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt",
    "PreCompact": "pre-compact",
    "Stop": "stop",
    "SessionEnd": "session-end",
}
#: seconds Claude Code gives each hook before it gives up (ours are bounded far below this)
HOOK_TIMEOUT = 15
SERVER_NAME = "mnemo"
PLUGIN_NAME = "mnemo.js"


def mnemo_command() -> str:
    """How the assistant should run mnemo: this installation's script, else ``mnemo`` on PATH."""
    script = Path(sys.executable).with_name("mnemo")
    if script.exists():
        return str(script)
    return shutil.which("mnemo") or "mnemo"


def _is_ours(command: Any) -> bool:
    if not isinstance(command, str):
        return False
    try:
        parts = shlex.split(command)
    except ValueError:
        return False
    if len(parts) < 3 or parts[-2] != "hook" or parts[-1] not in CLAUDE_EVENTS.values():
        return False
    # the script, then only the --db / --model the installer put before ``hook``
    head = parts[:-2]
    while len(head) >= 3 and head[-2] in ("--db", "--model"):
        head = head[:-2]
    return Path(head[-1]).name == "mnemo"


# ---------------------------------------------------------------- file plans


def _targets(target: str, where: str, directory: str | os.PathLike[str] | None) -> list[Path]:
    home = Path.home()
    project = Path(directory or os.getcwd()).expanduser().resolve()
    if target == "claude-code":
        if where == "project":
            return [project / ".claude" / "settings.json", project / ".mcp.json"]
        return [home / ".claude" / "settings.json", home / ".claude.json"]
    if target == "opencode":
        if where == "project":
            files = [project / "opencode.json", project / ".opencode" / "plugin" / PLUGIN_NAME]
        else:
            config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "opencode"
            files = [config / "opencode.json", config / "plugin" / PLUGIN_NAME]
        jsonc = files[0].with_suffix(".jsonc")
        if jsonc.exists() and not files[0].exists():  # a second config file beside it would split the settings
            raise InvalidInputError(f"{jsonc} is OpenCode's config here, and mnemo does not rewrite JSON with comments; "
                                    "add mnemo's MCP entry and plugin by hand (docs/assistants.md)")
        return files
    raise InvalidInputError(f"unknown assistant {target!r}; choose claude-code or opencode")


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists() or not path.read_bytes().strip():
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"cannot merge into {path}: it is not plain JSON ({exc}); add mnemo's entries by hand (docs/assistants.md)") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"cannot merge into {path}: it is not a JSON object")
    return data


def _dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _with_claude_hooks(data: dict[str, Any], cmd: str, options: list[str]) -> dict[str, Any]:
    out = _without_claude_hooks(data)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInputError("the settings' \"hooks\" entry is not an object; fix it before installing")
    prefix = " ".join(shlex.quote(x) for x in [cmd, *options])
    for claude_event, event in CLAUDE_EVENTS.items():
        entry = {"hooks": [{"type": "command", "command": f"{prefix} hook {event}", "timeout": HOOK_TIMEOUT}]}
        hooks.setdefault(claude_event, []).append(entry)
    return out


def _without_claude_hooks(data: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(data))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for name in list(hooks):
        groups = hooks[name]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not (isinstance(h, dict) and _is_ours(h.get("command")))]
                if not inner and group["hooks"]:
                    continue  # the group only held mnemo's hook
                group = {**group, "hooks": inner}
            kept.append(group)
        if kept:
            hooks[name] = kept
        else:
            del hooks[name]
    if not hooks:
        del out["hooks"]
    return out


def _with_server(data: dict[str, Any], key: str, entry: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(data))
    servers = out.setdefault(key, {})
    if not isinstance(servers, dict):
        raise InvalidInputError(f"the \"{key}\" entry is not an object; fix it before installing")
    servers[SERVER_NAME] = entry
    return out


def _without_server(data: dict[str, Any], key: str) -> dict[str, Any]:
    out = json.loads(json.dumps(data))
    servers = out.get(key)
    if isinstance(servers, dict) and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del out[key]
    return out


def _plugin_source(cmd: str, options: list[str]) -> bytes:
    text = resources.files("mnemo").joinpath("data/opencode/mnemo.js").read_text("utf-8")
    text = text.replace('"__MNEMO_COMMAND__"', json.dumps(cmd)).replace("const OPTIONS = []", f"const OPTIONS = {json.dumps(options)}", 1)
    return text.encode("utf-8")


def store_options(db: str | None, model: str | None) -> list[str]:
    """The ``--db`` / ``--model`` the installed hooks, MCP server and plugin run with: the store
    and model given to ``mnemo install`` (a file's absolute path), none when not given (then
    they use the settings of the moment: MNEMO_DB, config.toml, the default store)."""
    from .._stores import is_url

    out: list[str] = []
    if db:
        out += ["--db", db if is_url(db) else str(Path(db).expanduser().resolve())]
    if model:
        out += ["--model", model]
    return out


def _desired(target: str, path: Path, current: bytes | None, cmd: str, *, install: bool, options: list[str] | None = None) -> bytes | None:
    """What ``path`` should hold after (un)installing; None means the file should not exist."""
    options = options or []
    if path.name == PLUGIN_NAME:
        return _plugin_source(cmd, options) if install else None
    data = _read_json(path) if current is not None else {}
    if target == "claude-code" and path.name == "settings.json":
        new = _with_claude_hooks(data, cmd, options) if install else _without_claude_hooks(data)
    elif target == "claude-code":
        entry = {"type": "stdio", "command": cmd, "args": [*options, "mcp"]}
        new = _with_server(data, "mcpServers", entry) if install else _without_server(data, "mcpServers")
    else:
        entry = {"type": "local", "command": [cmd, *options, "mcp"], "enabled": True}
        if install:
            new = _with_server(data, "mcp", entry)
            new.setdefault("$schema", "https://opencode.ai/config.json")
        else:
            new = _without_server(data, "mcp")
    if new == data and current is not None:
        return current  # nothing to change: keep the bytes as they are
    return _dump(new)


# ---------------------------------------------------------------- bookkeeping


def _manifest_path() -> Path:
    return _config.home() / "installs.json"


def _load_manifest() -> dict[str, Any]:
    p = _manifest_path()
    try:
        return json.loads(p.read_text("utf-8")) if p.exists() else {}
    except (OSError, ValueError):
        return {}


def _save_manifest(data: dict[str, Any]) -> None:
    p = _manifest_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2), "utf-8")
    os.replace(tmp, p)


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".mnemo-tmp")
    tmp.write_bytes(data)
    if path.exists():
        shutil.copymode(path, tmp)
    os.replace(tmp, path)


# ---------------------------------------------------------------- install / uninstall


def install(target: str, *, where: str = "user", directory: str | os.PathLike[str] | None = None,
            options: list[str] | None = None) -> dict[str, Any]:
    """Merge mnemo into ``target``'s settings (see the module docstring); returns what changed.
    ``options``: ``--db`` / ``--model`` for every command it installs (:func:`store_options`)."""
    cmd = mnemo_command()
    manifest = _load_manifest()
    files = []
    plans = []
    for path in _targets(target, where, directory):  # plan everything first: a bad file changes nothing
        current = path.read_bytes() if path.exists() else None
        plans.append((path, current, _desired(target, path, current, cmd, install=True, options=options)))
    for path, current, new in plans:
        assert new is not None
        if new == current:
            files.append({"path": str(path), "action": "unchanged"})
            continue
        record = manifest.get(str(path))
        backup = path.with_name(path.name + ".mnemo-backup")
        if record is None or record.get("written") != _sha(current):
            # the file as it is now is the state to come back to
            if current is not None:
                backup.write_bytes(current)
                shutil.copymode(path, backup)
            record = {"existed": current is not None, "backup": str(backup) if current is not None else None,
                      "created_dirs": [str(d) for d in _missing_dirs(path)]}
        _write(path, new)
        record["written"] = _sha(new)
        manifest[str(path)] = record
        files.append({"path": str(path), "action": "updated" if current is not None else "created",
                      "backup": record.get("backup")})
    _save_manifest(manifest)
    return {"target": target, "where": where, "command": cmd, "options": options or [], "files": files, "notes": _notes(target)}


def uninstall(target: str, *, where: str = "user", directory: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Undo :func:`install`: the original bytes if the file is untouched since, else only mnemo's entries removed."""
    cmd = mnemo_command()
    manifest = _load_manifest()
    files = []
    for path in _targets(target, where, directory):
        current = path.read_bytes() if path.exists() else None
        record = manifest.pop(str(path), None)
        if current is None:
            files.append({"path": str(path), "action": "absent"})
            continue
        if record is not None and record.get("written") == _sha(current):
            if record.get("existed") and record.get("backup") and Path(record["backup"]).exists():
                backup = Path(record["backup"])
                _write(path, backup.read_bytes())
                backup.unlink()
                files.append({"path": str(path), "action": "restored"})
            else:
                path.unlink()
                for d in record.get("created_dirs", []):
                    try:
                        Path(d).rmdir()  # only if empty: never remove what someone else put there
                    except OSError:
                        pass
                files.append({"path": str(path), "action": "removed"})
            continue
        new = _desired(target, path, current, cmd, install=False)
        if new is None:
            path.unlink()
            files.append({"path": str(path), "action": "removed"})
        elif new != current:
            _write(path, new)
            files.append({"path": str(path), "action": "entries removed (the file was changed since install)"})
        else:
            files.append({"path": str(path), "action": "unchanged"})
        if record and record.get("backup"):
            Path(record["backup"]).unlink(missing_ok=True)
    _save_manifest(manifest)
    return {"target": target, "where": where, "files": files, "notes": []}


def _missing_dirs(path: Path) -> list[Path]:
    """Folders above ``path`` that do not exist yet, deepest first (uninstall removes them if empty)."""
    out = []
    d = path.parent
    while not d.exists():
        out.append(d)
        d = d.parent
    return out


def _notes(target: str) -> list[str]:
    if target == "claude-code":
        return ["restart Claude Code (or run /hooks) to load the hooks; `mnemo pause` or MNEMO_DISABLE=1 turns injection off"]
    return ["restart OpenCode to load the plugin and the MCP server; `mnemo help assistant` says what OpenCode supports"]
