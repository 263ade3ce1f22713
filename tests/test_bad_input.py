"""Bad input of every kind: one clear ``error:`` line, a non-zero exit, no traceback, and the store unchanged."""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from conftest import FAKE_MODEL
from fake_embedder import FakeEmbedder

from mnemo import Mnemo
from mnemo._stores.sqlite_schema import LATEST_VERSION

WRONG_DIM_MODEL = "plugin:fake_embedder:WrongDimEmbedder"

# every case here proves "nothing changed" by reading the SQLite file itself; PostgreSQL's bad
# input (unreachable server, privileges, dimensions, restarts) is in test_postgres.py
pytestmark = pytest.mark.sqlite_only


class OtherEmbedder(FakeEmbedder):
    """Another model (another identity) that built a store's index."""

    name = "other-model-64"


# ---------------------------------------------------------------- helpers


def fails(cli, *args: str, stdin: str | bytes | None = None, code: int | None = None, match: str | None = None) -> str:
    """Run the command as text and as --json; both must fail with one ``error:`` line and no traceback."""
    message = ""
    for as_json in (False, True):
        r = cli(*args, *(["--json"] if as_json else []), stdin=stdin)
        assert r.code != 0, (args, r.out, r.err)
        if code is not None:
            assert r.code == code, (args, r.code, r.err)
        lines = r.err.splitlines()
        assert len(lines) == 1, (args, r.err)
        assert lines[0].startswith("error: "), (args, r.err)
        assert "Traceback" not in r.out + r.err
        if match is not None:
            assert match in lines[0], (args, lines[0])
        if as_json:
            payload = r.json()
            assert payload["error"] == lines[0][len("error: "):] and payload["kind"]
        else:
            assert r.out == "", (args, r.out)
        message = lines[0]
    return message


def dump(db: Path) -> dict:
    """Every row that matters, read without mnemo."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        q = lambda sql: list(conn.execute(sql))  # noqa: E731
        return {
            "memories": q("SELECT * FROM memories ORDER BY pk"),
            "events": q("SELECT * FROM events ORDER BY pk"),
            "meta": q("SELECT * FROM meta ORDER BY key"),
            "embeddings": q("SELECT model, text_hash, dim FROM embeddings ORDER BY model, text_hash"),
            "fts": q("SELECT rowid FROM memory_fts ORDER BY rowid"),
            "version": q("PRAGMA user_version"),
        }
    finally:
        conn.close()


def files(db: Path) -> dict[str, str]:
    """Name → sha256 of the store file and of every file beside it named after it (backups…),
    SQLite's transient -wal/-shm side files aside."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(db.parent.iterdir())
            if p.is_file() and p.name.startswith(db.name) and not p.name.endswith(("-wal", "-shm"))}


@pytest.fixture
def store(mnemo_home: Path) -> Path:
    """The CLI's default store, with a few memories (one forgotten), built with the fake model."""
    db = mnemo_home / "memory.db"
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        m.remember("We deploy with GitHub Actions", type="decision", scope="project:app", tags=["ci"])
        m.remember("I prefer concise answers")
        gone = m.remember("an outdated fact", type="fact")
        m.forget(gone.id)
    return db


@pytest.fixture
def unchanged(store: Path):
    """Asserts, after the test, that the store's rows and bytes are exactly as before."""
    rows, before = dump(store), files(store)
    yield store
    assert dump(store) == rows
    assert files(store) == before


# ---------------------------------------------------------------- content


@pytest.mark.parametrize("text", ["", "   ", " \n\t "])
def test_empty_content(cli, unchanged: Path, text: str) -> None:
    fails(cli, "save", text, code=2, match="content is empty")


def test_empty_stdin(cli, unchanged: Path) -> None:
    fails(cli, "save", "-", stdin=b"  \n", code=2, match="content is empty")


def test_ten_megabytes_from_stdin(cli, unchanged: Path) -> None:
    msg = fails(cli, "save", "-", stdin=b"x" * (10 * 1024 * 1024), code=2)
    assert "10,485,760 characters" in msg and "32,000" in msg


def test_ten_megabytes_as_argument(cli, unchanged: Path) -> None:
    fails(cli, "save", "word " * (2 * 1024 * 1024), code=2, match="characters")


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n" + bytes(random.Random(1).randrange(256) for _ in range(4096)),
        b"\xff\xfe\xfd not utf-8",
        b"caf\xe9 latin-1",
    ],
    ids=["png", "ff-fe", "latin1"],
)
def test_invalid_utf8_from_stdin(cli, unchanged: Path, data: bytes) -> None:
    fails(cli, "save", "-", stdin=data, code=2, match="not valid UTF-8")


