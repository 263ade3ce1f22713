"""The fast path for ``mnemo hook EVENT``: Claude Code runs it on every prompt, as a new process.

When the warm service (``mnemo serve``) answers, this module is all that runs: it imports the
standard library's ``json``, ``socket`` and ``fcntl`` plus mnemo's small settings and hook-format
modules, never numpy, apsw, click or rich. When no service answers, it starts one in the
background (detached, so the hook never waits for a model to load) and handles the event
in-process this time.

The ``mnemo`` console script (:func:`mnemo.__main__.launch`) sends ``mnemo hook …`` here before
the click CLI (and its imports) is loaded.
"""

from __future__ import annotations

# _socket and _sha1: the C modules under ``socket`` and ``hashlib``, whose wrappers cost a hook
# ~4 ms of imports (enum, selectors, OpenSSL) for a connect, a send, a receive and one SHA-1
import _socket
import json
import os
import sys

try:
    from _sha1 import sha1 as _sha1
except ImportError:  # pragma: no cover - a Python built without its own SHA-1
    from hashlib import sha1 as _sha1

from .._stores import is_url, store_identity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~7 ms) on the fast path
if TYPE_CHECKING:
    from typing import Any

#: the most a hook reads from stdin (a prompt with a pasted file can be large, not unbounded)
MAX_PAYLOAD = 8 * 1024 * 1024
#: how long a hook waits for the warm service before handling the event itself
CONNECT_TIMEOUT = 0.2
REPLY_TIMEOUT = 5.0
#: a hook gives up after this long (Claude Code's own limit for mnemo's hooks is 15 s)
DEADLINE = 12


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def runtime_dir() -> str:
    """A private folder (0700, ours) for service sockets: short paths, since a Unix socket's
    path is limited to ~100 bytes and a store may live deep in a folder tree. (Plain ``os``
    calls: pathlib and tempfile would cost the hook's fast path ~10 ms of imports.)"""
    parent = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    base = os.path.join(parent, f"mnemo-{os.getuid()}")
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    st = os.stat(base)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{base} is not a private folder of this user; refusing to use it")
    return base


def _digest(db: str) -> str:
    return _sha1(store_identity(db).encode("utf-8")).hexdigest()[:16]


def socket_path(db: str) -> str:
    """The service socket for the store at ``db`` (one per store)."""
    return os.path.join(runtime_dir(), f"{_digest(db)}.sock")


def lock_path(db: str) -> str:
    """The service's lock/pid file, next to a store file (in the private folder for a database
    URL): held with ``flock`` while it serves."""
    if is_url(db):
        return os.path.join(runtime_dir(), f"{_digest(db)}.serve")
    return os.path.realpath(db) + ".serve"


def live_socket(db: str) -> str | None:
    """The store's service socket when one is there to ask, else None."""
    try:
        path = socket_path(db)
    except OSError:
        return None
    return path if os.path.exists(path) else None


def request(db: str, message: dict[str, Any], *, timeout: float = REPLY_TIMEOUT) -> dict[str, Any] | None:
    """Send one request to the store's warm service; None when no service answers in time."""
    return _ask(db, message, timeout=timeout)[0]


def _ask(db: str, message: dict[str, Any], *, timeout: float = REPLY_TIMEOUT) -> tuple[dict[str, Any] | None, bool]:
    """:func:`request`, and whether the request reached a service whose answer was then lost."""
    path = live_socket(db)
    if path is None:
        return None, False
    sent, reply = exchange(path, message, timeout=timeout)
    if sent and isinstance(reply, dict) and not reply.get("stale"):
        return reply, False
    return None, sent and reply is None


def exchange(path: str, message: dict[str, Any], *, timeout: float) -> tuple[bool, Any]:
    """Send ``message`` to the service listening at ``path`` and read its one-line answer.
    ``(sent, reply)``: ``sent`` is False when nothing reached it (no service: the caller may do
    the work itself); ``reply`` is None when the answer was lost after sending (the service may
    have done the work: the caller must not do it again)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(path)
            sock.settimeout(timeout)
            sock.sendall(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        except OSError:
            return False, None
        try:
            chunks = []
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if chunk.endswith(b"\n"):
                    break
            return True, json.loads(b"".join(chunks) or b"null")
        except (OSError, ValueError):
            return True, None
    finally:
        sock.close()


def service_running(db: str) -> bool:
    """Whether a service holds the store's lock (it may still be starting)."""
    from .._base.files import held_by_another

    return bool(held_by_another(lock_path(db)))


def _can_lock(db: str) -> bool:
    """Whether a service could take the store's lock file: not beside a store in a read-only
    folder or mount (the hook then answers in-process every time, as it must anyway)."""
    path = lock_path(db)
    return os.access(path, os.W_OK) if os.path.exists(path) else os.access(os.path.dirname(path), os.W_OK)


