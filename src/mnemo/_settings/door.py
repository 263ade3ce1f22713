"""The front door: settings in, an open :class:`~mnemo.Mnemo` out.

Every surface (the CLI, the MCP server, the hooks and their warm service, and the web app,
proxy and sync to come) opens its store here, so a setting means the same on each of them:
the store path or URL, the model, the scope, redaction, the chat endpoint and the key of an
encrypted store. The library itself takes explicit arguments and reads no settings.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .._stores import is_url, store_identity
from . import keys as _keys
from .config import Config

if TYPE_CHECKING:
    from .._core.mnemo import Mnemo

#: where a surface shows a line for the person (a new key file, a key readable by others)
Notice = Callable[[str], None]


def _silent(message: str) -> None:
    pass


def store_key(config: Config, *, create: bool = False, notice: Notice = _silent) -> str | None:
    """The encryption key the configured store needs: none for a plaintext store or a
    PostgreSQL one (the server protects it); for an encrypted file, or a new one when
    ``encrypt`` is on, the key from MNEMO_KEY, the keyring or the key file, which ``create``
    makes when there is none (and says so through ``notice``: the person must back it up)."""
    from .._stores.sqlite_file import is_encrypted

    db = config.db
    if is_url(db):
        return None
    exists = os.path.exists(db) and os.path.getsize(db) > 0
    if exists and not is_encrypted(db):
        return None
    if not exists and not config["encrypt"]:
        return None
    key = _keys.resolve(db, config.key_file)
    if key is None and create and not exists:
        key = _keys.create_key_file(config.key_file)
        notice(f"created the key file {key.source} (0600): back it up — without it the store cannot be read")
    if key is not None and key.warning:
        notice(f"warning: {key.warning}")
    return None if key is None else key.value


def open_mnemo(config: Config, *, create: bool = False, notice: Notice = _silent) -> Mnemo:
    """Open the store the settings name (creating it when ``create``); the caller closes it."""
    from .._core.capture import LLMBudget
    from .._core.mnemo import Mnemo

    m = Mnemo(
        config.db,
        model=config["model"],
        scope=config["scope"],
        create=create,
        half_life_days=config["half_life_days"],
        min_score=config["min_score"],
        embed_base_url=config["embed_base_url"] or None,
        threads=config["embed_threads"] or None,
        key=store_key(config, create=create, notice=notice),
        redactor=config.redactor(),
        decay_days=config["decay_days"],
        chat=config.chat(),
        read_only=config["read_only"],
    )
    # the LLM extractor's daily budgets hold on every surface (auto, the hooks, MCP, ask, chat, the proxy)
    m.llm_budget = LLMBudget(config["llm_max_calls_per_day"], config["llm_max_tokens_per_day"])
    return m


#: the open store of a long-running process (the warm service), lent to the commands it runs
_SHARED: dict[str, tuple[tuple[object, ...], Mnemo]] = {}
#: settings that do not change what an open store is: the scope is set per command, and the
#: service embeds on one thread whatever the setting says
_PER_CALL = frozenset({"scope", "embed_threads", "db", "context_top_k", "context_budget_tokens", "serve_idle_seconds"})


def _fingerprint(config: Config) -> tuple[object, ...]:
    """What must be equal for an open store to serve a command: the store (however its path or
    URL is spelled) and every setting that shapes the open store (model, ranking, redaction,
    the LLM endpoint, read-only…)."""
    return (store_identity(config.db), tuple(sorted((k, repr(v)) for k, v in config.values.items() if k not in _PER_CALL)))


def share(config: Config, m: Mnemo) -> None:
    """Lend ``m``, opened with ``config``, to every :func:`opened` of this process whose settings
    name the same store the same way (the warm service runs CLI commands on its warm store)."""
    _SHARED["store"] = (_fingerprint(config), m)


def unshare() -> None:
    """Stop lending the shared store (before it is closed)."""
    _SHARED.pop("store", None)


@contextmanager
def opened(config: Config, *, create: bool = False, notice: Notice = _silent) -> Iterator[Mnemo]:
    """:func:`open_mnemo` as a context manager that closes the store. A store this call created
    is removed again when the work inside fails: bad input must not leave an empty store behind.
    In the warm service, a store it shares (:func:`share`) is lent instead, with this command's
    scope, and stays open."""
    lent = _SHARED.get("store")
    if lent is not None and lent[0] == _fingerprint(config):
        m = lent[1]
        scope = m.scope
        m.scope = config["scope"]
        try:
            yield m
        finally:
            m.scope = scope
        return
    existed = os.path.exists(config.db)
    m = open_mnemo(config, create=create, notice=notice)
    try:
        yield m
    except BaseException:
        m.close()
        if create and not existed and not is_url(config.db):
            for suffix in ("", "-wal", "-shm"):
                Path(config.db + suffix).unlink(missing_ok=True)
        raise
    m.close()


#: the pause between two steps of a background fill, in which a waiting request takes the store
FILL_PAUSE = 0.02


class Serving:
    """The store of a surface that lives as long as its client (the MCP server, the web app, the
    proxy): opened through ``open_store`` on first use, and used by one call at a time, between
    two looks at the store file. A store copied over meanwhile (``cp other.db memory.db``) is
    reopened before the call reads it; once the surface is quiet the file is let go of until the
    next call (``Mnemo.refresh``), so a copy never meets this process's old state.

    ``idle_after``: how long after a call the file is let go of. 0 (MCP: a call now and then)
    lets go at once; a server taking bursts of requests (web, proxy) waits a moment, because
    letting go drops the connection's page cache and costs the next call ~10 ms."""

    def __init__(self, open_store: Callable[[], Mnemo], *, scope: str | None = None, idle_after: float = 0.0) -> None:
        import threading

        self._open = open_store
        self._m: Mnemo | None = None
        self._lock = threading.Lock()
        self._idle_after = idle_after
        self._calls = 0
        self._timer: threading.Timer | None = None
        #: the background fill of vectors a bulk write left for later (:meth:`fill_later`), and
        #: whether a write asked for it while it was finishing; under a lock of their own, not the
        #: store's, which a fill step holds (the web app asks from its event loop)
        self._filler: threading.Thread | None = None
        self._fill_again = False
        self._fill_lock = threading.Lock()
        #: the scope the store is given when opened (a surface may change it later: ``set_scope``)
        self.scope = scope

    @property
    def is_open(self) -> bool:
        """Whether the store has been opened yet."""
        return self._m is not None

    def mnemo(self) -> Mnemo:
        """The store, opened now if it is not yet (call it inside :meth:`call`)."""
        if self._m is None:
            self._m = self._open()
            if self.scope is not None:
                self._m.scope = self.scope
        return self._m

    def set_scope(self, scope: str) -> None:
        """The scope later calls use (an MCP client named its project after the server started)."""
        self.scope = scope
        if self._m is not None:
            self._m.scope = scope

    def call(self, fn: Callable[..., object], *args: object, **kwargs: object) -> object:
        """``fn(*args, **kwargs)`` alone with the store, between two looks at its file."""
        with self._lock:
            self._calls += 1
            if self._m is not None:
                self._m.refresh()
            try:
                return fn(*args, **kwargs)
            finally:
                if self._idle_after <= 0:
                    self._let_go()
                else:  # one timer at a time: each call restarts it
                    import threading

                    if self._timer is not None:
                        self._timer.cancel()
                    self._timer = threading.Timer(self._idle_after, self._let_go_if_quiet, args=(self._calls,))
                    self._timer.daemon = True
                    self._timer.start()

    def fill_later(self) -> None:
        """Embed, in a background thread, the memories a bulk write left without a vector
        (``vectors="later"``: an upload to the web app is searchable by its words at once).

        A step of :data:`~mnemo._core.maintenance.FILL_STEP` memories at a time, each one a
        :meth:`call` of its own, so a request waits for one step at most and every step sees the
        store file as the requests do. It stops when nothing is left, or at the first failure
        (reported on stderr: the memories stay searchable by their words, and ``mnemo reindex``
        says what is wrong). A running fill picks up what a later write leaves."""
        import threading

        with self._fill_lock:
            if self._filler is not None and self._filler.is_alive():
                self._fill_again = True  # it may have taken its last step already: it looks again
                return
            self._filler = threading.Thread(target=self._fill, name="mnemo-fill", daemon=True)
            self._filler.start()

    def _fill(self) -> None:
        import sys
        import time

        from .._core.maintenance import FILL_STEP

        while True:
            try:
                res = self.call(lambda: self.mnemo().fill_vectors(limit=FILL_STEP, idle_cores=True))
            except Exception as exc:  # the surface must outlive its background work
                sys.stderr.write(f"mnemo: background vectors stopped: {exc}\n")
                return
            if res["done"]:  # type: ignore[index]
                with self._fill_lock:
                    if not self._fill_again:
                        self._filler = None
                        return
                    self._fill_again = False
            # a lock is not a queue: without a pause this loop takes it again at once, and a
            # request waiting for it waited for many steps (2 s for a search, measured)
            time.sleep(FILL_PAUSE)

    def _let_go_if_quiet(self, calls: int) -> None:
        with self._lock:
            if self._calls == calls:  # no call since the one that set this timer
                self._let_go()

    def _let_go(self) -> None:
        from ..errors import MnemoError

        if self._m is not None:
            try:
                self._m.refresh(idle=True)
            except MnemoError:
                pass  # the next call's refresh says what is wrong with the file