@pytest.mark.parametrize("data", [b"abc\x00def" * 20, bytes(range(1, 32)) * 50], ids=["nul", "controls"])
def test_binary_but_valid_utf8_from_stdin(cli, unchanged: Path, data: bytes) -> None:
    fails(cli, "save", "-", stdin=data, code=2, match="binary")


def test_undecodable_argument(cli, unchanged: Path) -> None:
    # Python hands undecodable argv bytes over as lone surrogates (surrogateescape)
    fails(cli, "save", "caf\udce9 au lait", code=2, match="not valid UTF-8")


def test_unknown_type(cli, unchanged: Path) -> None:
    msg = fails(cli, "save", "hello there", "--type", "bogus", code=2, match="unknown type 'bogus'")
    assert "user_preference" in msg  # lists the choices


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "inf", "100"])
def test_importance_out_of_range(cli, unchanged: Path, value: str) -> None:
    fails(cli, "save", "hello there", f"--importance={value}", code=2, match="importance")


@pytest.mark.parametrize("value", ["1.01", "-1"])
def test_confidence_out_of_range(cli, unchanged: Path, value: str) -> None:
    fails(cli, "save", "hello there", f"--confidence={value}", code=2, match="confidence")


@pytest.mark.parametrize(
    ("option", "value", "word"),
    [("--scope", "all", "reserved"), ("--scope", " ", "scope"), ("--created-at", "yesterday-ish", "ISO-8601"), ("--tags", "x" * 65, "tag")],
)
def test_other_bad_fields(cli, unchanged: Path, option: str, value: str, word: str) -> None:
    fails(cli, "save", "hello there", option, value, code=2, match=word)


def test_rejected_save_creates_no_store(cli, mnemo_home: Path) -> None:
    fails(cli, "save", "   ", code=2)
    assert not (mnemo_home / "memory.db").exists()


# ---------------------------------------------------------------- import


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_malformed_import_lines_import_nothing(cli, unchanged: Path, tmp_path: Path) -> None:
    f = _write(tmp_path / "bad.jsonl", [
        json.dumps({"content": "good one"}),
        "{not json",
        json.dumps({"content": "good two"}),
        json.dumps({"content": "   "}),
        json.dumps({"content": "bad type", "type": "bogus"}),
        json.dumps({"content": "bad importance", "importance": 7}),
        json.dumps(["not", "an", "object"]),
        json.dumps({"content": "bad time", "created_at": "soonish"}),
    ])
    msg = fails(cli, "import", str(f), code=2)
    for n in (2, 4, 5, 6, 7):  # the first five are spelled out, the rest counted
        assert f"line {n}:" in msg, (n, msg)
    assert "(and 1 more)" in msg
    assert "6 malformed record(s), nothing imported" in msg
    assert "line 1:" not in msg and "line 3:" not in msg
    r = cli("import", str(f), "--json")
    assert [p["line"] for p in r.json()["problems"]] == [2, 4, 5, 6, 7, 8]


def test_malformed_import_after_many_good_lines_imports_nothing(cli, unchanged: Path, tmp_path: Path) -> None:
    lines = [json.dumps({"content": f"good record {i}"}) for i in range(300)] + ["{broken"]
    fails(cli, "import", str(_write(tmp_path / "late.jsonl", lines)), code=2, match="line 301")


def test_skip_invalid_imports_the_rest(cli, store: Path, tmp_path: Path) -> None:
    f = _write(tmp_path / "mixed.jsonl", [json.dumps({"content": "good one"}), "{not json", json.dumps({"content": "good two"})])
    r = cli("import", str(f), "--skip-invalid", "--json")
    assert r.code == 0, r.err
    assert r.json()["imported"] == 2 and [p["line"] for p in r.json()["invalid"]] == [2]
    assert len(dump(store)["memories"]) == 5


@pytest.mark.parametrize(
    ("name", "content", "word"),
    [
        ("empty.jsonl", b"", "empty"),
        ("blank.jsonl", b"\n \n", "empty"),
        ("binary.jsonl", b"\x89PNG\r\n\x1a\n\xff\xfe\x00", "UTF-8"),
        ("array.json", b'[{"content": "a"},\n {"content": ', "invalid JSON"),
        ("scalar.json", b"42", "malformed"),
        ("object.json", b'{"memories": 5}', "expected a list"),
    ],
)
def test_unusable_import_files(cli, unchanged: Path, tmp_path: Path, name: str, content: bytes, word: str) -> None:
    f = tmp_path / name
    f.write_bytes(content)
    fails(cli, "import", str(f), code=2, match=word)


