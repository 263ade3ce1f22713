"""Small file chores several wings share: whether another process holds a file's lock (a
running warm service, a running rekey's ``key.pending``, a running conversion's hidden copies),
and flushing a file or a folder entry to disk before a rename is relied on.

Standard library only, so the hook fast path can use it too.
"""

from __future__ import annotations

import os


def held_by_another(path: str | os.PathLike[str]) -> bool | None:
    """True when another process holds an exclusive ``flock`` on ``path``; False when nobody
    does or the file is not there; None where there is no ``flock`` (Windows)."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def fsync_path(path: str | os.PathLike[str]) -> None:
    """Flush ``path``'s data to disk (best effort: a file that is gone or a folder on a platform
    that cannot open one is left alone)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (a rename inside it) to disk; POSIX only."""
    if os.name == "posix":
        fsync_path(folder)
