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


def launch() -> None:
    """The ``mnemo`` console script: ``hook`` takes the fast path, the rest is the click CLI."""
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
