"""mnemo ingest: chunking, the fixture tree of notes, re-ingest (edit, delete, rename), bad input."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mnemo import Mnemo
from mnemo._ingest.chunk import chunk_markdown, chunk_text, edit_similarity, embed_prefix, fixed_windows, parse_front_matter, sentence_spans
from mnemo._ingest.docs import decode_bytes
from mnemo.errors import IngestError, InvalidInputError

FIXTURES = Path(__file__).parent / "fixtures" / "notes"
PERF = "性能优化笔记.md"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A private copy of the fixture notes (tests edit, delete and rename files)."""
    root = tmp_path / "notes"
    shutil.copytree(FIXTURES, root)
    return root


def _chunks(m: Mnemo, key: str, statuses: tuple[str, ...] = ("active",)) -> list:
    return m.store.memories_by_source(key, statuses)


# ---------------------------------------------------------------- chunking


def test_markdown_chunks_follow_headings_and_keep_exact_text() -> None:
    text = (FIXTURES / PERF).read_text("utf-8")
    meta, offset = parse_front_matter(text)
    assert meta["title"] == "性能优化笔记" and meta["date"] == "2024-03-05" and meta["tags"] == ["数据库", "性能"]
    chunks = chunk_markdown(text, chunk_chars=200, start=offset)
    assert [c.headings for c in chunks][0] == ("性能优化笔记",)
    assert ("性能优化笔记", "缓存", "缓存雪崩") in [c.headings for c in chunks]
    for c in chunks:
        assert text[c.start:c.end] == c.text  # the stored content is the original text
        assert "---" not in c.text and not c.text.startswith("#")  # no front matter, no heading lines
    code = [c for c in chunks if "```sql" in c.text]
    assert len(code) == 1 and code[0].text.rstrip().endswith("```")  # the fence is never cut


def test_long_paragraphs_split_at_sentences_in_chinese_and_english() -> None:
    zh = "".join(f"第{i}句话讲的是索引和缓存的取舍。" for i in range(40))
    en = " ".join(f"Sentence number {i} talks about the trade-off between an index and a cache." for i in range(20))
    for para in (zh, en):
        chunks = chunk_text(para, chunk_chars=200)
        assert len(chunks) > 2
        for c in chunks:
            assert len(c.text) <= 200
            assert c.text.endswith(("。", ".")), c.text[-10:]
    text = "Pi is 3.14 here. 好的！Next?"
    assert [text[a:b] for a, b in sentence_spans(text, 0, len(text))] == ["Pi is 3.14 here. ", "好的！", "Next?"]


def test_code_blocks_stay_whole_up_to_twice_the_chunk_size() -> None:
    body = "\n".join(f"line_{i} = compute({i})" for i in range(15))  # ~340 chars
    doc = f"# Code\n\nIntro paragraph.\n\n```python\n{body}\n```\n\nOutro paragraph.\n"
    chunks = chunk_markdown(doc, chunk_chars=200)
    whole = [c for c in chunks if c.kind == "code"]
    assert len(whole) == 1 and whole[0].text.startswith("```python") and whole[0].text.endswith("```")
    huge = "\n".join(f"line_{i} = compute({i})" for i in range(60))
    split = chunk_markdown(f"```\n{huge}\n```\n", chunk_chars=200)
    assert len(split) > 3 and all(len(c.text) <= 200 for c in split)
    assert all(c.text.split("\n")[-1].startswith(("line_", "```")) for c in split)  # cut between lines


def test_prefix_fixed_windows_and_size_limits() -> None:
    assert embed_prefix("性能优化笔记", ("性能优化笔记", "索引")) == "【性能优化笔记 › 索引】"
    assert embed_prefix(None, ()) == ""
    windows = fixed_windows("x" * 1100, 512)
    assert [len(w.text) for w in windows] == [512, 512, 76]
    with pytest.raises(InvalidInputError):
        chunk_text("text", chunk_chars=10)


