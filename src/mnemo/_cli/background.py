"""``--vectors`` of ``mnemo import`` and ``mnemo ingest``: embed in the command, or leave it to
the warm service.

The embedding model is what a bulk write waits for (e5 embeds ~27 memories a second on two
cores; everything else ~9,000). With ``later`` the command writes the text and its full-text
rows, returns, and the warm service embeds the rest between hook requests
(``mnemo stats`` shows how many wait). ``auto`` (the default) does that when a service serves
the store or a person is at the terminal, and embeds in the command otherwise, so a script
finds every vector in place when the command exits, as before.

Who hands the work over is registered by the entry layer (:func:`register`): the CLI is a
surface and does not import the hooks' service, another surface.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol

import click

from .base import CLIState

VECTORS = ("auto", "now", "later")


class Runner(Protocol):
    """What can run background work for a store (the warm service)."""

    def running(self, db: str) -> bool:
        """Whether a service serves ``db``."""
        ...

    def hand_over(self, db: str, idle_seconds: float, model: str | None) -> dict[str, Any]:
        """Ask the store's service to fill the missing vectors, starting one if none runs."""
        ...


_runner: Runner | None = None


def register(runner: Runner | None) -> None:
    """Set who runs background vectors (the entry layer registers the warm service)."""
    global _runner
    _runner = runner


def vectors_option(fn: Any) -> Any:
    """The ``--vectors`` option of a bulk write."""
    return click.option(
        "--vectors", type=click.Choice(VECTORS), default="auto", show_default=True,
        help="now: embed before returning. later: return once the text is searchable by its words; the warm service "
             "embeds the rest in the background (mnemo stats shows how many wait). auto: later when a service runs "
             "or at a terminal, else now.")(fn)


def mode(state: CLIState, vectors: str) -> str:
    """``now`` or ``later`` for this command (see the module docstring)."""
    if vectors != "auto":
        return vectors
    if _runner is None or state.config["serve_idle_seconds"] <= 0:
        return "now"
    try:
        if _runner.running(state.config.db):
            return "later"
    except OSError:
        return "now"
    return "later" if sys.stdin.isatty() and sys.stdout.isatty() else "now"


def hand_over(state: CLIState, report: dict[str, Any]) -> None:
    """After a ``later`` write: give the missing vectors to the service; the report says who
    fills them (``vectors_by``: ``service`` or ``reindex``, when no service could take them)."""
    if not report.get("vectors_pending"):
        return
    if _runner is not None and state.config["serve_idle_seconds"] > 0:
        try:
            _runner.hand_over(state.config.db, float(state.config["serve_idle_seconds"]), state.overrides.get("model"))
            report["vectors_by"] = "service"
            return
        except OSError:
            pass
    report["vectors_by"] = "reindex"


def pending_line(report: dict[str, Any]) -> str | None:
    """What a person reads about vectors still to come, or None."""
    n = report.get("vectors_pending")
    if not n:
        return None
    if report.get("vectors_by") == "service":
        return (f"{n:,} memories are searchable by their words now; the warm service is computing their vectors "
                "in the background (mnemo stats shows how many wait)")
    return f"{n:,} memories are searchable by their words only: run `mnemo reindex` to compute their vectors"
