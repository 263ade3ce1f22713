"""CLI commands for `mnemo context`, `log`, `mcp`, `hook`, `install`, `serve`, `pause`: assistant integration."""

from __future__ import annotations

from ._clibase import OPERATIONS, CLIState, _render, command  # noqa: F401