def test_gbk_and_other_encodings_are_detected_not_garbled() -> None:
    text = "今天把家里的旧电脑装成了备份服务器。"
    assert decode_bytes(text.encode("gbk")) == (text, "gb18030")
    assert decode_bytes(text.encode("utf-16"))[0] == text
    assert decode_bytes("\ufeff" .encode("utf-8") + text.encode("utf-8"))[0] == text
    with pytest.raises(IngestError, match="binary"):
        decode_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


# ---------------------------------------------------------------- the fixture tree


def test_ingest_tree_makes_dated_note_chunks_with_sources(m: Mnemo, tree: Path) -> None:
    report = m.ingest([tree])
    assert report["files_seen"] == 8 and report["ingested"] == 8 and not report["skipped"]
    perf = f"file:{tree / PERF}"
    chunks = _chunks(m, perf)
    assert chunks and all(c.type == "note" and c.source == perf for c in chunks)
    assert chunks[0].created_at.startswith("2024-03-0")  # the front-matter date (local midnight)
    assert chunks[0].metadata["embed_prefix"] == "【性能优化笔记】"
    assert "缓存雪崩" in {h for c in chunks for h in c.metadata["headings"]}
    original = (tree / PERF).read_text("utf-8")
    assert all(c.content in original for c in chunks)
    deploy = _chunks(m, f"file:{tree / 'en' / '2024-03-12-deploy-checklist.md'}")
    assert deploy[0].created_at.startswith("2024-03-1")  # the date in the file name
    # the heading path is searchable though the chunk's own text never says it
    hits = m.recall("雪崩", mode="fts", touch=False)
    assert hits and "随机抖动" in hits[0].memory.content
    gbk = _chunks(m, f"file:{tree / 'gbk-日记.txt'}")
    assert "备份服务器" in gbk[0].content
    sources = {s["key"]: s for s in m.sources()}
    assert sources[perf]["title"] == "性能优化笔记" and sources[perf]["chunks"] == len(chunks)
    assert {s["kind"] for s in sources.values()} == {"file", "chat"}


def test_reingest_unchanged_is_skipped_without_embedding(m: Mnemo, tree: Path) -> None:
    m.ingest([tree])
    calls = m.embedder.calls
    before = m.stats()["all_records"]
    report = m.ingest([tree])
    assert report["unchanged"] == 8 and report["ingested"] == 0 and report["chunks"] == 0
    assert m.embedder.calls == calls and m.stats()["all_records"] == before


def test_changed_file_supersedes_only_the_changed_chunks(m: Mnemo, tree: Path) -> None:
    m.ingest([tree / PERF])
    key = f"file:{tree / PERF}"
    old = {c.content: c for c in _chunks(m, key)}
    text = (tree / PERF).read_text("utf-8").replace("容量一万条", "容量五万条")
    (tree / PERF).write_text(text, "utf-8")
    report = m.ingest([tree / PERF])
    assert report["ingested"] == 1 and report["superseded"] == 1 and report["chunks"] == 1
    new = {c.content: c for c in _chunks(m, key)}
    assert len(new) == len(old)
    kept = set(old) & set(new)
    assert len(kept) == len(old) - 1 and all(old[k].id == new[k].id for k in kept)  # untouched chunks stay
    (gone,) = [c for k, c in old.items() if k not in new]
    after = m.get(gone.id)
    assert after.status == "superseded" and after.superseded_by in {c.id for c in new.values()}
    assert any(e["kind"] == "superseded" and e["cause"] == "ingest" for e in m.history(gone.id))
    assert m.recall("五万条", mode="fts", touch=False)[0].memory.id == after.superseded_by
    m.restore(gone.id)  # superseded, not lost
    assert m.get(gone.id).status == "active"
    # a paragraph deleted: its chunk is superseded and nothing new is embedded
    calls = m.embedder.calls
    (tree / PERF).write_text(text.replace("注意联合索引的列顺序", "\n\n## 附录\n\n注意联合索引的列顺序", 1), "utf-8")
    m.ingest([tree / PERF], chunk_chars=512)
    shorter = (tree / PERF).read_text("utf-8").split("### 缓存雪崩")[0]
    (tree / PERF).write_text(shorter, "utf-8")
    report = m.ingest([tree / PERF])
    assert report["chunks"] == 0 and report["superseded"] == 1 and m.embedder.calls == calls + 1


