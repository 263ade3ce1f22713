"""Which project scope a working directory belongs to.

The scope is ``project:<name>-<6 hex>``: the git root's folder name (readable) plus a short hash
of its absolute path, so two checkouts both named ``app`` never share memories. A
``.mnemo.toml`` at the repository root with ``scope = "project:…"`` overrides it (e.g. to share
memories between a checkout and its worktree). Without a git root the folder itself counts.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

from .errors import InvalidInputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_NAME = ".mnemo.toml"


def project_root(cwd: str | os.PathLike[str]) -> Path:
    """The git root above ``cwd`` (a ``.git`` folder or worktree file), else ``cwd`` itself."""
    start = Path(cwd).expanduser().resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists() or (folder / CONFIG_NAME).is_file():
            return folder
    return start


def project_scope(cwd: str | os.PathLike[str]) -> str:
    """The memory scope for work in ``cwd`` (see the module docstring)."""
    root = project_root(cwd)
    override = _configured_scope(root / CONFIG_NAME)
    if override:
        return override
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
    from ._models import check_scope  # only here: the hook's fast path does not need it

    return check_scope(scope)