def start_service(db: str, idle_seconds: float, *, model: str | None = None) -> None:
    """Start ``mnemo serve`` for ``db`` (with ``model`` when one was given) in the background,
    detached from this process."""
    import subprocess

    subprocess.Popen(
        [sys.executable, "-m", "mnemo", "serve", "--db", db, *(["--model", model] if model else []),
         "--idle", str(idle_seconds), "--json"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )


class _Deadline(BaseException):
    """Raised by the alarm; a BaseException so that no ``except Exception`` on the way swallows it."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Deadline()


def hook_main(event: str, *, db: str | None = None, model: str | None = None, stdin: Any = None) -> int:
    """Run one hook: read the payload, answer via the service or in-process. Returns the exit code.
    ``db`` and ``model``: the ``--db`` / ``--model`` it was run with (``mnemo install --db …``).

    Never hangs the user: the whole hook is bounded by ``DEADLINE`` seconds."""
    import signal

    try:
        old = signal.signal(signal.SIGALRM, _on_alarm)
    except ValueError:  # not the main thread (an embedding application): no alarm, just the timeouts
        return _hook(event, db=db, model=model, stdin=stdin)
    signal.alarm(DEADLINE)
    try:
        return _hook(event, db=db, model=model, stdin=stdin)
    except _Deadline:
        sys.stderr.write(f"mnemo hook {event}: gave up after {DEADLINE} s; nothing injected\n")
        return 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _hook(event: str, *, db: str | None, model: str | None, stdin: Any) -> int:
    from ..errors import PayloadError
    from .handlers import check_payload

    raw = (stdin or sys.stdin.buffer).read(MAX_PAYLOAD + 1)
    if _truthy(os.environ.get("MNEMO_DISABLE")):
        return 0
    try:
        if len(raw) > MAX_PAYLOAD:
            raise PayloadError(f"the hook payload is over {MAX_PAYLOAD // 1024 // 1024} MB")
        try:
            payload = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
        except (UnicodeDecodeError, ValueError) as exc:
            raise PayloadError(f"the hook payload is not JSON ({exc})") from None
        check_payload(event, payload)
    except PayloadError as exc:
        sys.stderr.write(f"mnemo hook {event}: {exc}\n")
        return 1
    try:
        from .._settings import config as _config

        # the scope setting as configured: the service resolves it for the payload's own folder
        cfg = _config.load({"db": db, "model": model}, resolve_scope=False)
    except Exception as exc:  # a broken config.toml must not block the prompt
        sys.stderr.write(f"mnemo hook {event}: {exc}\n")
        return 1
    path = cfg.db
    if not is_url(path) and not os.path.exists(path):
        sys.stderr.write(f"mnemo: no store at {path} yet (`mnemo init` creates it); nothing to do\n")
        return 0
    settings = {"context_top_k": cfg["context_top_k"], "context_budget_tokens": cfg["context_budget_tokens"], "scope": list(cfg.raw_scope)}
    reply, lost = _ask(path, {"op": "hook", "event": event, "payload": payload, "settings": settings})
    if reply is None:
        settings["retry"] = lost  # the service may have recorded an injection this process never saw
        idle = float(cfg["serve_idle_seconds"])
        if idle > 0 and not service_running(path) and _can_lock(path):
            try:
                start_service(path, idle, model=model)
            except OSError:
                pass  # the in-process answer below still works
        reply = _in_process(event, payload, settings, db, model)
    if reply.get("stdout"):
        sys.stdout.write(reply["stdout"] + "\n")
    if reply.get("stderr"):
        sys.stderr.write(reply["stderr"])
    return int(reply.get("exit", 0))


def _in_process(event: str, payload: dict[str, Any], settings: dict[str, Any], db: str | None, model: str | None = None) -> dict[str, Any]:
    """Handle the event in this process (no service): open the store, run the hook, close it."""
    from .._settings import config as _config
    from .._settings.door import opened
    from ..errors import MnemoError, StoreMissingError
    from .handlers import run_hook

    try:
        config = _config.load({"db": db, "model": model})
        one_thread(config)
        with opened(config) as m:
            return run_hook(m, event, payload, settings)
    except StoreMissingError as exc:  # a database without a mnemo store yet, like a missing file
        return {"stderr": f"mnemo: {exc}; nothing to do\n", "exit": 0}
    except MnemoError as exc:
        return {"stderr": f"mnemo hook {event}: {exc}\n", "exit": 1}
    except Exception as exc:  # e.g. a damaged database: one line, never a traceback in the user's session
        return {"stderr": f"mnemo hook {event}: {type(exc).__name__}: {exc}\n", "exit": 1}


def one_thread(config: Any) -> None:
    """Embed a hook's one short query on one thread unless configured otherwise: on a busy machine
    (a build running beside the assistant) OpenMP threads that wait for each other made the query
    embedding 4x slower (200+ ms instead of ~50 ms, measured under load), and one query gains
    little from more threads."""
    if config.origins.get("embed_threads") == "default":
        config.values["embed_threads"] = 1


# ---------------------------------------------------------------- the CLI's fast path

#: commands the warm service runs for the command line when one serves the store: those a
#: person or a script runs often and that need the model (or the open store) but no terminal
WARM_COMMANDS = frozenset({"save", "search", "context", "auto", "show", "recent", "list", "stats", "history", "edit", "forget",
                           "restore", "confirm", "review", "log"})
#: …of which these load the model in-process: typed at a terminal with no service, they leave one
#: starting as they exit, so the next command finds the model loaded (as the first hook does)
MODEL_COMMANDS = frozenset({"save", "search", "context", "auto"})
#: how long the command line waits for the service to answer a command it has sent
CLI_TIMEOUT = 600.0
#: environment variables sent along besides ``MNEMO_*`` (its home, time zone and terminal); the
#: service keeps its own PATH and the rest
CLIENT_ENV = ("HOME", "TZ", "COLUMNS", "NO_COLOR", "TERM", "LANG", "LC_ALL", "XDG_CONFIG_HOME", "XDG_DATA_HOME")


def command_of(argv: list[str]) -> tuple[int, dict[str, str | None]] | None:
    """Where the command is in ``argv`` and the ``--db`` / ``--model`` given (before or after it),
    or None when the options before it are not these simple ones, or ask for help (then the full
    command line parses them)."""
    i, given = 0, {"db": None, "model": None}

    def take(j: int) -> int:
        arg = argv[j]
        for name in given:
            if arg == f"--{name}" and j + 1 < len(argv):
                given[name] = argv[j + 1]
                return 2
            if arg.startswith(f"--{name}="):
                given[name] = arg.split("=", 1)[1]
                return 1
        return 0

    while i < len(argv) and argv[i].startswith("-"):
        step = take(i) or (1 if argv[i] == "--json" else 0)
        if not step:
            return None
        i += step
    if i >= len(argv) or any(a in ("--help", "-h") for a in argv[i + 1:]):
        return None
    j = i + 1
    while j < len(argv):
        j += take(j) or 1
    return i, given


def _start_after(path: str, idle: float, model: str | None) -> None:
    """Start the store's warm service (exiting after ``idle`` seconds unused) once this command
    has run in-process (at exit, so the two do not load the model at once), when a person typed
    it at a terminal: a script's or a test's commands never leave a service behind.
    ``serve_idle_seconds = 0`` turns it off."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()) or idle <= 0 or service_running(path) or not _can_lock(path):
        return
    import atexit

    def start() -> None:
        try:
            if not service_running(path):
                start_service(path, idle, model=model)
        except OSError:
            pass  # the next command runs in-process, as this one did

    atexit.register(start)


def cli_main(argv: list[str]) -> int | None:
    """Run ``mnemo ARGV`` in the store's warm service when one serves it (the model stays loaded:
    a save or a search costs milliseconds instead of the model's load). Returns the exit code,
    or None when the command line should run it in this process: not a command the service runs,
    no service, or a service that could not take it. A command the service took is never run a
    second time here, even when its answer is lost: it may have written."""
    found = command_of(argv)
    if found is None or argv[found[0]] not in WARM_COMMANDS or _truthy(os.environ.get("MNEMO_NO_SERVICE")):
        return None
    index, given = found
    try:
        from .._settings import config as _config

        cfg = _config.load({"db": given["db"]}, resolve_scope=False)  # the service resolves it
        path = cfg.db
    except Exception:
        return None  # the command line says what is wrong with the settings
    if not is_url(path) and not os.path.exists(path):
        return None
    sock_path = live_socket(path)
    if sock_path is None:
        if argv[index] in MODEL_COMMANDS:
            _start_after(path, float(cfg["serve_idle_seconds"]), given["model"])
        return None
    rest = argv[index + 1:]
    stdin = None
    if "--stdin" in rest or (argv[index] == "save" and "-" in rest):
        data = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
        import io

        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")  # for the run here if the service does not take it
        try:
            stdin = data.decode("utf-8")
        except UnicodeDecodeError:
            return None  # run here, where the command refuses it as it should (the service gets text)
    env = {k: v for k, v in os.environ.items() if k.startswith("MNEMO_") or k in CLIENT_ENV}
    columns = None
    if sys.stdout.isatty():
        import shutil

        columns = shutil.get_terminal_size().columns
    message = {"op": "cli", "argv": argv, "cwd": os.getcwd(), "env": env, "stdin": stdin, "columns": columns}
    sent, reply = exchange(sock_path, message, timeout=CLI_TIMEOUT)
    if not sent:
        return None  # nothing was sent: run it here
    if reply is None:
        sys.stderr.write("mnemo: the warm service took the command but its answer was lost; check the result with `mnemo recent`\n")
        return 1
    if not isinstance(reply, dict) or reply.get("stale"):
        return None  # it did not run it (the store file was replaced, or the service is stopping)
    sys.stdout.write(str(reply.get("stdout") or ""))
    sys.stderr.write(str(reply.get("stderr") or ""))
    return int(reply.get("exit", 0))