def test_deleted_file_is_archived_only_with_sync(m: Mnemo, tree: Path) -> None:
    m.ingest([tree])
    key = f"file:{tree / 'en' / 'meeting-notes.txt'}"
    (tree / "en" / "meeting-notes.txt").unlink()
    assert m.ingest([tree])["archived"] == 0 and _chunks(m, key)
    report = m.ingest([tree], sync=True)
    assert report["archived"] == 1 and _chunks(m, key) == []
    (mem,) = _chunks(m, key, ("archived",))
    assert m.store.get_source(key)["status"] == "deleted"
    assert any(e["kind"] == "archived" for e in m.history(mem.id))
    assert m.sources(status="deleted")[0]["key"] == key


def test_sync_of_a_deleted_folder_archives_what_was_ingested_from_it(m: Mnemo, tree: Path) -> None:
    m.ingest([tree])
    keys = [s["key"] for s in m.sources() if s["key"].startswith(f"file:{tree / 'en'}{os.sep}")]
    assert keys
    shutil.rmtree(tree / "en")
    report = m.ingest([tree / "en"], sync=True)  # the folder itself is gone: nothing else to walk
    assert report["archived"] >= len(keys) and all(not _chunks(m, k) for k in keys)
    assert all(m.store.get_source(k)["status"] == "deleted" for k in keys)
    assert _chunks(m, f"file:{tree / PERF}")  # a sibling outside the folder is untouched


def test_rename_is_recognised_by_content_hash_without_embedding(m: Mnemo, tree: Path) -> None:
    m.ingest([tree])
    old_key = f"file:{tree / PERF}"
    ids = [c.id for c in _chunks(m, old_key)]
    calls = m.embedder.calls
    (tree / PERF).rename(tree / "en" / "perf-notes.md")
    report = m.ingest([tree], sync=True)
    assert report["renamed"] == 1 and report["archived"] == 0 and report["chunks"] == 0
    assert m.embedder.calls == calls  # nothing was embedded again
    new_key = f"file:{tree / 'en' / 'perf-notes.md'}"
    assert [c.id for c in _chunks(m, new_key)] == ids and m.store.get_source(old_key) is None
    assert m.store.get_source(new_key)["metadata"]["renamed_from"] == old_key


def test_rename_after_sync_brings_archived_chunks_back(m: Mnemo, tree: Path) -> None:
    m.ingest([tree])
    moved = tmp = tree.parent / "elsewhere.md"
    shutil.move(tree / PERF, tmp)
    assert m.ingest([tree], sync=True)["archived"] > 0
    report = m.ingest([moved])
    assert report["renamed"] == 1
    assert _chunks(m, f"file:{moved}") and m.store.get_source(f"file:{moved}")["status"] == "active"


def _rename_with_edit(tree: Path, target: Path, old: str = "容量一万条", new: str = "容量五万条") -> None:
    target.write_text((tree / PERF).read_text("utf-8").replace(old, new), "utf-8")
    (tree / PERF).unlink()


