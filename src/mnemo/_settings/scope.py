"""Which scope a working directory belongs to: one resolution for every surface.

:func:`resolve_scope` is the one rule the CLI, the MCP server, the hooks, the warm service and
the Python entry points share: an explicit choice (a ``--scope`` flag, ``MNEMO_SCOPE``) >
``.mnemo.toml`` > the git project the folder belongs to > the ``scope`` setting of
``config.toml`` > ``global``. It also says *why* (``mnemo scope`` prints it).

A project's scope is ``project:<name>-<6 hex>``: the git root's folder name (readable) plus a short hash
of its absolute path, so two checkouts both named ``app`` never share memories. A
``.mnemo.toml`` at the repository root with ``scope = "project:…"`` overrides it (e.g. to share
memories between a checkout and its worktree). Without a git root the folder itself counts.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidInputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_NAME = ".mnemo.toml"


def find_project(cwd: str | os.PathLike[str]) -> Path | None:
    """The nearest folder at or above ``cwd`` with a ``.mnemo.toml`` or a ``.git`` (folder or
    worktree file), or None outside any project."""
    start = Path(cwd).expanduser().resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists() or (folder / CONFIG_NAME).is_file():
            return folder
    return None


def project_root(cwd: str | os.PathLike[str]) -> Path:
    """The project folder above ``cwd`` (:func:`find_project`), else ``cwd`` itself."""
    return find_project(cwd) or Path(cwd).expanduser().resolve()


@dataclass(frozen=True)
class ScopeChoice:
    """A resolved scope and the reason it won (shown by ``mnemo scope`` and ``mnemo config``)."""

    scope: str
    why: str
    root: str | None = None  # the project folder, when the folder decided


def resolve_scope(
    cwd: str | os.PathLike[str] | None = None,
    *,
    explicit: str | None = None,
    explicit_from: str = "flag",
    configured: str | None = None,
    configured_from: str = "config.toml",
) -> ScopeChoice:
    """The scope for work in ``cwd``: ``explicit`` (a flag or ``MNEMO_SCOPE``, named by
    ``explicit_from``) > the ``.mnemo.toml`` of the project > the git project's own scope
    (:func:`project_scope`) > ``configured`` (the config file's setting) > ``global``."""
    if explicit:
        return ScopeChoice(explicit, explicit_from)
    root = find_project(cwd if cwd is not None else os.getcwd())
    if root is not None:
        override = _configured_scope(root / CONFIG_NAME)
        if override:
            return ScopeChoice(override, f"{CONFIG_NAME} in {root}", str(root))
        return ScopeChoice(_folder_scope(root), f"the project at {root}", str(root))
    if configured:
        return ScopeChoice(configured, configured_from)
    return ScopeChoice("global", "default (no project here, no scope configured)")


def scope_from_setting(cwd: str | os.PathLike[str] | None, value: str, origin: str) -> ScopeChoice:
    """:func:`resolve_scope` for the ``scope`` setting as configuration gave it: from a flag or
    ``MNEMO_SCOPE`` it is explicit, from a config file it ranks below the folder's project, and
    its built-in default does not count."""
    from .._base.models import check_scope  # only here: the hook's fast path does not need it

    explicit = origin in ("flag", "MNEMO_SCOPE")
    configured = not explicit and origin != "default"
    choice = resolve_scope(cwd, explicit=value if explicit else None, explicit_from=origin,
                           configured=value if configured else None, configured_from=origin)
    return ScopeChoice(check_scope(choice.scope), choice.why, choice.root)


def project_scope(cwd: str | os.PathLike[str]) -> str:
    """The memory scope for work in ``cwd`` (see the module docstring)."""
    root = project_root(cwd)
    return _configured_scope(root / CONFIG_NAME) or _folder_scope(root)


def _folder_scope(root: Path) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", root.name.lower()).strip("-") or "root"
    digest = hashlib.sha1(str(root).encode("utf-8")).hexdigest()[:6]
    return f"project:{name}-{digest}"


def _configured_scope(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from None
    scope = data.get("scope")
    if scope is None:
        return None
    if not isinstance(scope, str):
        raise InvalidInputError(f"{path}: scope must be a string like \"project:myapp\"")
    from .._base.models import check_scope  # only here: the hook's fast path does not need it

    return check_scope(scope)
