"""``python -m mnemo`` and the ``mnemo`` console script.

``mnemo hook EVENT`` runs on every prompt as a new process, so it goes straight to the
import-light hook client (standard library, settings and hook-format modules only: never
numpy, apsw, click or rich). A frequent command (save, search, context, …) on a store that a
warm service (``mnemo serve``) serves is sent to that service by the same light client; every
other command loads the command line (:mod:`mnemo._entry`).
"""

from __future__ import annotations

import sys


def launch() -> None:
    """The ``mnemo`` console script: ``hook`` takes the fast path, the rest is the click CLI."""
    argv = sys.argv[1:]
    if len(argv) >= 4 and argv[0] == "--db" and argv[2] == "hook":  # `mnemo --db PATH hook EVENT`: the same fast path
        argv = [argv[2], argv[3], "--db", argv[1], *argv[4:]]
    if len(argv) >= 2 and argv[0] == "hook" and not any(a.startswith("-") for a in argv[1:2]) and "--help" not in argv and "-h" not in argv:
        rest = argv[2:]
        db = None
        if len(rest) == 2 and rest[0] == "--db":
            db, rest = rest[1], []
        if not rest:
            from ._hooks.client import hook_main

            sys.exit(hook_main(argv[1], db=db))
    from ._hooks.client import cli_main

    code = cli_main(argv)  # a frequent command on a store the warm service serves: run there
    if code is not None:
        sys.exit(code)
    from ._entry import main

    main()


if __name__ == "__main__":
    launch()
