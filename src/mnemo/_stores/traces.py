"""What a purge must reach beyond the memory's own rows: the copies of its text and its id that
other rows keep (issue "Hardening": purge leaves copies).

- the injection log: the memory's id in what was injected and why, and a prompt that held its text;
- other memories' history: a merge keeps the merged text, a supersede notes old → new values;
- an ingested document's source row, once none of its chunks is left.

A mixin of both stores, written once against the primitives of
:class:`~mnemo._stores.shared.SharedStore` (``_rows``, ``_run``; ``?`` placeholders). Runs inside
the purge's transaction, after the memory's own rows are gone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


class PurgeTraces:
    """``purge_traces``: erase a memory's id and text from the rows of other memories and logs."""

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _run(self, sql: str, args: Sequence[Any] = ()) -> int:
        raise NotImplementedError

    def purge_traces(self, memory_id: str, content: str, source: str | None) -> int:
        """Remove ``memory_id`` and ``content`` from the injection log and other memories'
        history, and drop the source row ``source`` when no memory of it is left;
        returns how many rows were changed. The history keeps each event (what happened, when),
        with its data replaced by a note that a purged memory was involved."""
        text = content.strip()
        changed = 0
        like = f"%{memory_id}%"
        for pk, query, ids, data in self._rows(
                "SELECT pk, query, memory_ids, data FROM injections WHERE memory_ids LIKE ? OR data LIKE ? OR query LIKE ?",
                (like, like, f"%{text[:200]}%" if text else like)):
            kept = [i for i in json.loads(ids or "[]") if i != memory_id]
            info = json.loads(data or "{}")
            for key in ("reasons", "scores", "explain"):
                if isinstance(info.get(key), dict):
                    info[key].pop(memory_id, None)
            if query and text and (text in query or query.strip() in text):
                query = None  # the prompt said what the memory said
            self._run("UPDATE injections SET query = ?, memory_ids = ?, data = ? WHERE pk = ?",
                      (query, json.dumps(kept), json.dumps(info, ensure_ascii=False), pk))
            changed += 1
        probe = json.dumps(text[:200] or memory_id, ensure_ascii=False)[1:-1]  # as the JSON data spells it
        for pk, data in self._rows("SELECT pk, data FROM events WHERE memory_id <> ? AND (data LIKE ? OR data LIKE ?)",
                                   (memory_id, like, f"%{probe}%")):
            if memory_id in data or probe in data:  # LIKE's _ and % match more than the text itself
                self._run("UPDATE events SET data = ? WHERE pk = ?", (json.dumps({"purged_memory": memory_id}), pk))
                changed += 1
        if source and not self._rows("SELECT 1 FROM memories WHERE source = ? LIMIT 1", (source,)):
            changed += self._run("DELETE FROM sources WHERE key = ?", (source,))
        return changed
