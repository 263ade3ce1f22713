"""Talking to ``mnemo mcp`` as an assistant does: the ``mcp`` SDK's client over stdio."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any


class _Streams:
    """A Transport over already-open stdio streams (the Client owns the session, not the process)."""

    def __init__(self, streams: Any):
        self.streams = streams

    async def __aenter__(self) -> Any:
        return self.streams

    async def __aexit__(self, *exc: Any) -> None:
        return None


def session_env() -> dict[str, str]:
    """The environment an assistant would hand the server: mnemo's settings, Python's and PATH/HOME."""
    return {k: v for k, v in os.environ.items() if k.startswith(("MNEMO_", "PYTHON", "PATH", "HOME"))}


def run_session(script: Callable[[Any], Awaitable[Any]], *, errlog: Path, env: dict[str, str] | None = None,
                cwd: Path | None = None, roots: list[Path] | None = None) -> Any:
    """Start ``python -m mnemo mcp`` (with ``env``, in ``cwd``), run ``await script(client)`` in one
    session and return its result; the server's stderr goes to ``errlog``. ``roots``: what the
    client answers when the server asks for its roots (none asked for when not given)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "mnemo", "mcp"], env=env if env is not None else session_env(),
                                   cwd=str(cwd) if cwd else None)

    async def list_roots(context: Any) -> Any:
        from mcp_types import ListRootsResult, Root

        return ListRootsResult(roots=[Root(uri=r.as_uri(), name=r.name) for r in roots or []])

    async def main() -> Any:
        with open(errlog, "w") as log:
            async with stdio_client(params, errlog=log) as streams:
                async with Client(_Streams(streams), list_roots_callback=list_roots if roots else None) as client:
                    return await script(client)

    return asyncio.run(main())
