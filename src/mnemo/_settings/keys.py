"""Where an encrypted store's key comes from (entry points only; the library takes ``key=``).

Order: the ``MNEMO_KEY`` environment variable, then the OS keyring (when the optional
``keyring`` package is installed and holds a key for this store), then the key file
(``key_file`` setting, default ``<mnemo home>/key``), which mnemo creates with mode 0600.

``mnemo rekey`` writes the new key to ``key.pending`` beside the key file before it changes the
store, holds a lock on it while it runs, and renames it over the key file once the store has the
new key. A rekey killed after the store's swap leaves a store only ``key.pending`` opens: reading
the key file then notices, and finishes the rekey (renames ``key.pending`` over the key file). A
``key.pending`` that opens nothing (a rekey killed before the swap) is removed.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from .._base.files import fsync_dir
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
    pending = pending_path(key_file)
    if pending.exists():
        return _settle_pending(db, key_file, pending)
    if key_file.exists():
        return read_key_file(key_file)
    return None


def pending_path(key_file: Path) -> Path:
    """Where ``mnemo rekey`` keeps the new key until the store has it."""
    return key_file.with_name(key_file.name + ".pending")


def _settle_pending(db: str, key_file: Path, pending: Path) -> Key | None:
    """The key file's key, after finishing or clearing what an interrupted rekey left."""
    current = read_key_file(key_file) if key_file.exists() else None
    if _held(pending):  # a rekey is running: its key.pending is not ours to touch
        return current
    from .._stores.sqlite_convert import opens_with
    from .._stores.sqlite_file import is_encrypted

    if not os.path.exists(db) or not is_encrypted(db):
        return current
    if current is not None and opens_with(db, current.value):
        pending.unlink(missing_ok=True)  # a rekey killed before it changed the store: its new key opens nothing
        return current
    new = read_key_file(pending)
    if not opens_with(db, new.value):
        return current  # neither opens the store: the open says "wrong key"
    os.replace(pending, key_file)  # a rekey killed after the store's swap: finish it
    fsync_dir(key_file.parent)
    note = f"finished an interrupted `mnemo rekey`: {key_file} now holds the store's new key"
    return Key(new.value, str(key_file), note if new.warning is None else f"{note}; {new.warning}")


def _held(path: Path) -> bool:
    """Whether another process holds the lock on ``path`` (a running rekey's key.pending)."""
    from .._base.files import held_by_another

    return bool(held_by_another(path))


def pending_problem(db: str, key_file: Path) -> str | None:
    """What ``mnemo doctor`` should say about a ``key.pending`` beside the key file, if any."""
    pending = pending_path(key_file)
    if not pending.exists():
        return None
    if _held(pending):
        return f"{pending}: a `mnemo rekey` is running (let it finish)"
    from .._stores.sqlite_convert import opens_with

    try:
        value = read_key_file(pending).value
    except StoreKeyError as exc:
        return f"{pending}: left by an interrupted `mnemo rekey` ({exc}); it opens nothing: delete it"
    if opens_with(db, value):
        return (f"{pending}: the store's key after an interrupted `mnemo rekey`; any mnemo command that reads "
                f"the key file makes it the key file (or: mv {pending} {key_file})")
    return f"{pending}: left by an interrupted `mnemo rekey`; it does not open the store: delete it"


def write_pending(db: str, key_file: Path, value: str) -> int:
    """Write ``value`` to ``key.pending`` (0600, atomically) and hold a lock on it; returns the
    descriptor to close when the rekey is over. Refuses while another rekey runs, or when a
    pending key still opens the store (it is then the only key that does)."""
    pending = pending_path(key_file)
    if pending.exists():
        if _held(pending):
            raise StoreKeyError(f"another `mnemo rekey` is running ({pending} is in use); let it finish")
        from .._stores.sqlite_convert import opens_with

        try:
            old = read_key_file(pending).value
        except StoreKeyError:
            old = None
        if old is not None and opens_with(db, old):
            raise StoreKeyError(f"{pending} holds the key that opens the store (an interrupted rekey); not "
                                f"overwriting it: run `mnemo stats` to finish that rekey, then `mnemo rekey` again")
    tmp = pending.with_name(f".{pending.name}.new-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:
            pass
        os.write(fd, (value + "\n").encode("utf-8"))
        os.fsync(fd)
        os.replace(tmp, pending)  # visible only once complete, and already locked
        fsync_dir(pending.parent)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    return fd


def commit_pending(key_file: Path, value: str) -> None:
    """The store has the new key: ``key.pending`` becomes the key file (another process may
    have done it already, finding the store's new key there)."""
    pending = pending_path(key_file)
    try:
        os.replace(pending, key_file)
        fsync_dir(key_file.parent)
        return
    except FileNotFoundError:
        pass
    try:
        if key_file.read_text("utf-8").strip() == value:
            return
    except OSError:
        pass
    replace_key_file(key_file, value)


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
    """Write a new random key to ``path`` (0600, refusing to overwrite one). The key is written
    and synced under a temporary name first and then linked into place, so a run killed midway
    never leaves an empty or half-written key file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = secrets.token_urlsafe(32)
    if path.exists():
        raise StoreKeyError(f"a key file already exists at {path}; not overwriting it")
    tmp = _write_tmp(path, value)
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise StoreKeyError(f"a key file already exists at {path}; not overwriting it") from None
    except OSError:  # a filesystem without hard links
        if path.exists():
            raise StoreKeyError(f"a key file already exists at {path}; not overwriting it") from None
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return Key(value, str(path))


def replace_key_file(path: Path, value: str) -> None:
    """Atomically replace the key file's content (0600)."""
    tmp = _write_tmp(path, value)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _write_tmp(path: Path, value: str) -> Path:
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(value + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


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
