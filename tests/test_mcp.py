"""The MCP server, driven by the real ``mcp`` client over stdio (``python -m mnemo mcp``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp_client import run_session

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
    assert "unknown type 'bogus'" in errors[2].content[0].text
    assert "query is empty" in errors[5].content[0].text
    assert not ok.is_error and _data(ok)["total"] == 0


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
