"""CLI commands for `mnemo ingest`, `sources`, `watch`: documents, chat exports, web pages."""

from __future__ import annotations

from ._clibase import OPERATIONS, CLIState, _render, command  # noqa: F401
