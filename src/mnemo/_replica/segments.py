"""Sync segments: the files one device writes into the shared folder, and their clock.

A segment is immutable once written (except that a purge erases what it held): a magic line with
the format version, a JSON header line, then the body: one JSON record per line (``put``: a
memory's state with its history, links and vector; ``purge``: a tombstone). The header carries
the body's SHA-256, so a segment still being copied by a sync tool, truncated or damaged is
recognised and skipped until it is whole; a newer format is skipped with a message. On an
encrypted store the body is sealed with AES-256-GCM (the ``cryptography`` package), under a key
derived from the store's key with HKDF, the header bound to it as associated data.

:class:`Clock` is a hybrid logical clock: versions compare as strings, later wall time first,
then a counter, then the device id, so every device orders two versions the same way.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInputError

MAGIC = "MNEMO-SYNC"
FORMAT = 1
SUFFIX = ".seg"


class SegmentError(InvalidInputError):
    """A segment that cannot be applied (yet): incomplete, damaged, from a newer mnemo, or sealed with another key."""


@dataclass(frozen=True)
class Segment:
    device: str
    number: int
    sha256: str
    records: list[dict[str, Any]]


def segment_name(number: int) -> str:
    return f"{number:08d}{SUFFIX}"


def segment_number(name: str) -> int | None:
    """The number in a segment's file name, or None for any other file (a sync tool's temp file, a conflict copy)."""
    if not name.endswith(SUFFIX) or name.startswith("."):
        return None
    stem = name[: -len(SUFFIX)]
    return int(stem) if stem.isdigit() and len(stem) == 8 else None


def _aead_key(store_key: str) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"mnemo-sync", info=b"segment-v1").derive(store_key.encode())


def encode(device: str, number: int, records: list[dict[str, Any]], *, key: str | None = None) -> bytes:
    """The bytes of a segment holding ``records`` (sealed when ``key`` is given)."""
    body = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records).encode()
    header: dict[str, Any] = {"device": device, "segment": number, "records": len(records), "created": int(time.time())}
    if key is not None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = os.urandom(12)
        header.update(cipher="aes-256-gcm", nonce=base64.b64encode(nonce).decode())
        body = AESGCM(_aead_key(key)).encrypt(nonce, body, f"{device}/{number}".encode())
    header["sha256"] = hashlib.sha256(body).hexdigest()
    return f"{MAGIC} {FORMAT}\n".encode() + json.dumps(header, separators=(",", ":")).encode() + b"\n" + body


def decode(data: bytes, *, key: str | None = None) -> Segment:
    """The segment in ``data``, or :class:`SegmentError` saying why it cannot be applied now."""
    first, _, rest = data.partition(b"\n")
    magic, _, version = first.decode("ascii", "replace").partition(" ")
    if magic != MAGIC:
        raise SegmentError("not a mnemo sync segment")
    if not version.isdigit():
        raise SegmentError("damaged (no format version)")
    if int(version) > FORMAT:
        raise SegmentError(f"written by a newer mnemo (segment format {version}; this mnemo reads {FORMAT}): upgrade mnemo")
    line, sep, body = rest.partition(b"\n")
    try:
        header = json.loads(line)
        device, number, want = str(header["device"]), int(header["segment"]), str(header["sha256"])
    except (ValueError, KeyError, TypeError):
        raise SegmentError("incomplete or damaged (its header cannot be read)") from None
    if not sep or hashlib.sha256(body).hexdigest() != want:
        raise SegmentError("incomplete or damaged (its checksum does not match: still being copied?)")
    if header.get("cipher"):
        if key is None:
            raise SegmentError("encrypted, and this store has no key (use the same key on every device)")
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            body = AESGCM(_aead_key(key)).decrypt(base64.b64decode(header["nonce"]), body, f"{device}/{number}".encode())
        except (InvalidTag, ValueError, KeyError):
            raise SegmentError("encrypted with another key (every device needs the same key)") from None
    try:
        records = [json.loads(line) for line in body.decode("utf-8").splitlines() if line.strip()]
    except (ValueError, UnicodeDecodeError):
        raise SegmentError("damaged (a record is not JSON)") from None
    if len(records) != int(header.get("records", len(records))) or not all(isinstance(r, dict) for r in records):
        raise SegmentError("damaged (its records do not match its header)")
    return Segment(device, number, want, records)


class Clock:
    """A hybrid logical clock for one device: ``tick()`` gives a version later than any this
    device has made or seen; ``seen(version)`` moves it past a version from elsewhere."""

    def __init__(self, device: str, last: str | None = None) -> None:
        self.device = device
        self.wall, self.count = _parse(last) if last else (0, 0)

    def tick(self) -> str:
        now = int(time.time() * 1000)
        if now > self.wall:
            self.wall, self.count = now, 0
        else:
            self.count += 1
        return self.version()

    def seen(self, version: str) -> None:
        wall, count = _parse(version)
        if (wall, count) > (self.wall, self.count):
            self.wall, self.count = wall, count

    def version(self) -> str:
        return f"{self.wall:013d}.{self.count:06d}.{self.device}"


def _parse(version: str) -> tuple[int, int]:
    try:
        wall, count, _ = version.split(".", 2)
        return int(wall), int(count)
    except ValueError:
        return 0, 0