def test_missing_import_file(cli, unchanged: Path, tmp_path: Path) -> None:
    fails(cli, "import", str(tmp_path / "nope.jsonl"), match="nope.jsonl")


def test_rejected_import_creates_no_store(cli, mnemo_home: Path, tmp_path: Path) -> None:
    f = _write(tmp_path / "bad.jsonl", ["{not json"])
    fails(cli, "import", str(f), code=2)
    assert not (mnemo_home / "memory.db").exists()


def test_malformed_search_batch(cli, unchanged: Path, tmp_path: Path) -> None:
    f = _write(tmp_path / "q.jsonl", [json.dumps({"query": "ok"}), "{nope", json.dumps({"qid": "x"})])
    msg = fails(cli, "search", "--batch", str(f), code=2)
    assert "line 2" in msg and "line 3" in msg


# ---------------------------------------------------------------- the store itself


@pytest.mark.parametrize(
    "args",
    [["stats"], ["search", "anything"], ["recent"], ["list"], ["show", "mem_x"], ["history", "mem_x"], ["forget", "mem_x"],
     ["restore", "mem_x"], ["export"], ["reindex"], ["doctor"], ["search", "--batch", "-"]],
    ids=lambda a: "-".join(a[:2]),
)
def test_missing_store(cli, tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "nowhere" / "missing.db"
    msg = fails(cli, *args, "--db", str(db), code=4, stdin='{"query": "x"}\n')
    assert "no mnemo store" in msg and "mnemo init" in msg and str(db) in msg
    assert not db.exists() and not db.parent.exists()


def test_missing_default_store(cli, mnemo_home: Path) -> None:
    fails(cli, "search", "anything", code=4, match="mnemo init")
    assert not (mnemo_home / "memory.db").exists()


def test_store_path_is_a_folder(cli, tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    for args in (["stats"], ["save", "hello"]):
        fails(cli, *args, "--db", str(tmp_path / "adir"), code=4, match="folder")


def test_store_folder_cannot_be_created(cli, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    fails(cli, "save", "hello", "--db", str(blocker / "sub" / "x.db"), code=4, match="cannot create")
    assert blocker.read_text() == "not a folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_unreadable_store(cli, store: Path) -> None:
    before = files(store)
    store.chmod(0)
    try:
        fails(cli, "stats", code=4)
        fails(cli, "save", "hello there", code=4)
    finally:
        store.chmod(0o600)
    assert files(store) == before


def test_newer_schema(cli, store: Path) -> None:
    conn = apsw.Connection(str(store))
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    conn.close()
    before_rows, before_files = dump(store), files(store)
    for args in (["stats"], ["search", "deploy"], ["save", "hello there"], ["doctor"], ["reindex"]):
        msg = fails(cli, *args, code=4, match="newer")
        assert f"schema version {LATEST_VERSION + 1}" in msg and "upgrade mnemo" in msg
    assert dump(store) == before_rows
    assert files(store) == before_files  # no migration, no backup file


def _random_file(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(64 * 1024))


def _truncated(path: Path) -> None:
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        m.remember_many([dict(content=f"memory number {i} about things") for i in range(50)])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _foreign_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('alice')")
    conn.commit()
    conn.close()


def _text_file(path: Path) -> None:
    path.write_text("these are my notes, not a database\n" * 100)


@pytest.mark.parametrize("make", [_random_file, _truncated, _foreign_sqlite, _text_file], ids=["random", "truncated", "foreign-sqlite", "text"])
def test_corrupted_or_foreign_file(cli, tmp_path: Path, make) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    db = folder / "store.db"
    make(db)
    before = files(db)
    for args in (["stats"], ["search", "memory things"], ["save", "hello there"], ["list"], ["export"], ["import", os.devnull], ["doctor"]):
        fails(cli, *args, "--db", str(db), code=4)
    assert files(db) == before


def test_foreign_sqlite_message_names_it(cli, tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    _foreign_sqlite(db)
    fails(cli, "stats", "--db", str(db), match="not a mnemo store")


# ---------------------------------------------------------------- models


@pytest.fixture
def other_models_store(mnemo_home: Path) -> Path:
    db = mnemo_home / "memory.db"
    with Mnemo(db, embedder=OtherEmbedder()) as m:
        m.remember("We deploy with GitHub Actions", scope="project:app")
        m.remember("I prefer concise answers")
    return db


def test_another_models_index(cli, other_models_store: Path, tmp_path: Path) -> None:
    rows, before = dump(other_models_store), files(other_models_store)
    f = _write(tmp_path / "in.jsonl", [json.dumps({"content": "an imported memory"})])
    for args in (["search", "deploy"], ["save", "a new memory"], ["import", str(f)], ["search", "--batch", "-"]):
        msg = fails(cli, *args, code=4, stdin='{"query": "deploy"}\n')
        assert "other-model-64" in msg and "fake-hash-256" in msg and "mnemo reindex" in msg, msg
    assert dump(other_models_store) == rows
    assert files(other_models_store) == before
    # the advice works
    r = cli("reindex", "--json")
    assert r.code == 0, r.err
    assert r.json()["previous_model"] == "other-model-64" and r.json()["model"] == "fake-hash-256"
    assert cli("search", "deploy", "--scope", "project:app", "--json").json()["results"][0]["content"] == "We deploy with GitHub Actions"


def test_another_model_doctor_says_reindex(cli, other_models_store: Path) -> None:
    r = cli("doctor", "--json")
    assert r.code == 1 and "Traceback" not in r.out + r.err
    checks = {c["check"]: c for c in r.json()["checks"]}
    assert checks["index model"]["status"] == "fail" and "mnemo reindex" in checks["index model"]["fix"]


def test_wrong_dimension_model(cli, unchanged: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MNEMO_MODEL", WRONG_DIM_MODEL)
    f = _write(tmp_path / "in.jsonl", [json.dumps({"content": "an imported memory"})])
    for args in (["save", "a brand new memory"], ["search", "deploy"], ["import", str(f)], ["search", "--batch", "-"]):
        msg = fails(cli, *args, code=5, stdin='{"query": "deploy"}\n')
        assert "32-d" in msg and "256-d" in msg, msg


def test_wrong_dimension_model_doctor(cli, store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_MODEL", WRONG_DIM_MODEL)
    r = cli("doctor", "--json")
    assert r.code == 1 and "Traceback" not in r.out + r.err
    assert {c["check"]: c["status"] for c in r.json()["checks"]}["model"] == "fail"


@pytest.mark.parametrize(("model", "word"), [("nonsense", "unknown model"), ("plugin:no_such_module_xyz:Thing", "cannot load embedder"),
                                            ("openai:text-embedding-3-small", "embed_base_url")])
def test_unusable_model_setting(cli, unchanged: Path, model: str, word: str) -> None:
    fails(cli, "search", "deploy", "--model", model, code=2, match=word)
    fails(cli, "save", "a brand new memory", "--model", model, code=2, match=word)


# ---------------------------------------------------------------- settings


def test_bad_config_file(cli, unchanged: Path, mnemo_home: Path) -> None:
    cfg = mnemo_home / "config.toml"
    cfg.write_text("top_k = [unclosed\n", encoding="utf-8")
    fails(cli, "stats", code=2, match="config.toml")
    cfg.write_text('colour = "blue"\n', encoding="utf-8")
    fails(cli, "stats", code=2, match="unknown setting 'colour'")
    cfg.write_text('top_k = "many"\n', encoding="utf-8")
    fails(cli, "search", "deploy", code=2, match="top_k")


def test_bad_env_setting(cli, unchanged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_TOP_K", "lots")
    fails(cli, "search", "deploy", code=2, match="MNEMO_TOP_K")


@pytest.mark.parametrize("args", [["search", "deploy", "-k", "0"], ["search", "deploy", "-k", "5000"], ["search", "deploy", "--since", "whenever"],
                                  ["list", "--since", "whenever"], ["search", "deploy", "--type", "bogus"]])
def test_bad_search_options(cli, unchanged: Path, args: list[str]) -> None:
    fails(cli, *args, code=2)


# ---------------------------------------------------------------- real processes


def test_no_traceback_in_a_real_process(tmp_path: Path) -> None:
    """argv with undecodable bytes and a corrupt store, through ``python -m mnemo``."""
    env = dict(os.environ)
    assert env["MNEMO_MODEL"] == FAKE_MODEL
    bad = tmp_path / "bad.db"
    _random_file(bad)
    cases = [
        ([os.fsencode(sys.executable), b"-m", b"mnemo", b"save", b"caf\xe9 au lait", b"--db", os.fsencode(tmp_path / "ok.db")], 2, "UTF-8"),
        ([sys.executable, "-m", "mnemo", "stats", "--db", str(bad)], 4, "not a mnemo store"),
    ]
    for argv, code, word in cases:
        p = subprocess.run(argv, env=env, capture_output=True, timeout=60)
        err = p.stderr.decode("utf-8", "replace")
        assert p.returncode == code, err
        assert "Traceback" not in err and p.stdout == b""
        assert len(err.splitlines()) == 1 and err.startswith("error: ") and word in err, err
