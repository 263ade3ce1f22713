"""CLI commands for `mnemo auto`: detect memories in conversation."""

from __future__ import annotations

from ._clibase import OPERATIONS, CLIState, _render, command  # noqa: F401
