"""Settings: ``config.toml`` in the mnemo home plus ``MNEMO_*`` environment variables.

Only entry points (the CLI, servers, hooks) read these; the library takes explicit arguments.
Precedence, lowest first: built-in default < ``config.toml`` < environment < command-line flag.

The hook client loads these on every prompt, in a new process: this module imports only ``os``
and ``sys`` at the top (no dataclasses, pathlib, typing or tomllib: together ~25 ms of a hook's
~60 ms), and finds the home folder without platformdirs on Linux (another ~14 ms).
"""

from __future__ import annotations

import os
import sys

from ..errors import InvalidInputError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the hook's fast path
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Callable


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


class Setting:
    """One setting: its name, built-in default, converter and one line of help."""

    __slots__ = ("name", "default", "kind", "help")

    def __init__(self, name: str, default: Any, kind: Callable[[Any], Any], help: str):
        self.name, self.default, self.kind, self.help = name, default, kind, help

    def __repr__(self) -> str:
        return f"Setting({self.name!r}, {self.default!r})"

    @property
    def env(self) -> str:
        return "MNEMO_" + self.name.upper()


def _path(value: Any) -> str:
    return str(value)


def _patterns(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(value)
    return dict(value)


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(value)


SETTINGS: tuple[Setting, ...] = (
    Setting("db", "", _path, "store file (default: memory.db in the mnemo home)"),
    Setting("model", "e5", str, "embedding model: e5 (default, best recall), use (fastest), openai:<model>"),
    Setting("scope", "global", str, "scope that save writes to and that search adds to global (e.g. project:myapp)"),
    Setting("top_k", 5, int, "how many results search returns by default"),
    Setting("min_score", 0.15, float, "relevance floor on the final score; below it recall returns nothing"),
    Setting("half_life_days", 90.0, float, "recency half-life for ranking, in days"),
    Setting("decay_days", 90.0, float, "memories unused this long rank lower (importance ≥ 0.8 and pinned exempt)"),
    Setting("archive_days", 180.0, float, "mnemo gc archives memories unused this long (same exemptions)"),
    Setting("embed_threads", 0, int, "threads for the embedding model (0 = the cores not busy when it starts)"),
    Setting("embed_base_url", "", str, "OpenAI-compatible endpoint for model openai:<model> (e.g. http://localhost:11434/v1)"),
    Setting("embed_api_key_env", "MNEMO_EMBED_API_KEY", str, "name of the environment variable holding that endpoint's API key"),
    Setting("llm_base_url", "", str, "OpenAI-compatible chat endpoint (off when empty): judges unclear duplicates/conflicts, writes summaries"),
    Setting("llm_model", "", str, "model name for that endpoint"),
    Setting("llm_api_key_env", "MNEMO_LLM_API_KEY", str, "name of the environment variable holding its API key"),
    Setting("capture_llm", False, _bool, "mnemo auto (and the assistant hooks) extract memories with the LLM endpoint instead of the rules"),
    Setting("llm_max_calls_per_day", 200, int, "daily cap on LLM extraction calls; over it capture falls back to the rules"),
    Setting("llm_max_tokens_per_day", 200_000, int, "daily cap on LLM extraction tokens (from the endpoint's usage, else estimated)"),
    Setting("redact", True, _bool, "mask secrets and personal data before anything is stored, embedded or sent"),
    Setting("redact_disable", "", str, "comma-separated detectors to turn off (see `mnemo redact --help`)"),
    Setting("redact_enable", "", str, "comma-separated detectors that are off by default to turn on (ip)"),
    Setting("redact_allow", "", str, "comma-separated exact strings never to mask (false positives)"),
    Setting("redact_patterns", {}, _patterns, "config.toml table of extra patterns: NAME = \"regex\" (masked as [NAME])"),
    Setting("encrypt", False, _bool, "create new stores encrypted (the key: MNEMO_KEY, the OS keyring, or key_file)"),
    Setting("read_only", False, _bool, "open the store for reading only (one that cannot be written is opened that way by itself)"),
    Setting("key_file", "", _path, "key file of an encrypted store (default: key in the mnemo home; created 0600)"),
    Setting("chunk_chars", 512, int, "mnemo ingest: about how many characters one chunk of a document holds"),
    Setting("ingest_max_bytes", 20 * 1024 * 1024, int, "mnemo ingest: files (and web pages) larger than this are skipped with a message"),
    Setting("context_top_k", 5, int, "most memories injected per prompt by mnemo context and the assistant hooks"),
    Setting("context_budget_tokens", 400, int, "token budget of an injected context block (estimated offline; session start gets 1.5x)"),
    Setting("mcp_consolidate_apply", False, _bool, "let an assistant apply consolidate through MCP (default: it can only preview)"),
    Setting("serve_idle_seconds", 600.0, float, "the warm service (mnemo serve) exits after this long unused; 0: hooks and commands typed at a terminal never start it"),
    Setting("sync_dir", "", _path, "a folder shared by your devices (Syncthing, Dropbox, iCloud…): mnemo sync's default; the warm service syncs every 5 minutes"),
)
_BY_NAME = {s.name: s for s in SETTINGS}


def mnemo_version() -> str:
    """mnemo's version as the installed package reports it (``mnemo --version`` says the same)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mnemo")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def home() -> Path:
    """The mnemo home: ``MNEMO_HOME``, else the platform's user data folder."""
    from pathlib import Path

    return Path(home_dir())


def home_dir() -> str:
    """:func:`home` as a string, found without pathlib (and, on Linux, without platformdirs,
    whose import cost every hook ~14 ms): the XDG rule platformdirs applies there."""
    env = os.environ.get("MNEMO_HOME")
    if env:
        return os.path.expanduser(env)
    android = os.environ.get("ANDROID_DATA") == "/data" and os.environ.get("ANDROID_ROOT") == "/system"
    if sys.platform.startswith("linux") and not android:
        data = os.environ.get("XDG_DATA_HOME", "")
        return os.path.join(data if data.strip() else os.path.expanduser("~/.local/share"), "mnemo")
    import platformdirs

    return platformdirs.user_data_dir("mnemo", appauthor=False)


def config_path() -> Path:
    """The settings file: ``config.toml`` in the mnemo home."""
    from pathlib import Path

    return Path(_config_file())


def _config_file() -> str:
    return os.path.join(home_dir(), "config.toml")


class Config:
    """The effective settings (``values``), where each came from (``origins``), and the scope
    setting before it was resolved for a folder (``raw_scope``: value, origin), which a service
    resolves again for each hook payload's own working folder."""

    def __init__(self, values: dict[str, Any], origins: dict[str, str], raw_scope: tuple[str, str] = ("global", "default")):
        self.values, self.origins, self.raw_scope = values, origins, raw_scope

    def __repr__(self) -> str:
        return f"Config(db={self.db!r}, origins={len(self.origins)})"

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def db(self) -> str:
        return self.values["db"] or os.path.join(home_dir(), "memory.db")

    def redactor(self) -> Any:
        """The configured Redactor, or False when redaction is off."""
        if not self.values["redact"]:
            return False
        from .._privacy.redact import Redactor

        def items(name: str) -> list[str]:
            return [x.strip() for x in str(self.values[name]).split(",") if x.strip()]

        try:
            return Redactor(disabled=items("redact_disable"), enabled=items("redact_enable"),
                            extra_patterns=self.values["redact_patterns"], allow=items("redact_allow"))
        except ValueError as exc:
            raise InvalidInputError(f"redaction settings: {exc}") from None

    def chat(self) -> Any:
        """The configured chat client, or None when no endpoint is set."""
        if not self.values["llm_base_url"]:
            return None
        from .._llm.chat import ChatClient, ChatError

        if not self.values["llm_model"]:
            raise InvalidInputError("llm_base_url is set but llm_model is not")
        try:
            return ChatClient(self.values["llm_base_url"], self.values["llm_model"], api_key_env=self.values["llm_api_key_env"])
        except ChatError as exc:
            raise InvalidInputError(str(exc)) from None

    @property
    def key_file(self) -> Path:
        from pathlib import Path

        return Path(self.values["key_file"]).expanduser() if self.values["key_file"] else home() / "key"


def load(overrides: dict[str, Any] | None = None, *, cwd: str | os.PathLike[str] | None = None,
         resolve_scope: bool = True) -> Config:
    """The effective settings and where each came from (default, config file, env, flag).

    ``scope`` is resolved for the working folder ``cwd`` (default: this process's) by the one
    rule every surface shares (:func:`mnemo._settings.scope.resolve_scope`): a flag or ``MNEMO_SCOPE``
    > ``.mnemo.toml`` > the git project > ``config.toml`` > global. ``resolve_scope=False``
    leaves ``values["scope"]`` as configured (``raw_scope``): for the hook client, which hands
    the setting to the warm service, where each payload's own folder resolves it."""
    values = {s.name: s.default for s in SETTINGS}
    origins = {s.name: "default" for s in SETTINGS}
    path = _config_file()
    if os.path.exists(path):
        tomllib = _toml()
        try:
            with open(path, encoding="utf-8") as f:
                data = tomllib.loads(f.read())
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise InvalidInputError(f"cannot read {path}: {exc}") from None
        for key, value in data.items():
            if key not in _BY_NAME:
                raise InvalidInputError(f"{path}: unknown setting {key!r} (known: {', '.join(_BY_NAME)})")
            values[key] = _convert(_BY_NAME[key], value, str(path))
            origins[key] = str(path)
    for s in SETTINGS:
        raw = os.environ.get(s.env)
        if raw not in (None, ""):
            values[s.name] = _convert(s, raw, s.env)
            origins[s.name] = s.env
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = _convert(_BY_NAME[key], value, "flag")
            origins[key] = "flag"
    if not values["db"]:
        origins["db"] = origins["db"] if origins["db"] != "default" else "default (MNEMO_HOME)"
    raw_scope = (values["scope"], origins["scope"])
    if not resolve_scope:
        return Config(values, origins, raw_scope)
    from .scope import scope_from_setting

    choice = scope_from_setting(cwd, *raw_scope)
    values["scope"], origins["scope"] = choice.scope, choice.why
    return Config(values, origins, raw_scope)


def _convert(s: Setting, value: Any, where: str) -> Any:
    try:
        return s.kind(value)
    except (TypeError, ValueError):
        kind = {"_bool": "true/false", "_path": "path", "_patterns": "table of NAME = \"regex\""}.get(s.kind.__name__, s.kind.__name__)
        raise InvalidInputError(f"{where}: setting {s.name} = {value!r} is not a valid {kind}") from None
