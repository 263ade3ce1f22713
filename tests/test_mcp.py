"""The MCP server, driven by the real ``mcp`` client over stdio (``python -m mnemo mcp``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp_client import run_session

from mnemo._base.models import MEMORY_TYPES
from mnemo._mcp.server import TOOLS

pytest.importorskip("mcp")


def _run(home: Path, script) -> Any:
    return run_session(script, errlog=home.parent / "mcp-stderr.log")


def _data(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def test_tools_are_listed_with_typed_described_arguments(mnemo_home: Path) -> None:
    async def script(client: Any) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in _run(mnemo_home, script)}
    assert set(tools) == set(TOOLS)
    for name in ("remember", "recall", "context", "forget", "recent", "stats", "edit"):
        assert tools[name].description
    remember = tools["remember"].input_schema
    assert remember["required"] == ["content"]
    assert remember["properties"]["importance"]["type"] == "number" and remember["properties"]["importance"]["maximum"] == 1
    assert all(p.get("description") for p in remember["properties"].values())
    assert tools["recall"].input_schema["properties"]["top_k"]["type"] == "integer"


def test_remember_recall_context_forget_over_stdio(mnemo_home: Path) -> None:
    async def script(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["saved"] = _data(await client.call_tool("remember", {"content": "We deploy with GitHub Actions on Fridays", "type": "decision", "tags": ["deploy"]}))
        mid = out["saved"]["memory"]["id"]
        out["recall"] = _data(await client.call_tool("recall", {"query": "how do we deploy?"}))
        out["context"] = _data(await client.call_tool("context", {"query": "how do we deploy?", "session": "mcp-1"}))
        out["context2"] = _data(await client.call_tool("context", {"query": "how do we deploy?", "session": "mcp-1"}))
        out["edit"] = _data(await client.call_tool("edit", {"memory_id": mid, "content": "We deploy with GitHub Actions on Thursdays"}))
        out["forget"] = _data(await client.call_tool("forget", {"memory_id": mid}))
        out["after"] = _data(await client.call_tool("recall", {"query": "how do we deploy?"}))
        out["restore"] = _data(await client.call_tool("restore", {"memory_id": mid}))
        out["recent"] = _data(await client.call_tool("recent", {}))
        out["stats"] = _data(await client.call_tool("stats", {}))
        out["log"] = _data(await client.call_tool("log", {"session": "mcp-1"}))
        return out

    out = _run(mnemo_home, script)
    mid = out["saved"]["memory"]["id"]
    assert out["saved"]["action"] == "created" and out["saved"]["memory"]["source"] == "mcp"
    assert [h["id"] for h in out["recall"]["results"]] == [mid]
    assert "GitHub Actions" in out["context"]["text"] and out["context"]["text"].startswith("[Background")
    assert out["context2"]["memories"] == []  # never twice in one session
    assert "Thursdays" in out["edit"]["memory"]["content"]
    assert out["forget"]["memory"]["status"] == "deleted" and out["after"]["results"] == []
    assert out["restore"]["memory"]["status"] == "active"
    assert [x["id"] for x in out["recent"]["results"]] == [mid]
    assert out["stats"]["total"] == 1
    assert out["log"]["results"][0]["memory_ids"] == [mid] and out["log"]["results"][0]["surface"] == "mcp"


def test_bad_arguments_are_tool_errors_and_the_server_keeps_going(mnemo_home: Path) -> None:
    async def script(client: Any) -> list[Any]:
        results = [
            await client.call_tool("forget", {"memory_id": "mem_nope"}),
            await client.call_tool("recall", {"query": "x", "top_k": "many"}),
            await client.call_tool("remember", {"content": "x", "type": "bogus"}),
            await client.call_tool("remember", {}),
            await client.call_tool("remember", {"content": "x", "importance": 7}),
            await client.call_tool("context", {"query": "   "}),
            await client.call_tool("no_such_tool", {}),
        ]
        results.append(await client.call_tool("stats", {}))  # still alive
        return results

    *errors, ok = _run(mnemo_home, script)
    for r in errors:
        assert r.is_error
        assert "Traceback" not in r.content[0].text
    assert "NotFoundError: no memory with id mem_nope" in errors[0].content[0].text
    assert "top_k" in errors[1].content[0].text
    assert "type: must be one of 'user_preference'" in errors[2].content[0].text  # the schema's enum, before the core
    assert "query is empty" in errors[5].content[0].text
    assert not ok.is_error and _data(ok)["total"] == 0


def _tools(home: Path) -> dict[str, Any]:
    async def script(client: Any) -> Any:
        return (await client.list_tools()).tools

    return {t.name: t for t in _run(home, script)}


def test_bad_arguments_come_back_one_line_each_without_pydantic_noise(mnemo_home: Path) -> None:
    """Issue 16, finding 1: a model reads "importance: must be at most 1 (got 3)", not pydantic's
    three lines an error and a link to its documentation."""
    async def script(client: Any) -> list[Any]:
        results = [
            await client.call_tool("remember", {"content": "x", "importance": 3}),
            await client.call_tool("recall", {"query": "x", "top_k": "many"}),
            await client.call_tool("remember", {}),
            await client.call_tool("remember", {"content": "", "tags": ["ok", 5], "importance": -1}),
            await client.call_tool("recent", {"days": 0}),
        ]
        results.append(await client.call_tool("stats", {}))  # still alive
        return results

    *errors, ok = _run(mnemo_home, script)
    texts = [r.content[0].text for r in errors]
    assert all(r.is_error for r in errors)
    assert texts[0] == "importance: must be at most 1 (got 3)"
    assert texts[1] == 'top_k: must be a whole number (got "many")'
    assert texts[2] == "content: required"
    assert texts[3].splitlines() == ['content: must not be empty (got "")', "tags[1]: must be a string (got 5)",
                                     "importance: must be at least 0 (got -1)"]
    assert texts[4] == "days: must be more than 0 (got 0)"
    for text in texts:
        assert "pydantic" not in text and "http" not in text and "validation error" not in text and "Input should" not in text
    assert not ok.is_error and _data(ok)["total"] == 0


def test_closed_sets_of_values_are_enums_in_the_schema(mnemo_home: Path) -> None:
    """Finding 2: the schema lists the memory types (and source kinds), so a model picks one
    instead of guessing; a type written as mnemo always read it (``Decision``) still works."""
    tools = _tools(mnemo_home)

    def enum(tool: str, arg: str) -> list[str]:
        prop = tools[tool].input_schema["properties"][arg]
        return next(s["enum"] for s in [prop, *prop.get("anyOf", [])] if "enum" in s)

    assert enum("remember", "type") == list(MEMORY_TYPES)
    assert enum("recall", "type") == enum("list", "type") == enum("edit", "type") == list(MEMORY_TYPES)
    assert enum("sources", "kind") == ["file", "url", "chat"]

    async def script(client: Any) -> Any:
        return _data(await client.call_tool("remember", {"content": "We release on Tuesdays", "type": "Decision"}))

    assert _run(mnemo_home, script)["memory"]["type"] == "decision"


def test_every_parameter_of_every_tool_is_described(mnemo_home: Path) -> None:
    """Finding 3: a model sees what each argument means, not only its name and type."""
    undescribed = [f"{name}.{arg}" for name, tool in _tools(mnemo_home).items()
                   for arg, prop in tool.input_schema.get("properties", {}).items() if not prop.get("description")]
    assert not undescribed


def test_tools_say_whether_they_read_change_or_destroy(mnemo_home: Path) -> None:
    """Finding 4: the MCP tool annotations, so a client may run reads freely and ask before a forget."""
    tools = _tools(mnemo_home)
    notes = {name: t.annotations for name, t in tools.items()}
    assert all(a is not None and a.open_world_hint is False for a in notes.values())
    reads = {"recall", "context", "get", "list", "recent", "stats", "history", "review", "log", "sources", "doctor", "redact", "changes"}
    assert {n for n, a in notes.items() if a.read_only_hint} == reads
    assert all(notes[n].idempotent_hint and not notes[n].destructive_hint for n in reads)
    for name in ("forget", "edit", "restore", "resolve", "gc", "consolidate"):
        assert notes[name].destructive_hint is True and notes[name].read_only_hint is False
    for name in ("remember", "auto"):
        assert notes[name].read_only_hint is False and notes[name].idempotent_hint is False and notes[name].destructive_hint is False
    assert notes["edit"].idempotent_hint is True and notes["forget"].idempotent_hint is True
    assert notes["restore"].idempotent_hint is False  # twice undoes two steps


def test_lists_of_memories_are_brief_and_get_has_every_field(mnemo_home: Path) -> None:
    """Finding 5: recall, recent and list return what a model acts on (about a third of the bytes);
    ``get`` still returns every field."""
    async def script(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["saved"] = _data(await client.call_tool("remember", {"content": "We deploy with GitHub Actions on Fridays", "type": "decision", "tags": ["deploy"]}))
        _data(await client.call_tool("remember", {"content": "The staging database is PostgreSQL 16"}))
        out["recall"] = _data(await client.call_tool("recall", {"query": "how do we deploy on fridays?"}))
        out["explained"] = _data(await client.call_tool("recall", {"query": "how do we deploy on fridays?", "explain": True}))
        out["recent"] = _data(await client.call_tool("recent", {}))
        out["list"] = _data(await client.call_tool("list", {}))
        out["get"] = _data(await client.call_tool("get", {"memory_id": out["saved"]["memory"]["id"]}))
        return out

    out = _run(mnemo_home, script)
    full = out["get"]["memory"]
    assert {"importance", "access_count", "updated_at", "source", "metadata"} <= set(full)
    hit = out["recall"]["results"][0]
    assert hit.keys() == {"id", "content", "type", "scope", "created", "score", "tags"}
    assert hit["id"] == full["id"] and hit["tags"] == ["deploy"] and hit["created"] == full["created_at"][:10]
    assert "explain" in out["explained"]["results"][0]
    for listed in (out["recent"]["results"], out["list"]["results"]):
        by_id = {x["id"]: x for x in listed}
        assert by_id[full["id"]].keys() == {"id", "content", "type", "scope", "created", "tags"}
        assert all(x.keys() == {"id", "content", "type", "scope", "created"} for x in listed if x["id"] != full["id"])
    assert len(json.dumps(by_id[full["id"]])) * 2 < len(json.dumps(full))


def test_a_memory_that_is_not_active_says_so_in_a_brief_list() -> None:
    """Finding 5, the one field a brief memory adds when it is not the default."""
    from mnemo._base.models import Memory
    from mnemo._mcp.server import _brief

    mem = Memory(id="mem_1", content="old", created_at="2025-01-02T03:04:05Z", status="superseded")
    assert _brief(mem) == {"id": "mem_1", "content": "old", "type": "note", "scope": "global", "created": "2025-01-02", "status": "superseded"}


def test_the_server_reports_mnemos_version(mnemo_home: Path) -> None:
    """Finding 6: ``server_info.version`` is the installed package's, as ``mnemo --version`` says."""
    from importlib.metadata import version

    async def script(client: Any) -> Any:
        return client.server_info

    info = _run(mnemo_home, script)
    assert info.name == "mnemo" and info.version == version("mnemo")


