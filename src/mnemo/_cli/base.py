"""What every ``mnemo`` command shares: the state (settings, JSON switch, the store opened on
demand), the ``command`` decorator with the shared options, the root group and ``OPERATIONS``.

Command modules (``cli`` and the ``_cli_*`` feature modules) register on ``main_group`` through
``command`` and add their command → operation pairs to ``OPERATIONS``.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import click

from .._settings import config as _config


class _LazyRender:
    """``render`` imported on first use: Rich costs ~30 ms that a --json run never needs."""

    def __getattr__(self, name: str) -> Any:
        from . import render as module

        return getattr(module, name)


_render: Any = _LazyRender()

#: CLI command → ``Mnemo`` operation (a test checks every operation is reachable)
OPERATIONS: dict[str, str] = {
    "init": "stats",
    "save": "remember",
    "search": "recall",
    "recent": "recent",
    "list": "list",
    "show": "get",
    "history": "history",
    "forget": "forget",
    "restore": "restore",
    "stats": "stats",
    "export": "export",
    "import": "import_",
    "reindex": "reindex",
    "doctor": "doctor",
    "purge": "purge",
    "redact": "redact",
    "edit": "edit",
    "review": "review",
    "confirm": "confirm",
    "gc": "gc",
    "consolidate": "consolidate",
    "resolve": "resolve",
}


class CLIState:
    """What every command needs: the JSON switch and a lazily opened store."""

    def __init__(self, as_json: bool, db: str | None, model: str | None, scope: str | None = None):
        self.as_json = as_json
        self.overrides = {"db": db, "model": model, "scope": scope}
        self.config = _config.load(self.overrides)

    def key(self, *, create: bool = False) -> str | None:
        """The encryption key this store needs (see :func:`mnemo._settings.door.store_key`)."""
        from .._settings.door import store_key

        return store_key(self.config, create=create, notice=_render.err.print)

    def open(self, *, create: bool = False) -> AbstractContextManager[Any]:
        """The store as a context manager, through the front door (a store this command created
        is removed again if the command then fails)."""
        from .._settings.door import opened

        return opened(self.config, create=create, notice=_render.err.print)

    def emit(self, data: Any, text: Callable[[], None]) -> None:
        if self.as_json:
            click.echo(json.dumps(_rounded(data), ensure_ascii=False, indent=2))
        else:
            text()


def _rounded(data: Any) -> Any:
    """``data`` with its floats cut to 9 significant digits: arithmetic leaves 0.6000000000000001
    where a person wrote 0.6, and no score or weight here means anything past that."""
    if isinstance(data, float):
        return float(f"{data:.9g}")
    if isinstance(data, dict):
        return {k: _rounded(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_rounded(v) for v in data]
    return data


def command(name: str, *, scope_option: bool = False, **kwargs: Any) -> Callable[[Callable[..., Any]], click.Command]:
    """A subcommand with the shared ``--db``, ``--model`` and ``--json`` options."""

    def wrap(fn: Callable[..., Any]) -> click.Command:
        @functools.wraps(fn)
        def run(*args: Any, db: str | None, model: str | None, as_json: bool, **kw: Any) -> Any:
            state = CLIState(as_json, db, model, kw.get("scope") if scope_option else None)
            return fn(state, *args, **kw)

        run = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts and agents.")(run)
        run = click.option("--model", help="Embedding model: e5, use, openai:<model>.")(run)
        run = click.option("--db", metavar="PATH|URL", help="Store file or postgresql:// URL (default: MNEMO_DB, config, or the mnemo home).")(run)
        return main_group.command(name, **kwargs)(run)

    return wrap


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="mnemo", prog_name="mnemo")
def main_group() -> None:
    """mnemo — local-first memory for AI assistants.

    Remember preferences, decisions and project context; recall them by meaning or by words,
    in Chinese and English, from one SQLite file on this machine.
    """


