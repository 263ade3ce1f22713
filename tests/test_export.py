"""A full export is a backup: every memory of every status, its history and its links, restored
exactly by import into an empty store, idempotently; a Markdown export is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_embedder import FakeEmbedder

from mnemo import Mnemo
from mnemo.errors import InvalidInputError


@pytest.fixture
def lived(m: Mnemo) -> Mnemo:
    """A store with some life in it: links, a supersede, an edit, a merge, a forget, an archive, a pin."""
    m.remember("We deploy with GitHub Actions", type="decision", scope="project:demo", tags=["ci"], created_at="2024-03-01T09:30:00Z")
    m.remember("We deploy with GitHub Actions and cache the wheels", type="decision", scope="project:demo")
    m.remember("项目使用 FastAPI + PostgreSQL", type="project_context", scope="project:demo", importance=0.9, pinned=True)
    old = m.remember("My editor is vim", type="user_preference")
    m.remember("My editor is now VS Code, not vim any more", type="user_preference")
    edited = m.remember("I prefer concise answers", metadata={"from": "chat"}, expires="30d")
    m.edit(edited.id, content="I prefer short, concise answers", tags="style")
    gone = m.remember("an outdated fact", type="fact", scope="project:old")
    m.forget(gone.id)
    m.remember("I prefer concise answers", dedup=True)  # a repeat: merged, one more event
    m.recall("deploy")  # access counts and times
    assert old.id
    return m


def snapshot(x: Mnemo) -> list[tuple[Any, ...]]:
    """Every memory (all statuses, all fields) with its history and its links, by id."""
    out = []
    for mem in x.store.iter_all():
        links = sorted((r["id"], r["kind"], r["direction"], r["strength"]) for r in x.store.relations(mem.id))
        out.append((mem.to_dict(), x.store.events(mem.id), links))
    return sorted(out, key=lambda t: t[0]["id"])


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_full_export_restores_memories_links_and_history_exactly(lived: Mnemo, tmp_path: Path, fmt: str) -> None:
    before = snapshot(lived)
    statuses = {t[0]["status"] for t in before}
    assert {"active", "superseded", "deleted"} <= statuses, statuses  # every status is in the backup
    assert any(t[2] for t in before) and any(len(t[1]) > 1 for t in before)  # links and history to restore
    out = tmp_path / f"backup.{fmt}"
    assert lived.export(fmt, out, full=True) == len(before)
    with Mnemo(tmp_path / "restored.db", embedder=FakeEmbedder()) as fresh:
        report = fresh.import_(out)
        assert report["imported"] == len(before) and report["invalid"] == []
        after = snapshot(fresh)
        for (mem_a, ev_a, links_a), (mem_b, ev_b, links_b) in zip(before, after):
            for field in mem_a:
                assert mem_a[field] == mem_b[field], (mem_a["id"], field)
            assert ev_a == ev_b, mem_a["id"]
            assert links_a == links_b, mem_a["id"]
        assert after == before
        # importing the same backup again adds nothing: no memory, no event, no link
        again = fresh.import_(out)
        assert again["imported"] == 0 and again["skipped_existing"] == len(before)
        assert snapshot(fresh) == before
        # twice round: the restored store's backup restores the same store
        second = tmp_path / f"second.{fmt}"
        fresh.export(fmt, second, full=True)
    with Mnemo(tmp_path / "twice.db", embedder=FakeEmbedder()) as twice:
        twice.import_(second)
        assert snapshot(twice) == before
        # the restored store searches like the original
        assert [h.memory.id for h in twice.recall("deploy GitHub Actions", scope="project:demo", touch=False)] == \
               [h.memory.id for h in lived.recall("deploy GitHub Actions", scope="project:demo", touch=False)]


def test_full_export_format(lived: Mnemo) -> None:
    doc = json.loads(lived.export_text("json", full=True))
    assert doc["format"] == "mnemo-export" and doc["full"] is True
    rec = doc["memories"][0]
    assert {"history", "links"} <= set(rec) and rec["history"][0]["kind"] == "created"
    plain = json.loads(lived.export_text("json"))
    assert "full" not in plain and "history" not in plain["memories"][0]  # the default export is unchanged
    assert len(plain["memories"]) < len(doc["memories"])  # deleted ones only in the full export
    with pytest.raises(InvalidInputError, match="json or jsonl"):
        lived.export_text("markdown", full=True)


def test_plain_import_still_takes_content_only(m: Mnemo, tmp_path: Path) -> None:
    src = tmp_path / "plain.jsonl"
    src.write_text('{"content": "only the text"}\n{"content": "and another", "type": "fact"}\n', encoding="utf-8")
    assert m.import_(src)["imported"] == 2
    assert [e["kind"] for e in m.history(m.list(limit=1)[0].id)] == ["created"]


def test_bad_history_or_links_are_malformed_records(m: Mnemo, tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps({"id": "a", "content": "x", "history": "nope"}) + "\n"
                   + json.dumps({"id": "b", "content": "y", "history": [], "links": [{"to": "a", "kind": "friends"}]}) + "\n"
                   + json.dumps({"id": "c", "content": "z", "links": [{"to": "a", "kind": "related"}]}) + "\n", encoding="utf-8")
    report = m.import_(src, skip_invalid=True)
    assert report["imported"] == 0 and [p["line"] for p in report["invalid"]] == [1, 2, 3]


def test_full_import_refuses_dedup(lived: Mnemo, tmp_path: Path) -> None:
    out = tmp_path / "backup.jsonl"
    lived.export("jsonl", out, full=True)
    with Mnemo(tmp_path / "fresh.db", embedder=FakeEmbedder()) as fresh, pytest.raises(InvalidInputError, match="full export"):
        fresh.import_(out, dedup=True)


def test_link_to_a_memory_outside_the_store_is_left_out(m: Mnemo, tmp_path: Path) -> None:
    src = tmp_path / "part.jsonl"
    rec = {"id": "keep", "content": "kept", "history": [{"kind": "created", "at": "2024-01-01T00:00:00Z", "cause": "save", "data": {}}],
           "links": [{"to": "elsewhere", "kind": "related", "strength": 0.7}]}
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    assert m.import_(src)["imported"] == 1
    assert m.store.relations("keep") == []
    assert m.store.events("keep") == rec["history"]


def test_cli_full_export_and_import(cli, tmp_path: Path) -> None:
    db, fresh = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    assert cli("save", "--db", db, "We deploy with GitHub Actions").code == 0
    assert cli("save", "--db", db, "We deploy with GitHub Actions and cache wheels").code == 0
    out = str(tmp_path / "backup.json")
    r = cli("export", "--db", db, "--full", "-o", out, "--json")
    assert r.code == 0 and r.json()["full"] is True and r.json()["exported"] == 2
    assert "history and links" in cli("export", "--db", db, "--full", "-o", out).out
    r = cli("import", "--db", fresh, out, "--json")
    assert r.code == 0 and r.json()["imported"] == 2
    r = cli("export", "--db", db, "--full", "--format", "markdown")
    assert r.code != 0 and "json or jsonl" in r.err


def test_importing_a_markdown_export_says_so_in_one_line(cli, m: Mnemo, tmp_path: Path) -> None:
    m.remember("something to export")
    md = tmp_path / "export.md"
    m.export("markdown", md)
    with pytest.raises(InvalidInputError) as exc:
        m.import_(md)
    assert str(exc.value) == f"{md} is a Markdown export; import reads JSON or JSON Lines exports (mnemo export --format json)"
    r = cli("import", "--db", str(tmp_path / "other.db"), str(md))
    assert r.code != 0 and r.err.strip().count("\n") == 0 and "is a Markdown export" in r.err
    assert not (tmp_path / "other.db").exists()  # nothing was created for a refused import
    prose = tmp_path / "notes.md"
    prose.write_text("# My notes\n\nsome text\nmore text\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="not JSON or JSON Lines.*mnemo ingest"):
        m.import_(prose)
