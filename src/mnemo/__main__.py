"""``python -m mnemo`` and the ``mnemo`` console script.

``mnemo hook EVENT`` runs on every prompt as a new process, so it goes straight to the
import-light hook client (standard library, settings and hook-format modules only: never
numpy, apsw, click or rich). A frequent command (save, search, context, …) on a store that a
warm service (``mnemo serve``) serves is sent to that service by the same light client; every
other command loads the command line (:mod:`mnemo._entry`).
"""

from __future__ import annotations

import sys


def _only_store_options(args: list[str]) -> bool:
    """Whether ``args`` hold nothing but ``--db`` and ``--model`` with their values."""
    i = 0
    while i < len(args):
        if args[i] in ("--db", "--model") and i + 1 < len(args):
            i += 2
        elif args[i].startswith(("--db=", "--model=")):
            i += 1
        else:
            return False
    return True


def _leave(code: object) -> None:
    """End the process as ``sys.exit(code)`` would, without the interpreter's teardown of every
    module and object, which took ~50 ms of a 0.4 s cold ``mnemo search`` (the engine's and
    numpy's memory freed object by object). What an exit must still do is done first, in
    Python's own order: the message of a non-numeric code, the non-daemon threads joined (the
    engine's runner), every exit handler run (the warm service's start, a wrapping program's
    own), an SQLite connection nobody closed closed (its log checkpointed), output flushed.
    Where the interpreter lacks the hooks for that, it exits the ordinary way."""
    import atexit
    import os
    import threading

    join, run_handlers = getattr(threading, "_shutdown", None), getattr(atexit, "_run_exitfuncs", None)
    if join is None or run_handlers is None:  # pragma: no cover - another interpreter
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    join()
    run_handlers()
    apsw = sys.modules.get("apsw")
    for conn in apsw.connections() if apsw is not None else ():
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - leaving anyway; the next open recovers the log
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed pipe: nothing more can be said
            pass
    os._exit(status)


def launch() -> None:
    """The ``mnemo`` console script: ``hook`` takes the fast path, the rest is the click CLI.
    A command that ends in an uncaught error keeps Python's own exit (and its traceback)."""
    try:
        _launch()
    except SystemExit as exc:
        _leave(exc.code)
    _leave(0)


def _launch() -> None:
    argv = sys.argv[1:]
    from ._hooks.client import command_of

    found = command_of(argv)
    if found is not None and argv[found[0]] == "hook":
        # `mnemo [--db P] [--model M] hook EVENT [--db P] [--model M]` (what the installers write)
        index, given = found
        event, extra = (argv[index + 1], argv[index + 2:]) if index + 1 < len(argv) else (None, [])
        if event is not None and not event.startswith("-") and _only_store_options(extra):
            from ._hooks.client import hook_main

            sys.exit(hook_main(event, db=given["db"], model=given["model"]))
    from ._hooks.client import cli_main

    code = cli_main(argv)  # a frequent command on a store the warm service serves: run there
    if code is not None:
        sys.exit(code)
    from ._entry import main

    main()


if __name__ == "__main__":
    launch()