def test_rename_with_a_one_line_edit_is_a_rename_then_an_update(m: Mnemo, tree: Path) -> None:
    m.ingest([tree])
    old_key, new_key = f"file:{tree / PERF}", f"file:{tree / 'en' / 'perf-notes.md'}"
    old = {c.content: c for c in _chunks(m, old_key)}
    assert len(old) >= 3
    calls = m.embedder.calls
    _rename_with_edit(tree, tree / "en" / "perf-notes.md")
    report = m.ingest([tree])  # no --sync: the old key must not linger with the same paragraphs
    assert report["renamed"] == 1 and report["ingested"] == 1 and report["archived"] == 0
    assert report["chunks"] == 1 and report["superseded"] == 1 and m.embedder.calls == calls + 1  # only the edited chunk
    (entry,) = [s for s in report["sources"] if s["key"] == new_key]
    assert entry["action"] == "renamed" and entry["renamed_from"] == old_key and entry["kept"] == len(old) - 1
    keys = {s["key"] for s in m.sources()}
    assert new_key in keys and old_key not in keys and m.store.get_source(old_key) is None
    assert m.store.get_source(new_key)["metadata"]["renamed_from"] == old_key
    # an unchanged paragraph is found once, under the new key, with the same id as before
    hits = [h for h in m.recall("随机抖动", mode="fts", touch=False) if "随机抖动" in h.memory.content]
    assert len(hits) == 1 and hits[0].memory.source == new_key and hits[0].memory.id == old[hits[0].memory.content].id
    assert any(e["kind"] == "renamed" and e["data"]["from"] == old_key for e in m.history(hits[0].memory.id))
    # the edited paragraph: the new text is active, the old one superseded by it
    (edited,) = [c for k, c in old.items() if "一万条" in k]
    assert m.get(edited.id).status == "superseded"
    assert m.recall("五万条", mode="fts", touch=False)[0].memory.id == m.get(edited.id).superseded_by
    assert m.ingest([tree])["unchanged"] == 8  # and it is settled


def test_a_copy_with_an_edit_stays_two_sources(m: Mnemo, tree: Path) -> None:
    m.ingest([tree])
    copy = tree / "en" / "perf-copy.md"
    copy.write_text((tree / PERF).read_text("utf-8").replace("容量一万条", "容量五万条"), "utf-8")
    report = m.ingest([tree])
    assert report["renamed"] == 0 and report["ingested"] == 1
    assert [s["action"] for s in report["sources"] if s["key"] == f"file:{copy}"] == ["new"]
    assert _chunks(m, f"file:{tree / PERF}") and _chunks(m, f"file:{copy}")


def test_a_rename_with_a_rewritten_body_is_a_delete_and_an_add(m: Mnemo, tree: Path) -> None:
    m.ingest([tree])
    old_key, moved = f"file:{tree / PERF}", tree / "en" / "rewritten.md"
    moved.write_text("# 性能优化笔记\n\n全部重写了。\n\n## 新的一节\n\n内容和以前完全不同。\n", "utf-8")
    (tree / PERF).unlink()
    report = m.ingest([tree])
    assert report["renamed"] == 0 and report["ingested"] == 1
    assert _chunks(m, old_key) and m.store.get_source(old_key)["status"] == "active"  # kept without --sync, as before
    assert m.ingest([tree], sync=True)["archived"] == len(_chunks(m, old_key, ("archived",))) > 0


def test_rename_with_an_edit_after_sync_restores_the_unchanged_chunks(m: Mnemo, tree: Path) -> None:
    # the inbox watcher sees the old file go (and archives it) before the new one arrives
    m.ingest([tree])
    old_key, moved = f"file:{tree / PERF}", tree.parent / "elsewhere.md"
    ids = {c.content: c.id for c in _chunks(m, old_key)}
    _rename_with_edit(tree, moved)
    assert m.ingest([tree], sync=True)["archived"] == len(ids)
    report = m.ingest([moved])
    assert report["renamed"] == 1 and report["chunks"] == 1 and report["superseded"] == 1
    active = _chunks(m, f"file:{moved}")
    assert len(active) == len(ids) and len([c for c in active if ids.get(c.content) == c.id]) == len(ids) - 1
    assert m.store.get_source(f"file:{moved}")["status"] == "active" and m.store.get_source(old_key) is None


