"""Where an encrypted store's key comes from (entry points only; the library takes ``key=``).

Order: the ``MNEMO_KEY`` environment variable, then the OS keyring (when the optional
``keyring`` package is installed and holds a key for this store), then the key file
(``key_file`` setting, default ``<mnemo home>/key``), which mnemo creates with mode 0600.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreKeyError

KEYRING_SERVICE = "mnemo"


@dataclass(frozen=True)
class Key:
    value: str
    source: str  # "env", "keyring" or the key file's path
    warning: str | None = None  # e.g. a key file readable by others


def resolve(db: str, key_file: Path) -> Key | None:
    """The key for the store at ``db``, or None when no source has one."""
    env = os.environ.get("MNEMO_KEY")
    if env:
        return Key(env, "MNEMO_KEY")
    value = _from_keyring(db)
    if value:
        return Key(value, "keyring")
    if key_file.exists():
        return read_key_file(key_file)
    return None


def read_key_file(path: Path) -> Key:
    """Read a key file; a file others can read still works but comes with a warning."""
    try:
        value = path.read_text("utf-8").strip()
        mode = path.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreKeyError(f"cannot read the key file {path}: {exc}") from None
    if not value:
        raise StoreKeyError(f"the key file {path} is empty")
    warning = None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        warning = f"the key file {path} can be read by other users; run: chmod 600 {path}"
    return Key(value, str(path), warning)


def create_key_file(path: Path) -> Key:
    """Write a new random key to ``path`` (0600, refusing to overwrite one)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise StoreKeyError(f"a key file already exists at {path}; not overwriting it") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(value + "\n")
    return Key(value, str(path))


def replace_key_file(path: Path, value: str) -> None:
    """Atomically replace the key file's content (0600)."""
    tmp = path.with_name(path.name + ".new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(value + "\n")
    os.replace(tmp, path)


def new_key() -> str:
    return secrets.token_urlsafe(32)


def _from_keyring(db: str) -> str | None:
    try:
        import keyring  # optional dependency
    except ImportError:
        return None
    try:
        return keyring.get_password(KEYRING_SERVICE, str(Path(db).expanduser().resolve()))
    except Exception:  # no usable backend (headless machine): fall through to the key file
        return None
