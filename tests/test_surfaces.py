"""DESIGN.md's naming note: every API operation is reachable from the CLI and from MCP."""

from __future__ import annotations

import inspect

from mnemo import Mnemo
from mnemo._entry import OPERATIONS
from mnemo._mcp.server import TOOLS

#: public Mnemo methods that are not operations of their own, on any surface
NOT_OPERATIONS = {
    "close": "releases the store; every surface does it itself",
    "remember_many": "batch form of remember (import and capture use it); remember is the operation",
    "recall_batch": "batch form of recall for benchmarks and evaluation scripts",
    "export_text": "export into a string; export is the operation",
    "redact_with": "static helper behind redact, usable without a store",
    "related": "part of show/get (its links)",
    "is_paused": "read side of pause/resume; context reports it as `paused`",
    "auto_transcript": "reached through `mnemo hook stop|session-end` and the capture CLI; a model has no transcript path",
    "capture_job": "status of auto_transcript's background job, shown by the capture CLI",
    "conflicts": "part of review (its possible-conflicts list), on the CLI and MCP alike",
    "before_compaction": "hook bookkeeping: the PreCompact hook keeps what was injected",
    "after_compaction": "hook bookkeeping: SessionStart(compact) or the next prompt injects it again",
    "prune_sessions": "hook bookkeeping: SessionStart drops old sessions' injected lists",
    "retract_injection": "hook bookkeeping: a hook's retry after the warm service lost its answer offers that prompt's memories again",
    "refresh": "the warm service's check between requests for a store file replaced under it",
    "queue_capture": "hands an exchange from ask, chat or the proxy to capture (auto is the operation)",
    "run_capture_queue": "captures the exchanges ask, chat and the proxy queued (auto is the operation)",
    "record_context": "the second half of context(record=False), for the proxy that answers first (context is the operation)",
}
#: operations deliberately left out of MCP, and why
NOT_ON_MCP = {
    "export": "writes every memory to a file or stdout; a person's command, not a model's",
    "import_": "reads a local file the model names; a person's command",
    "reindex": "long maintenance job (minutes) with a progress bar",
    "fill_vectors": "background work of the warm service after a bulk import; a person's `mnemo reindex` does it at once",
    "vectors_pending": "a count in `stats` (vectors_pending), which the stats tool returns",
    "purge": "the only irreversible delete: people only (forget is the model's undoable delete)",
    "ingest": "reads local files and fetches URLs the model names; a person's command",
    "watch": "runs until stopped; a person's command",
    "pause": "the user's switch to stop injection; a model must not turn it on or off",
    "resume": "the user's switch to stop injection; a model must not turn it on or off",
    "visibility": "access control on a team store: the person decides who may read what",
    "salvage": "rescues a damaged store file into a new file: a person's repair, run where no store opens",
    "activity": "weekly counts for a person's charts (the web app, `mnemo activity`); stats has the totals",
    "forget_source": "removes an ingested document, as ingest adds one: a person's command",
    "ingest_upload": "a browser's upload (bytes); a model has no file to hand over",
    "sync": "reads and writes a shared folder the model names; a person's command (and the warm service's)",
    "sync_status": "part of sync (--status)",
    "merge": "reads another store the model names; a person's command",
}
#: operations with no CLI command of their own
NOT_ON_CLI: dict[str, str] = {
    "fill_vectors": "the warm service's background work after `import/ingest --vectors later`; `mnemo reindex` fills every missing vector at once",
    "vectors_pending": "a line of `mnemo stats` (and its --json key vectors_pending)",
    "salvage": "an option of doctor: `mnemo doctor --salvage NEW.db`",
    "forget_source": "an option of sources: `mnemo sources --forget KEY`",
    "ingest_upload": "the web app's upload of a file's bytes; the command line ingests the file itself (`mnemo ingest FILE`)",
    "sync_status": "an option of sync: `mnemo sync --status`",
}


def _operations() -> set[str]:
    return {n for n, v in inspect.getmembers(Mnemo) if not n.startswith("_") and callable(v)} - set(NOT_OPERATIONS)


def test_every_operation_is_on_the_cli() -> None:
    missing = _operations() - set(OPERATIONS.values()) - set(NOT_ON_CLI)
    assert not missing, f"no CLI command for {sorted(missing)}: add one to OPERATIONS or justify it in NOT_ON_CLI"


def test_every_operation_is_on_mcp() -> None:
    missing = _operations() - set(TOOLS.values()) - set(NOT_ON_MCP)
    assert not missing, f"no MCP tool for {sorted(missing)}: add one to mnemo._mcp.server.TOOLS or justify it in NOT_ON_MCP"


def test_tools_are_named_like_the_operations_they_run() -> None:
    for tool, op in TOOLS.items():
        assert callable(getattr(Mnemo, op)), op
        assert tool == op.rstrip("_"), (tool, op)


def test_exclusions_name_real_methods_and_are_not_stale() -> None:
    for name in [*NOT_OPERATIONS, *NOT_ON_MCP, *NOT_ON_CLI]:
        assert callable(getattr(Mnemo, name, None)), f"{name} is not a Mnemo method any more: drop it from the list"
    assert not set(NOT_ON_MCP) & set(TOOLS.values()), "an operation on MCP is also listed as excluded"
    assert not set(NOT_ON_CLI) & set(OPERATIONS.values()), "an operation on the CLI is also listed as excluded"
