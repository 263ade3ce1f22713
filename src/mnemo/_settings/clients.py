"""The proxy's client keys: which chat client gets which scope (``mnemo proxy key add --scope …``).

A key is shown once, when it is made; the file keeps only its SHA-256, its id (the first
characters, to name it in ``key list``/``key remove``), its scope and a label. The file is
``<home>/proxy-keys.json``, 0600.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._base.models import check_scope, format_time, utcnow
from ..errors import InvalidInputError, NotFoundError

#: what every proxy key starts with (so a leaked one is recognisable, and never sent upstream)
PREFIX = "mnemo-pk-"


@dataclass(frozen=True)
class ClientKey:
    """One client key as stored: never the key itself."""

    id: str
    scope: str
    label: str
    created: str


def keys_path(home: Path) -> Path:
    return home / "proxy-keys.json"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _load(home: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(keys_path(home).read_text("utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{keys_path(home)} cannot be read ({exc}); move it aside to start over") from None
    return [k for k in data.get("keys", []) if isinstance(k, dict) and {"id", "sha256", "scope"} <= set(k)]


def _save(home: Path, keys: list[dict[str, Any]]) -> None:
    path = keys_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"keys": keys}, f, ensure_ascii=False, indent=2)
    os.replace(tmp, path)


def add_key(home: Path, scope: str, label: str = "") -> tuple[str, ClientKey]:
    """Make a key for ``scope``; returns the key (shown once) and what is kept of it."""
    scope = check_scope(scope)
    key = PREFIX + secrets.token_urlsafe(24)
    entry = {"id": key[len(PREFIX):][:8], "sha256": _digest(key), "scope": scope, "label": label, "created": format_time(utcnow())}
    _save(home, [*_load(home), entry])
    return key, ClientKey(entry["id"], scope, label, entry["created"])


def list_keys(home: Path) -> list[ClientKey]:
    """Every client key, oldest first (ids, scopes and labels; never the keys)."""
    return [ClientKey(k["id"], k["scope"], k.get("label", ""), k.get("created", "")) for k in _load(home)]


def remove_key(home: Path, key_id: str) -> ClientKey:
    """Revoke the key ``key_id``."""
    keys = _load(home)
    found = [k for k in keys if k["id"] == key_id]
    if not found:
        raise NotFoundError(f"no proxy key {key_id!r} (mnemo proxy key list)")
    _save(home, [k for k in keys if k["id"] != key_id])
    k = found[0]
    return ClientKey(k["id"], k["scope"], k.get("label", ""), k.get("created", ""))


def lookup(keys: list[ClientKey], digests: dict[str, str], presented: str) -> ClientKey | None:
    """The client key ``presented`` is, or None (compared in constant time)."""
    if not presented.startswith(PREFIX):
        return None
    want = _digest(presented)
    for k in keys:
        if hmac.compare_digest(digests.get(k.id, ""), want):
            return k
    return None


def load_for_serving(home: Path) -> tuple[list[ClientKey], dict[str, str]]:
    """The keys and their digests, for a server to check presented keys against."""
    raw = _load(home)
    return list_keys(home), {k["id"]: k["sha256"] for k in raw}