def test_edit_similarity_asks_for_half_of_each_version() -> None:
    assert edit_similarity({"a", "b", "c2"}, {"a", "b", "c"}) == 0.5  # one paragraph of three edited
    assert edit_similarity({"a", "b2"}, {"a", "b"}) > 0  # half of each, the smallest that counts
    assert edit_similarity({"a", "x", "y"}, {"a", "b", "c"}) == 0  # only one paragraph kept
    assert edit_similarity({"a", "x", "y", "z"}, {"a"}) == 0  # a small note quoted by a larger one
    assert edit_similarity({"a"}, {"a", "b", "c"}) == 0  # most of the old one is gone
    assert edit_similarity(set(), {"a"}) == edit_similarity({"a2"}, {"a"}) == 0


def test_scope_tags_type_include_exclude(m: Mnemo, tree: Path) -> None:
    report = m.ingest([tree], scope="project:notes", tags="kb", include=["*.md"], exclude=["web"])
    assert report["ingested"] == 2
    reasons = report["skipped_counts"]
    assert reasons["not included"] >= 4 and reasons["excluded"] == 1
    (mem, *_) = _chunks(m, f"file:{tree / PERF}")
    assert mem.scope == "project:notes" and mem.tags == ["kb"]
    agents = tree / "AGENTS.md"
    agents.write_text("# Agents\n\nRun `make test` before every commit.\n", "utf-8")
    m.ingest([agents], type="project_context")
    assert _chunks(m, f"file:{agents}")[0].type == "project_context"


def test_secrets_in_documents_are_redacted(m: Mnemo, tmp_path: Path) -> None:
    doc = tmp_path / "ops.md"
    secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEF"
    doc.write_text(f"# Ops\n\n## Keys: {secret}\n\nThe staging key is {secret}.\n", "utf-8")
    m.ingest([doc])
    (mem,) = _chunks(m, f"file:{doc}")
    assert "abcdefghijklmnop" not in mem.content and mem.metadata.get("redacted")
    assert "abcdefghijklmnop" not in str(mem.metadata) and "abcdefghijklmnop" not in str(m.sources())  # headings too
    assert not m.recall("abcdefghijklmnopqrstuvwxyz0123456789ABCDEF", mode="fts", touch=False)


# ---------------------------------------------------------------- bad input


