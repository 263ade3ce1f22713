"""The warm local service (``mnemo serve``): keeps the model and the index loaded for hooks.

One service per store: it holds an exclusive ``flock`` on ``<store>.serve`` (which also records
its pid and socket) for as long as it runs, so a second one exits at once. It listens on a Unix
socket in a private 0700 folder (only this user can connect; nothing listens on the network),
answers one JSON request per connection, and exits after ``idle_seconds`` without a request
(or on SIGTERM / a ``stop`` request), removing its socket. Hooks start it on demand, detached
(:mod:`mnemo._hooks.client`), and work in-process when it is not there.

The store file may change under it. A file moved over the store (a new inode: what ``encrypt``,
``decrypt`` and ``rekey`` do) retires the service, since the new file may need a new key. A
file copied over it (``cp other.db memory.db``: same inode, new bytes) is noticed before the
next request and reopened (``Mnemo.refresh``). After each request that used the store, and
before answering it, the service writes the WAL back into the file and lets go of it (the model
and the vector index stay loaded), so that while it waits nothing of the old store is held open
to be mixed into a copy, and a client that copies a file over it once answered never meets the
service still at it. Requests are
served one at a time, so a request in progress always finishes on the handle it started with.

Requests: ``{"op": "ping"}``, ``{"op": "hook", "event", "payload", "settings"}``,
``{"op": "fill"}``, ``{"op": "stop"}``. Replies are one JSON object per line.

Background vectors: a bulk import or ingest with ``vectors="later"`` leaves its memories
searchable by their words and asks the service (``fill``; a service that starts also looks)
to embed them. It does so between requests, :data:`~mnemo._core.maintenance.FILL_STEP` memories at a time, so a hook
that arrives meanwhile waits for one batch at most; while work remains the service does not
count as idle.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from .._core.maintenance import FILL_STEP
from .._recall.embed import on_idle_cores
from .._stores import is_url
from ..errors import AlreadyServing, MnemoError, PayloadError, StoreError
from .client import lock_path, socket_path
from .handlers import run_hook

if TYPE_CHECKING:
    from .._core.mnemo import Mnemo

MAX_REQUEST = 16 * 1024 * 1024



class Service:
    """A warm service for one open store (see the module docstring)."""

    def __init__(self, m: "Mnemo", db: str, *, idle_seconds: float = 600.0,
                 cli: "Callable[[dict[str, Any]], dict[str, Any]] | None" = None,
                 every: "tuple[float, Callable[[], Any]] | None" = None, idle_threads: bool = False):
        self.m = m
        #: embed each request's query on the cores idle at that instant (the ``embed_threads``
        #: setting left at its default), not on the one thread the service starts with
        self.idle_threads = idle_threads
        #: (seconds, work) run between requests that often, and once more when the service stops
        #: (``mnemo sync`` of the setting ``sync_dir``)
        self.every = every
        self._last_periodic = time.monotonic()
        #: runs one ``mnemo`` command line on the warm store (given by the entry layer, which
        #: owns the command line: this surface must not import another)
        self.cli = cli
        self.db = db
        self.idle_seconds = float(idle_seconds)
        self.sock_path = socket_path(db)
        self.lock_path = lock_path(db)
        self._lock_fd: int | None = None
        self._stop = False
        self.served = 0
        self._identity = self._file_identity()
        #: memories may be waiting for their vector: looked at once as the service starts, then
        #: only after a ``fill`` request (between requests the service leaves the file alone)
        self._fill_pending = True
        self.filled = 0

    def _file_identity(self) -> tuple[int, int] | None:
        """The store file's (device, inode): `encrypt`, `decrypt` and `rekey` swap in a new file."""
        if is_url(self.db):
            return None
        try:
            st = os.stat(self.db)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def acquire(self) -> None:
        """Take the store's service lock, or raise :class:`AlreadyServing`."""
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:  # a store in a read-only folder or mount: hooks answer in-process
            raise StoreError(f"cannot serve {self.db}: its lock file {self.lock_path} cannot be written "
                             f"({exc.strerror}); hooks answer without a service") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise AlreadyServing(f"a mnemo service already serves {self.db}") from None
        self._lock_fd = fd
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "socket": self.sock_path}).encode())

    def warm(self) -> None:
        """Load the model, the vector index and the anchors now, not on the first prompt."""
        try:
            self.m.recall("warm up", top_k=1, touch=False)
        except MnemoError:
            pass  # an empty store or no model yet: the first real request will say what is wrong

    def run(self) -> dict[str, Any]:
        """Serve until idle, stopped or signalled; returns what it did."""
        if self._lock_fd is None:
            self.acquire()
        started = time.monotonic()
        old_term = signal.signal(signal.SIGTERM, self._on_signal)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.warm()  # before listening: until then hooks answer in-process instead of waiting
            self._fill_step()  # vectors an import left for later: looked for once now, not between requests
            self._settle()
            if os.path.exists(self.sock_path):
                os.unlink(self.sock_path)  # a dead service's socket: we hold the lock, so it is stale
            old_mask = os.umask(0o177)
            try:
                srv.bind(self.sock_path)
            finally:
                os.umask(old_mask)
            srv.listen(16)
            last = time.monotonic()
            while not self._stop and time.monotonic() - last < self.idle_seconds:
                srv.settimeout(0.01 if self._fill_pending else 0.5)  # background batches back to back, requests between them
                try:
                    conn, _ = srv.accept()
                except socket.timeout:
                    if self.every is not None and time.monotonic() - self._last_periodic >= self.every[0]:
                        self._periodic()
                    if self._fill_pending and self._fill_step():
                        last = time.monotonic()  # background work is not idleness
                    continue
                except InterruptedError:
                    continue
                last = time.monotonic()
                with conn:
                    self._serve_one(conn)
        finally:
            srv.close()
            try:
                os.unlink(self.sock_path)
            except OSError:
                pass
            if self.every is not None:
                self._periodic()  # the session's last changes reach the other devices
            signal.signal(signal.SIGTERM, old_term)
            self.release()
        return {"served": self.served, "seconds": round(time.monotonic() - started, 1), "db": self.db, "vectors_filled": self.filled}

    def _engine_threads(self) -> AbstractContextManager[Any]:
        """The embedding engine's threads for one request: as many as cores are idle right now.

        The service starts on one thread, because on a busy machine OpenMP threads that wait for
        each other made a hook's query 4x slower; but on an idle one a second thread halves it
        (a short question: 22 → 11 ms on two cores), and a hook is what the user waits for. The
        count is taken per request (``/proc/stat``'s running processes and the load average), so
        a build starting beside the assistant puts the next query back on one thread."""
        return on_idle_cores(self.m.embedder) if self.idle_threads else nullcontext()

    def _fill_step(self) -> bool:
        """Embed one batch of the memories still without a vector; True when one was embedded.
        A failure (another model's store, a damaged file) ends the background fill, reported on
        stderr: the memories stay searchable by their words and `mnemo reindex` says what is wrong."""
        if self._file_identity() != self._identity:
            self._fill_pending = False
            return False
        try:
            if self.m.refresh():
                return False  # the file was replaced since the last look (a copy may still be landing): next tick
        except Exception:
            self._fill_pending = False
            self._stop = True  # the store cannot be reopened: a new service will say why
            return False
        try:
            res = self.m.fill_vectors(limit=FILL_STEP, idle_cores=True)
        except Exception as exc:  # the hooks' service must outlive its background work
            sys.stderr.write(f"mnemo serve: background vectors stopped: {exc}\n")
            self._fill_pending = False
            return False
        self.filled += res["embedded"]
        self._fill_pending = not res["done"]
        self._settle()
        return res["embedded"] > 0

    def _periodic(self) -> None:
        """Run the periodic work; a failure is reported on stderr and the service goes on."""
        self._last_periodic = time.monotonic()
        assert self.every is not None
        try:
            self.every[1]()
        except Exception as exc:  # sync must never take the hooks' service down
            sys.stderr.write(f"mnemo serve: periodic work failed: {exc}\n")

    def release(self) -> None:
        if self._lock_fd is not None:
            os.ftruncate(self._lock_fd, 0)
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._stop = True

    def _serve_one(self, conn: socket.socket) -> None:
        conn.settimeout(5.0)
        data = b""
        try:
            while not data.endswith(b"\n") and len(data) <= MAX_REQUEST:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            req = json.loads(data.decode("utf-8"))
            reply = self.handle(req)
        except (OSError, ValueError) as exc:
            req, reply = None, {"stderr": f"mnemo serve: bad request ({exc})\n", "exit": 1}
        if not self._stop and isinstance(req, dict) and req.get("op") in ("hook", "cli"):
            # before the answer, not after it: a client that copies another store over the file
            # once it has its answer (cp other.db memory.db) must never meet this process still
            # checkpointing and closing it (it then read a half-copied file: an empty answer or a
            # dead service, in ~1 of 12 runs of the copy test). A ping, a fill or a stop opens nothing.
            self._settle()
        try:
            conn.sendall(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
        except OSError:
            pass  # the hook gave up waiting; it answered in-process
        self.served += 1

    def _settle(self) -> None:
        """After a request that used the store, before its answer: write the store's log back into
        its file, so that between requests the file alone holds the store and a copy over it is never read
        together with the old store's log (``Mnemo.refresh``)."""
        try:
            self.m.refresh(idle=True)
        except Exception:
            self._stop = True  # the store cannot be reopened: a new service will say why

    def handle(self, req: Any) -> dict[str, Any]:
        """Answer one request (never raises: a hook must always get an answer)."""
        if not isinstance(req, dict):
            return {"stderr": "mnemo serve: a request is a JSON object\n", "exit": 1}
        op = req.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid(), "db": self.db, "served": self.served}
        if op == "stop":
            self._stop = True
            return {"ok": True, "stopping": True}
        if op == "fill":
            self._fill_pending = True  # done between requests: the caller does not wait for it
            return {"ok": True, "pid": os.getpid(), "filled": self.filled}
        if op not in ("hook", "cli") or (op == "cli" and self.cli is None):
            return {"stderr": f"mnemo serve: unknown op {op!r}\n", "exit": 1}
        if self._file_identity() != self._identity:
            # the store was moved over (encrypt/decrypt/rekey swap in a new file, perhaps with a new
            # key): let the hook work in-process and make way for a new service with the new settings
            self._stop = True
            return {"stale": True}
        try:
            # a file copied over the store keeps its inode: reopen it before this request reads it
            self.m.refresh()
        except Exception:  # it cannot be opened as it is now: the hook says why in-process
            self._stop = True
            return {"stale": True}
        with self._engine_threads():
            return self._answer(op, req)

    def _answer(self, op: str, req: dict[str, Any]) -> dict[str, Any]:
        if op == "cli":
            try:
                return self.cli(req)  # type: ignore[misc]
            except Exception as exc:  # the client runs the command itself then
                return {"stale": True, "error": repr(exc)}
        event = str(req.get("event"))
        try:
            return run_hook(self.m, event, req.get("payload"), req.get("settings") or {})
        except (PayloadError, MnemoError) as exc:
            return {"stderr": f"mnemo hook {event}: {exc}\n", "exit": 1}
        except Exception as exc:  # a bug must not take the service (or the prompt) down
            return {"stderr": f"mnemo hook {event}: internal error: {exc!r}\n", "exit": 1}


def status(db: str) -> dict[str, Any]:
    """Whether a service serves ``db``, and its pid."""
    from .client import request

    reply = request(db, {"op": "ping"}, timeout=2.0)
    if reply and reply.get("ok"):
        return {"running": True, "pid": reply.get("pid"), "served": reply.get("served"), "db": db}
    return {"running": False, "db": db}


def stop(db: str) -> dict[str, Any]:
    """Ask the service of ``db`` to stop (it finishes the request it is answering)."""
    from .client import request

    reply = request(db, {"op": "stop"}, timeout=2.0)
    return {"stopped": bool(reply and reply.get("stopping")), "db": db}