@pytest.mark.sqlite_only
def test_a_store_copied_over_during_a_session_is_reopened_not_corrupted(mnemo_home: Path, tmp_path: Path) -> None:
    """An MCP session lasts as long as the assistant; a store file copied over it meanwhile
    (``cp other.db memory.db``) is what the next tool call reads, and what it writes lands in a
    sound file."""
    import shutil

    import apsw
    from conftest import default_store
    from fake_embedder import FakeEmbedder

    from mnemo import Mnemo

    store = Path(default_store())
    with Mnemo(store, embedder=FakeEmbedder()) as m:
        m.remember("the old store's note about Jenkins")
    other = tmp_path / "other.db"
    with Mnemo(other, embedder=FakeEmbedder()) as m:
        m.remember_many([{"content": f"the copied store's note {i} about GitHub Actions"} for i in range(12)], dedup=False)

    async def script(client: Any) -> Any:
        before = _data(await client.call_tool("stats", {}))
        shutil.copyfile(other, store)  # same inode, new bytes
        saved = _data(await client.call_tool("remember", {"content": "a note saved after the copy"}))
        after = _data(await client.call_tool("stats", {}))
        return before, saved, after

    before, saved, after = _run(mnemo_home, script)
    assert before["total"] == 1 and after["total"] == 13
    conn = apsw.Connection(str(store))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    contents = {c for (c,) in conn.execute("SELECT content FROM memories")}
    conn.close()
    assert "a note saved after the copy" in contents and "the old store's note about Jenkins" not in contents
    assert len(contents) == 13 and saved["action"] == "created"