def test_bad_files_are_reported_and_the_run_goes_on(m: Mnemo, tree: Path) -> None:
    (tree / "photo.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 20)
    (tree / ".secret.md").write_text("# hidden\n\nnot to be read\n", "utf-8")
    (tree / ".git").mkdir()
    (tree / ".git" / "config.md").write_text("x", "utf-8")
    with open(tree / "huge.md", "wb") as fh:  # a sparse 100 MB file: over the limit without writing it
        fh.truncate(100 * 1024 * 1024)
    os.symlink(tree, tree / "en" / "loop")
    (tree / "broken.md").symlink_to(tree / "missing.md")
    (tree / "bad-encoding.txt").write_bytes(bytes(range(0x80, 0x100)) * 4)
    os.mkfifo(tree / "pipe.md")  # reading it would block forever
    report = m.ingest([tree])
    reasons = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert report["ingested"] == 8
    assert "binary" in reasons["photo.txt"]
    assert "100.0 MB is over the 20.0 MB limit" in reasons["huge.md"]
    assert "symlink loop" in reasons["loop"]
    assert reasons["broken.md"] == "broken symlink"
    assert reasons[".secret.md"] == reasons[".git"] == "hidden"
    assert "bad-encoding.txt" in reasons
    assert reasons["pipe.md"] == "not a regular file"
    assert report["skipped_counts"]["hidden"] == 2


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_skipped(m: Mnemo, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.md", tmp_path / "bad.md"
    good.write_text("# ok\n\nreadable\n", "utf-8")
    bad.write_text("# no\n\nsecret\n", "utf-8")
    bad.chmod(0)
    report = m.ingest([good, bad])
    assert report["ingested"] == 1 and "cannot read" in report["skipped"][0]["reason"]


def test_nothing_ingestable_is_an_error(m: Mnemo, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"\x00\x01\x02")
    with pytest.raises(IngestError, match="nothing could be ingested"):
        m.ingest([tmp_path / "a.txt", tmp_path / "missing.md"])
    with pytest.raises(InvalidInputError):
        m.ingest([])
    assert m.ingest([tmp_path], include=["*.md"])["files_seen"] > 0  # a folder with nothing to take is not an error


# ---------------------------------------------------------------- CLI


def test_cli_ingest_sources_and_json_summary(cli, tree: Path) -> None:
    r = cli("ingest", str(tree), "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert {"files_seen", "ingested", "unchanged", "skipped", "chunks", "superseded", "archived", "renamed"} <= set(data)
    assert data["ingested"] == 8
    r = cli("ingest", str(tree))
    assert r.code == 0 and "8 unchanged" in r.out
    r = cli("sources", "--json", "--kind", "chat")
    assert r.code == 0 and len(r.json()) == 3
    assert "性能优化笔记" in cli("sources").out
    r = cli("search", "花生过敏", "--json")
    assert r.json()["results"][0]["source"].startswith("chat:")


def test_cli_reports_bad_input_in_one_line(cli, tmp_path: Path) -> None:
    (tmp_path / "bin.txt").write_bytes(b"\x00" * 10)
    r = cli("ingest", str(tmp_path / "bin.txt"))
    assert r.code == 2 and r.err.startswith("error: nothing could be ingested") and "Traceback" not in r.err
    r = cli("ingest", "--chunk-chars", "5", str(tmp_path))
    assert r.code == 2 and "chunk size" in r.err


# ---------------------------------------------------------------- real models


@pytest.mark.model
@pytest.mark.parametrize("model", ["e5", "use"])
def test_real_model_finds_the_right_paragraph_in_both_languages(model: str, tmp_path: Path) -> None:
    with Mnemo(tmp_path / "s.db", model=model) as m:
        m.ingest([FIXTURES])
        for query, expected in [
            ("联合索引的列顺序应该怎么排", "列顺序"),
            ("how do we avoid a cache stampede when many keys expire", "随机抖动"),
            ("when do we roll back a canary deploy", "roll back immediately"),
            ("张三对什么过敏", "花生过敏"),
        ]:
            hits = m.recall(query, top_k=3, touch=False)
            assert any(expected in h.memory.content for h in hits), (query, [h.memory.content[:40] for h in hits])


def test_chunking_benchmark_renders_turn_spans_exactly() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from datetime import datetime, timezone

    from bench import _data
    from bench.chunking import covered, render

    when = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    recs = [_data.Record(f"D{s}:{t}", f"Speaker{t % 2}: turn {s}.{t} " + "words " * t, when) for s in (1, 2) for t in (1, 2, 3)]
    doc, spans = render(_data.StoreSpec("conv-x", recs, []))
    assert all(doc[a:b] == r.content for r in recs for a, b in [spans[r.id]])
    assert "## Session 2 · 8 May 2023, 13:56" in doc
    assert covered((10, 20), (15, 40)) and not covered((10, 20), (16, 40))


def test_reindex_and_edit_keep_a_chunks_heading_prefix(m: Mnemo, tmp_path: Path) -> None:
    """The title and heading path are part of what a chunk is embedded and indexed as; rebuilding
    the index or editing the text must not drop them."""
    doc = tmp_path / "notes.md"
    doc.write_text("# Kubernetes runbook\n\n## Rollback\n\nScale the deployment down and restore the previous image.\n", "utf-8")
    m.ingest([str(doc)])
    (chunk,) = _chunks(m, f"file:{doc.resolve()}")

    def found(query: str) -> bool:
        return any(h.memory.id == chunk.id for h in m.recall(query, mode="fts", touch=False))

    assert found("kubernetes rollback")  # heading words only: the prefix is indexed
    m.reindex()
    assert found("kubernetes rollback")
    m.edit(chunk.id, content="Scale the deployment down, then restore the previous image tag.")
    assert found("kubernetes rollback") and found("image tag")
