"""The ``mnemo`` command: every command with and without ``--json``, run in-process (one real subprocess test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from conftest import FAKE_MODEL
from fake_embedder import unrelated_query

from mnemo import Mnemo
from mnemo._entry import OPERATIONS, main_group



API_OPERATIONS = {"remember", "recall", "forget", "restore", "recent", "list", "get", "history", "stats", "export", "import_", "reindex", "doctor"}


def save(cli, *args: str) -> dict:
    r = cli("save", *args, "--json")
    assert r.code == 0, r.err
    return r.json()["memory"]


# ---------------------------------------------------------------- the command table


def test_every_api_operation_is_reachable_from_the_cli() -> None:
    assert API_OPERATIONS <= set(OPERATIONS.values())
    for op in OPERATIONS.values():
        assert callable(getattr(Mnemo, op)), op


def test_operations_table_names_real_commands() -> None:
    assert set(OPERATIONS) <= set(main_group.commands)


def test_every_command_has_help_text(cli) -> None:
    assert {"init", "save", "search", "recent", "list", "show", "history", "forget", "restore", "stats", "export",
            "import", "reindex", "doctor", "config", "demo"} <= set(main_group.commands)
    for name, cmd in main_group.commands.items():
        assert cmd.help and cmd.help.strip(), name
        r = cli(name, "--help")
        assert r.code == 0, (name, r.err)
        assert cmd.help.strip().splitlines()[0].split()[0] in r.out, name
        assert "--json" in r.out, name
    top = cli("--help")
    assert top.code == 0
    for name in main_group.commands:
        assert name in top.out


def test_version(cli) -> None:
    r = cli("--version")
    assert r.code == 0 and "0.1.0" in r.out


# ---------------------------------------------------------------- init / save


@pytest.mark.sqlite_only  # the default store file in the mnemo home
def test_init(cli, mnemo_home: Path) -> None:
    r = cli("init")
    assert r.code == 0, r.err
    db = mnemo_home / "memory.db"
    assert db.exists()
    assert "created store" in r.out and str(db) in r.out
    again = cli("init", "--json")
    assert again.code == 0
    info = again.json()
    assert info["created"] is False and info["path"] == str(db) and info["total"] == 0 and info["schema_version"] >= 1
    assert "found store" in cli("init").out


def test_init_json_on_a_new_store(cli, tmp_path: Path) -> None:
    db = tmp_path / "sub" / "x.db"
    info = cli("init", "--db", str(db), "--json").json()
    assert info["created"] is True and info["path"] == str(db) and db.exists()


def test_save_text_and_json(cli) -> None:
    r = cli("save", "We", "deploy", "with", "GitHub", "Actions", "--type", "decision", "--scope", "project:app", "--tags", "ci,deploy",
            "--importance", "0.8", "--confidence", "0.9", "--source", "chat")
    assert r.code == 0, r.err
    assert r.out.startswith("saved mem_") and "decision" in r.out and "project:app" in r.out
    again = cli("save", "we deploy with github actions", "--scope", "project:app", "--tags", "ops", "--json")
    assert again.code == 0
    data = again.json()
    assert data["action"] == "merged"
    mem = data["memory"]
    assert mem["content"] == "We deploy with GitHub Actions" and mem["type"] == "decision" and mem["scope"] == "project:app"
    assert mem["tags"] == ["ci", "deploy", "ops"] and mem["importance"] == pytest.approx(0.85) and mem["source"] == "chat"
    assert mem["confidence"] == 1.0  # the repeat (default confidence 1.0) raised it: max of both
    text = cli("save", "we deploy with github actions", "--scope", "project:app")
    assert text.code == 0 and "already remembered: merged into" in text.out and mem["id"] in text.out


def test_save_json_keys_and_created_at(cli) -> None:
    data = cli("save", "an event from the past", "--created-at", "2024-05-08T13:56:00Z", "--json").json()
    assert data["action"] == "created"
    mem = data["memory"]
    assert set(mem) >= {"id", "content", "type", "scope", "tags", "importance", "confidence", "source", "created_at", "updated_at",
                        "status", "access_count", "content_hash", "metadata"}
    assert mem["created_at"] == "2024-05-08T13:56:00Z" and mem["scope"] == "global" and mem["type"] == "note"


def test_save_dash_reads_stdin(cli) -> None:
    r = cli("save", "-", "--json", stdin="项目使用 FastAPI + PostgreSQL\n第二行\n")
    assert r.code == 0, r.err
    assert r.json()["memory"]["content"] == "项目使用 FastAPI + PostgreSQL\n第二行"
    shown = cli("show", r.json()["memory"]["id"], "--json").json()
    assert shown["memory"]["content"] == "项目使用 FastAPI + PostgreSQL\n第二行"


def test_default_scope_from_env(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_SCOPE", "project:x")
    mem = save(cli, "kubernetes manifests live in deploy/k8s")
    assert mem["scope"] == "project:x"
    assert [h["id"] for h in cli("search", "kubernetes manifests", "--json").json()["results"]] == [mem["id"]]
    monkeypatch.setenv("MNEMO_SCOPE", "project:y")
    assert cli("search", "kubernetes manifests", "--json").json()["results"] == []
    assert [h["id"] for h in cli("search", "kubernetes manifests", "--scope", "all", "--json").json()["results"]] == [mem["id"]]
    assert [h["id"] for h in cli("search", "kubernetes manifests", "--scope", "project:x", "--json").json()["results"]] == [mem["id"]]
    # the flag beats the environment for writes too
    assert save(cli, "flag scope wins", "--scope", "project:z")["scope"] == "project:z"
    assert save(cli, "env scope again")["scope"] == "project:y"


# ---------------------------------------------------------------- search


@pytest.fixture
def stocked(cli) -> dict[str, dict]:
    return {
        "deploy": save(cli, "We deploy with GitHub Actions to a single VPS", "--type", "decision", "--scope", "project:app", "--tags", "ci"),
        "db": save(cli, "The staging database is PostgreSQL on port 5433", "--type", "fact", "--scope", "project:app"),
        "other": save(cli, "Project other deploys with Jenkins", "--scope", "project:other"),
        "pref": save(cli, "I prefer concise answers with code first", "--type", "user_preference"),
        "old": save(cli, "An old note about lunch menus", "--created-at", "2020-01-01T00:00:00Z"),
    }


def test_search_json(cli, stocked: dict[str, dict]) -> None:
    r = cli("search", "GitHub Actions deploy", "--scope", "project:app", "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert data["query"] == "GitHub Actions deploy"
    assert data["results"][0]["id"] == stocked["deploy"]["id"]
    assert stocked["other"]["id"] not in [h["id"] for h in data["results"]]
    hit = data["results"][0]
    assert set(hit) >= {"id", "content", "score", "similarity", "type", "scope", "created_at"} and "explain" not in hit


def test_search_text_and_explain(cli, stocked: dict[str, dict]) -> None:
    r = cli("search", "GitHub Actions deploy", "--scope", "project:app")
    assert r.code == 0, r.err
    assert r.out.startswith("1. We deploy with GitHub Actions to a single VPS")
    assert stocked["deploy"]["id"] in r.out
    ex = cli("search", "GitHub Actions deploy", "--scope", "project:app", "--explain")
    assert "cosine" in ex.out and "bm25" in ex.out and "relevance" in ex.out and "recency" in ex.out
    exj = cli("search", "GitHub Actions deploy", "--scope", "project:app", "--explain", "--json").json()
    assert {"relevance", "bm25", "similarity", "score"} <= set(exj["results"][0]["explain"])
    none = cli("search", unrelated_query([m["content"] for m in stocked.values()]))
    assert none.code == 0 and "no relevant memories" in none.out


def test_search_filters_and_k(cli, stocked: dict[str, dict]) -> None:
    def found(*args: str) -> list[str]:
        r = cli("search", *args, "--json")
        assert r.code == 0, r.err
        return [h["id"] for h in r.json()["results"]]

    everything = found("deploy database concise lunch", "--scope", "project:app", "-k", "10", "--min-score", "0")
    assert set(everything) == {stocked[k]["id"] for k in ("deploy", "db", "pref", "old")}
    assert len(found("deploy database concise lunch", "--scope", "project:app", "-k", "2", "--min-score", "0")) == 2
    assert found("deploy database", "--scope", "project:app", "--type", "fact") == [stocked["db"]["id"]]
    assert found("deploy", "--scope", "project:app", "--tags", "ci") == [stocked["deploy"]["id"]]
    assert stocked["old"]["id"] not in found("lunch menus", "--since", "2021-01-01")
    assert found("lunch menus", "--until", "2021-01-01") == [stocked["old"]["id"]]
    assert found("lunch menus", "--mode", "fts") == [stocked["old"]["id"]]
    assert found("deploy Jenkins", "--scope", "project:other", "--min-similarity", "0.99") == []


def test_scope_all_searches_every_scope(cli, stocked: dict[str, dict]) -> None:
    r = cli("search", "deploy", "--scope", "all", "-k", "10", "--json")
    assert r.code == 0, r.err
    got = {h["id"] for h in r.json()["results"]}
    assert {stocked["deploy"]["id"], stocked["other"]["id"]} <= got
    t = cli("search", "Jenkins", "--scope", "all")
    assert t.code == 0, t.err
    assert "Project other deploys with Jenkins" in t.out
    rec = cli("recent", "--scope", "all", "--json")
    assert rec.code == 0, rec.err
    assert {x["id"] for x in rec.json()} == {stocked[k]["id"] for k in ("deploy", "db", "other", "pref")}
    assert len(cli("recent", "--scope", "all", "--limit", "2", "--json").json()) == 2


def test_project_search_does_not_see_other_projects(cli, stocked: dict[str, dict]) -> None:
    r = cli("search", "Jenkins deploys", "--scope", "project:app", "-k", "10", "--json")
    assert r.code == 0
    assert stocked["other"]["id"] not in {h["id"] for h in r.json()["results"]}
    r = cli("search", "GitHub Actions VPS", "--scope", "project:other", "-k", "10", "--json")
    assert stocked["deploy"]["id"] not in {h["id"] for h in r.json()["results"]}


def test_search_touch_counts_access(cli, stocked: dict[str, dict]) -> None:
    mid = stocked["pref"]["id"]
    cli("search", "concise answers code", "--no-touch")
    assert cli("show", mid, "--json").json()["memory"]["access_count"] == 0
    cli("search", "concise answers code")
    assert cli("show", mid, "--json").json()["memory"]["access_count"] == 1


def test_search_needs_a_query(cli) -> None:
    cli("init")
    r = cli("search")
    assert r.code != 0 and "QUERY" in r.err


def test_search_batch_jsonl(cli, stocked: dict[str, dict], tmp_path: Path) -> None:
    queries = [
        {"qid": "b", "query": "GitHub Actions deploy", "scope": "project:app", "k": 1},
        {"qid": "a", "query": "staging database port", "scope": "project:app"},
        {"query": unrelated_query([m["content"] for m in stocked.values()])},
        {"qid": 7, "query": "deploy", "scope": "all", "k": 1},
    ]
    f = tmp_path / "q.jsonl"
    f.write_text("\n".join(json.dumps(q) for q in queries) + "\n\n", encoding="utf-8")
    before = cli("stats", "--json").json()
    r = cli("search", "--batch", str(f))
    assert r.code == 0, r.err
    rows = [json.loads(line) for line in r.out.splitlines()]
    assert [row["qid"] for row in rows] == ["b", "a", "3", 7]
    assert [h["id"] for h in rows[0]["results"]] == [stocked["deploy"]["id"]]
    assert rows[1]["results"][0]["id"] == stocked["db"]["id"] and len(rows[1]["results"]) <= 5
    assert rows[2]["results"] == []
    assert len(rows[3]["results"]) == 1 and rows[3]["results"][0]["id"] in {stocked["deploy"]["id"], stocked["other"]["id"]}
    assert stocked["other"]["id"] not in {h["id"] for row in rows[:2] for h in row["results"]}
    # batch searches do not count as accesses
    assert cli("show", stocked["deploy"]["id"], "--json").json()["memory"]["access_count"] == 0
    assert cli("stats", "--json").json()["total"] == before["total"]
    # -k is the default per-query k; stdin works with -
    r2 = cli("search", "--batch", "-", "-k", "1", "--scope", "project:app", stdin='{"query": "deploy"}\n{"query": "database"}\n')
    assert r2.code == 0, r2.err
    rows2 = [json.loads(line) for line in r2.out.splitlines()]
    assert [row["qid"] for row in rows2] == ["1", "2"] and all(len(row["results"]) == 1 for row in rows2)


# ---------------------------------------------------------------- recent / list / show / history / forget / restore


def test_recent_and_list(cli, stocked: dict[str, dict]) -> None:
    r = cli("recent", "--json")
    assert r.code == 0, r.err
    got = {x["id"] for x in r.json()}
    assert got == {stocked["pref"]["id"]}  # default scope global, last 7 days
    assert {x["id"] for x in cli("recent", "--scope", "project:app", "--json").json()} == {stocked[k]["id"] for k in ("deploy", "db", "pref")}
    assert len(cli("recent", "--scope", "project:app", "--limit", "2", "--json").json()) == 2
    text = cli("recent", "--scope", "project:app")
    assert text.code == 0 and stocked["deploy"]["id"][:12] in text.out and "id" in text.out.splitlines()[1]  # a unique prefix
    assert text.out.splitlines()[0] == "scope: project:app + global"  # every listing says which scopes it shows
    assert stocked["other"]["id"] not in text.out

    # list shares recent's default: the current scope (here global) plus global; --scope all for every scope
    assert {x["id"] for x in cli("list", "--json").json()} == {stocked["pref"]["id"], stocked["old"]["id"]}
    listed = cli("list", "--scope", "all", "--json").json()
    assert len(listed) == 5 and listed[-1]["id"] == stocked["old"]["id"]  # newest first
    assert [x["id"] for x in cli("list", "--scope", "all", "--type", "fact", "--json").json()] == [stocked["db"]["id"]]
    assert [x["id"] for x in cli("list", "--scope", "all", "--tags", "ci", "--json").json()] == [stocked["deploy"]["id"]]
    assert {x["id"] for x in cli("list", "--scope", "project:other", "--json").json()} == {stocked["other"]["id"], stocked["pref"]["id"], stocked["old"]["id"]}
    assert [x["id"] for x in cli("list", "--until", "2021-01-01", "--json").json()] == [stocked["old"]["id"]]
    assert len(cli("list", "--scope", "all", "--limit", "2", "--offset", "4", "--json").json()) == 1
    lt = cli("list", "--scope", "all")
    assert lt.code == 0 and all(stocked[k]["id"][:12] in lt.out for k in stocked) and lt.out.startswith("scope: every scope")
    assert "no memories" in cli("list", "--type", "goal").out


def test_show_history_forget_restore(cli, stocked: dict[str, dict]) -> None:
    mid = stocked["db"]["id"]
    shown = cli("show", mid, "--json").json()
    assert shown["memory"]["id"] == mid and [e["kind"] for e in shown["history"]] == ["created"]
    st = cli("show", mid)
    assert st.code == 0 and mid in st.out and "The staging database is PostgreSQL on port 5433" in st.out and "history" in st.out

    f = cli("forget", mid)
    assert f.code == 0 and f.out.strip() == f"forgot {mid} (restore with: mnemo restore {mid})"
    assert mid not in {h["id"] for h in cli("search", "staging database port", "--scope", "project:app", "--json").json()["results"]}
    assert mid not in {x["id"] for x in cli("list", "--scope", "all", "--json").json()}
    assert [x["id"] for x in cli("list", "--scope", "all", "--status", "deleted", "--json").json()] == [mid]
    fj = cli("forget", mid, "--json")
    assert fj.code == 0 and fj.json()["status"] == "deleted"

    r = cli("restore", mid)
    assert r.code == 0 and r.out.strip() == f"restored {mid}"
    assert cli("restore", mid, "--json").code != 0  # already active
    cli("forget", mid)
    rj = cli("restore", mid, "--json")
    assert rj.code == 0 and rj.json()["status"] == "active" and rj.json()["id"] == mid
    assert mid in {h["id"] for h in cli("search", "staging database port", "--scope", "project:app", "--json").json()["results"]}

    hist = cli("history", mid, "--json")
    assert hist.code == 0
    assert [e["kind"] for e in hist.json()] == ["created", "deleted", "restored", "deleted", "restored"]
    assert all(set(e) >= {"kind", "at", "cause", "data"} for e in hist.json())
    ht = cli("history", mid)
    assert ht.code == 0 and "created (save)" in ht.out and ht.out.count("restored (restore)") == 2


def test_unknown_id(cli, stocked: dict[str, dict]) -> None:
    for cmd in ("show", "history", "forget", "restore"):
        r = cli(cmd, "mem_ffffffff_20000101_000000")
        assert r.code == 3, cmd
        assert r.err.strip() == "error: no memory with id mem_ffffffff_20000101_000000"
        assert r.out == ""
        rj = cli(cmd, "mem_ffffffff_20000101_000000", "--json")
        assert rj.code == 3 and rj.json()["kind"] == "NotFoundError"


# ---------------------------------------------------------------- stats / export / import / reindex / doctor


def test_stats(cli, stocked: dict[str, dict]) -> None:
    cli("forget", stocked["old"]["id"])
    s = cli("stats", "--json")
    assert s.code == 0
    data = s.json()
    assert set(data) >= {"path", "total", "last_7_days", "by_type", "by_scope", "by_status", "all_records", "store_bytes", "model", "dim", "vectors", "schema_version"}
    assert data["total"] == 4 and data["all_records"] == 5 and data["last_7_days"] == 4
    assert data["model"] == "fake-hash-256" and data["dim"] == 256
    t = cli("stats")
    assert t.code == 0
    assert "memories: 4 active, 4 in the last 7 days, 5 records in all" in t.out
    assert "model: fake-hash-256, 256-d" in t.out and "project:app 2" in t.out


def test_export_formats(cli, stocked: dict[str, dict], tmp_path: Path) -> None:
    j = cli("export")
    assert j.code == 0
    doc = json.loads(j.out)
    assert doc["format"] == "mnemo-export" and len(doc["memories"]) == 5
    jl = cli("export", "--format", "jsonl")
    assert [json.loads(x)["id"] for x in jl.out.splitlines()] == [m["id"] for m in doc["memories"]]
    md = cli("export", "--format", "markdown")
    assert md.out.startswith("# mnemo export") and "## project:app" in md.out and stocked["deploy"]["content"] in md.out

    cli("forget", stocked["old"]["id"])
    assert len(json.loads(cli("export").out)["memories"]) == 4
    assert len(json.loads(cli("export", "--include-deleted").out)["memories"]) == 5

    out = tmp_path / "e.jsonl"
    r = cli("export", "--format", "jsonl", "-o", str(out))
    assert r.code == 0 and r.out.strip() == f"exported 4 memories to {out}"
    assert len(out.read_text(encoding="utf-8").splitlines()) == 4
    rj = cli("export", "--format", "markdown", "--output", str(tmp_path / "e.md"), "--json")
    assert rj.json() == {"exported": 4, "output": str(tmp_path / "e.md"), "format": "markdown"}


def test_import_round_trip_and_idempotence(cli, stocked: dict[str, dict], tmp_path: Path) -> None:
    out = tmp_path / "e.json"
    assert cli("export", "-o", str(out), "--include-deleted").code == 0
    fresh = tmp_path / "fresh.db"
    r = cli("import", str(out), "--db", str(fresh))
    assert r.code == 0, r.err
    assert r.out.strip() == "imported 5 of 5 records (0 already present)"
    again = cli("import", str(out), "--db", str(fresh), "--json")
    assert again.code == 0
    assert again.json() == {"read": 5, "imported": 0, "skipped_existing": 5, "invalid": []}
    a = sorted((m["id"], m["content"], m["created_at"], m["scope"], m["type"]) for m in json.loads(cli("export").out)["memories"])
    b = sorted((m["id"], m["content"], m["created_at"], m["scope"], m["type"]) for m in json.loads(cli("export", "--db", str(fresh)).out)["memories"])
    assert a == b


def test_import_skip_invalid(cli, tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text('{"content": "good"}\n{"content": "bad", "type": "nope"}\n{oops\n', encoding="utf-8")
    r = cli("import", str(f), "--skip-invalid", "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert data["imported"] == 1 and [p["line"] for p in data["invalid"]] == [2, 3]
    t = cli("import", str(f), "--skip-invalid")
    assert t.code == 0 and "imported 0 of 3 records (1 already present)" in t.out
    assert "skipped line 2" in t.err and "skipped line 3" in t.err


def test_reindex(cli, stocked: dict[str, dict]) -> None:
    r = cli("reindex", "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert data == {"model": "fake-hash-256", "previous_model": "fake-hash-256", "fts_rows": 5, "embedded": 0, "dropped_vectors": 0}
    t = cli("reindex", "--no-fts")
    assert t.code == 0 and t.out.strip() == "reindexed with fake-hash-256: 0 full-text rows, 0 memories embedded"


def test_doctor(cli, stocked: dict[str, dict], default_db: str) -> None:
    r = cli("doctor", "--json")
    assert r.code == 0, r.out
    data = r.json()
    assert data["path"] == default_db
    assert [c["check"] for c in data["checks"]] == ["schema", "integrity", "model", "index model", "vectors", "write-probe", "capture model", "network", "encryption",
                                                           "sync folder", "conversion leftovers"]
    assert all(c["status"] == "ok" for c in data["checks"])
    t = cli("doctor")
    assert t.code == 0 and "✓ schema" in t.out and "✓ write-probe" in t.out and "✗" not in t.out
    assert cli("stats", "--json").json()["all_records"] == 5


# ---------------------------------------------------------------- config


def _settings(r) -> dict[str, dict]:
    assert r.code == 0, r.err
    return {s["name"]: s for s in r.json()["settings"]}


@pytest.mark.sqlite_only  # the default store file in the mnemo home
def test_config_origins(cli, mnemo_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _settings(cli("config", "--json"))
    assert s["top_k"]["origin"] == "default" and s["top_k"]["value"] == 5
    assert s["model"]["origin"] == "MNEMO_MODEL" and s["model"]["value"] == FAKE_MODEL
    assert s["db"]["origin"].startswith("default") and s["db"]["value"] == str(mnemo_home / "memory.db")
    assert s["scope"]["env"] == "MNEMO_SCOPE" and all(x["help"] for x in s.values())

    mnemo_home.mkdir(parents=True, exist_ok=True)
    cfg = mnemo_home / "config.toml"
    cfg.write_text('top_k = 9\nmin_score = 0.3\nscope = "project:cfg"\n', encoding="utf-8")
    monkeypatch.setenv("MNEMO_MIN_SCORE", "0.25")
    monkeypatch.setenv("MNEMO_HALF_LIFE_DAYS", "30")
    r = cli("config", "--json", "--model", "use", "--db", str(mnemo_home / "other.db"))
    data = r.json()
    assert data["config_file"] == str(cfg) and data["home"] == str(mnemo_home)
    s = _settings(r)
    assert (s["top_k"]["value"], s["top_k"]["origin"]) == (9, str(cfg))
    assert (s["scope"]["value"], s["scope"]["origin"]) == ("project:cfg", str(cfg))
    assert (s["min_score"]["value"], s["min_score"]["origin"]) == (0.25, "MNEMO_MIN_SCORE")  # env beats the file
    assert (s["half_life_days"]["value"], s["half_life_days"]["origin"]) == (30.0, "MNEMO_HALF_LIFE_DAYS")
    assert (s["model"]["value"], s["model"]["origin"]) == ("use", "flag")  # the flag beats env
    assert (s["db"]["value"], s["db"]["origin"]) == (str(mnemo_home / "other.db"), "flag")
    assert s["embed_threads"]["origin"] == "default"

    from mnemo._cli import render

    monkeypatch.setattr(render.out, "_width", 130)  # the env column shows on a wide terminal
    t = cli("config")
    assert t.code == 0
    lines = {line.split()[0]: line for line in t.out.splitlines() if line.strip()}
    assert "MNEMO_TOP_K" in lines["top_k"] and "9" in lines["top_k"]
    assert lines["min_score"].count("MNEMO_MIN_SCORE") == 2 and "0.25" in lines["min_score"]  # origin and env columns
    assert "default" in lines["embed_threads"]


def test_config_file_scope_is_used_by_save(cli, mnemo_home: Path) -> None:
    mnemo_home.mkdir(parents=True, exist_ok=True)
    (mnemo_home / "config.toml").write_text('scope = "project:cfg"\ntop_k = 1\n', encoding="utf-8")
    assert save(cli, "config scope applies")["scope"] == "project:cfg"
    save(cli, "config scope applies twice over")
    assert len(cli("search", "config scope applies", "--json").json()["results"]) == 1  # top_k from the file


def test_db_from_env(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "env.db"
    monkeypatch.setenv("MNEMO_DB", str(db))
    save(cli, "stored where MNEMO_DB says")
    assert db.exists()
    assert cli("stats", "--json").json()["path"] == str(db)


# ---------------------------------------------------------------- demo


def test_demo(cli) -> None:
    r = cli("demo", "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert set(data) >= {"store", "saved", "searches", "stats", "export_markdown_lines"}
    assert len(data["saved"]) == 6 and len(data["searches"]) == 4 and data["stats"]["total"] == 8  # + 2 captured
    assert len(data["captured"]["detected"]) == 2 and data["context"]["tokens"] > 0
    assert not Path(data["store"]).exists()  # a throwaway store
    t = cli("demo")
    assert t.code == 0 and all(step in t.out for step in ("mnemo demo", "Recall", "Capture", "Context", "Export"))


# ---------------------------------------------------------------- a real process


def test_subprocess_entry_point(tmp_path: Path, default_db: str) -> None:
    env = dict(os.environ)  # MNEMO_HOME, MNEMO_MODEL and PYTHONPATH from the autouse fixture
    assert env["MNEMO_MODEL"] == FAKE_MODEL
    helped = subprocess.run([sys.executable, "-m", "mnemo", "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0, helped.stderr
    assert "mnemo" in helped.stdout and "search" in helped.stdout and "save" in helped.stdout
    saved = subprocess.run([sys.executable, "-m", "mnemo", "save", "written by a real process", "--tags", "proc", "--json"],
                           env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert saved.stderr == ""
    data = json.loads(saved.stdout)
    assert data["action"] == "created" and data["memory"]["tags"] == ["proc"]
    with Mnemo(default_db, model=FAKE_MODEL) as m:
        assert m.get(data["memory"]["id"]).content == "written by a real process"
        assert m.stats()["model"] == "fake-hash-256"


def test_cli_functions_take_the_documented_options() -> None:
    # every command is a click command and accepts --db/--model/--json
    for name, cmd in main_group.commands.items():
        opts = {o for p in cmd.params if isinstance(p, click.Option) for o in p.opts}
        assert {"--db", "--model", "--json"} <= opts, name


# ---------------------------------------------------------------- options before the command

def test_global_options_work_before_the_command_too(cli, tmp_path: Path) -> None:
    """The first contract was `mnemo --db PATH CMD`: --db, --model and --json before the command
    mean what they mean after it (as `git -C`, `docker -H`)."""
    db = str(tmp_path / "elsewhere.db")
    saved = cli("--db", db, "--json", "save", "We deploy with GitHub Actions", "--scope", "project:x")
    assert saved.code == 0, saved.err
    assert saved.json()["memory"]["scope"] == "project:x"
    found = cli("--db=" + db, "search", "deploy", "--scope", "project:x", "--json")
    assert [h["content"] for h in found.json()["results"]] == ["We deploy with GitHub Actions"]
    assert cli("--json", "--db", db, "stats").json()["total"] == 1
    default = cli("stats", "--json")  # the default store was never touched (missing, or empty on PostgreSQL)
    assert default.code != 0 or default.json()["total"] == 0
    assert [m["content"] for m in cli("--db", db, "--json", "list", "--scope", "all").json()] == ["We deploy with GitHub Actions"]
    assert cli("--help").code == 0 and "Usage" in cli("--help").out
    bad = cli("--nope", "search", "x")
    assert bad.code == 2 and "--nope" in bad.err


def test_hoisting_leaves_everything_else_alone() -> None:
    from mnemo._cli.commands import hoist_global_options

    assert hoist_global_options(["--db", "a.db", "--model", "use", "search", "q", "-k", "3"]) == ["search", "--db", "a.db", "--model", "use", "q", "-k", "3"]
    assert hoist_global_options(["search", "--db", "a.db", "q"]) == ["search", "--db", "a.db", "q"]
    assert hoist_global_options(["--db", "a.db"]) == ["--db", "a.db"]  # no command: click's own error
    assert hoist_global_options(["--version"]) == ["--version"]
    assert hoist_global_options(["--db", "a.db", "--version"]) == ["--db", "a.db", "--version"]


def test_list_takes_statuses_like_types_comma_separated_or_repeated(cli) -> None:
    kept = cli("save", "a note that stays", "--json").json()["memory"]["id"]
    gone = cli("save", "a note to forget", "--json").json()["memory"]["id"]
    assert cli("forget", gone).code == 0
    for args in (["--status", "active,deleted"], ["--status", "active", "--status", "deleted"]):
        ids = {x["id"] for x in cli("list", *args, "--json").json()}
        assert ids == {kept, gone}, args
    r = cli("list", "--status", "active,gone")
    assert r.code == 2 and "unknown status 'gone'" in r.err


def test_the_demo_numbers_its_steps_once_and_says_what_each_search_shows(cli) -> None:
    r = cli("demo", "--model", FAKE_MODEL)
    assert r.code == 0, r.err
    assert r.out.count("2. Recall") == 1 and r.out.count("1. Remember") == 1
    from mnemo._cli.demo import _what_it_shows

    class _Hit:
        def __init__(self, text: str) -> None:
            self.memory = type("M", (), {"content": text})()

    assert _what_it_shows("what database do we use?", [_Hit("项目使用 PostgreSQL")]) == "English question, Chinese memory first"
    assert _what_it_shows("部署方式", [_Hit("We deploy with GitHub Actions")]) == "Chinese question, English memory first"
    assert _what_it_shows("bread", []).startswith("nothing relevant")


def test_tables_fit_80_and_120_columns_with_chinese_and_english(cli, monkeypatch) -> None:
    """`list` and `recent` print one line per memory at 60, 80 and 120 columns: the content is cut
    with an ellipsis, never one word (or half a Chinese character) per line; the scope column
    gives way first when the content would get too little room."""
    from rich.cells import cell_len

    from mnemo._cli import render

    long_zh = "用户喜欢使用 Tailwind CSS 进行前端开发，并且所有组件都用 TypeScript 写，测试统一用 Vitest 跑"
    long_en = "We decided to deploy with GitHub Actions to one VPS behind Caddy; no Kubernetes until we have two services"
    for text in (long_zh, long_en):
        assert cli("save", text, "--scope", "project:shop").code == 0
    for width, scope_col in ((60, False), (80, True), (120, True)):
        monkeypatch.setattr(render.out, "_width", width)
        for args in (("recent", "--scope", "project:shop"), ("list", "--scope", "project:shop")):
            r = cli(*args)
            lines = [ln for ln in r.out.splitlines() if ln.strip()]
            assert all(cell_len(ln) <= width for ln in lines), (width, args, lines)
            body = [ln for ln in lines if ln.startswith("mem_")]
            assert len(body) == 2, (width, lines)  # one line per memory
            assert ("scope" in lines[1]) == scope_col
            assert any("…" in ln for ln in body) and any("用户喜欢使用" in ln for ln in body)
            assert all(ln.startswith("mem_") and len(ln.split()[0]) == 12 for ln in body)  # a unique id prefix


def test_small_things_a_newcomer_notices(cli) -> None:
    """JSON without float noise, `save --json` says when it was stored, `show` shows expiry and
    pin, `serve --status` speaks words, bad UTF-8 on stdin or in a query is refused clearly, and
    `mnemo help` reads the guide that ships with the package."""
    saved = cli("save", "the cache TTL is 15 minutes", "--importance", "0.6", "--expires", "30d", "--pin", "--json")
    assert saved.code == 0, saved.err
    mem = saved.json()["memory"]
    assert '"importance": 0.6,' in saved.out and mem["stored_at"]
    shown = cli("show", mem["id"])
    assert "expires" in shown.out and mem["expires_at"][:10] in shown.out and "pinned  yes" in shown.out
    status = cli("serve", "--status")
    assert status.code == 0 and status.out.startswith("no service serves") and "{" not in status.out
    bad = cli("auto", "--stdin", stdin=b"Remember: I like tea \xff\xfe a lot\n")
    assert bad.code == 2 and "standard input is not valid UTF-8" in bad.err
    q = cli("search", "ab\udcffcd")
    assert q.code == 2 and "not valid UTF-8" in q.err and "Traceback" not in q.err
    sections = cli("help", "--json").json()["sections"]
    assert "In your assistant" in sections and "Privacy" in sections
    assistant = cli("help", "assistant")
    assert assistant.code == 0 and "mnemo install claude-code" in assistant.out
    assert cli("help", "no-such-topic").code == 2


def test_sources_and_config_fit_the_terminal_and_config_says_where_its_file_is(cli, monkeypatch, tmp_path) -> None:
    from rich.cells import cell_len

    from mnemo._cli import render

    folder = tmp_path / "a" / "rather" / "deep" / "folder" / "of" / "notes"
    folder.mkdir(parents=True)
    (folder / "性能优化笔记-2026.md").write_text("# 性能优化笔记：数据库索引与缓存的经验总结\n\n正文。\n", "utf-8")
    (folder / "deploy.md").write_text("# Deploy checklist for the production cluster\n\nBody.\n", "utf-8")
    assert cli("ingest", str(folder)).code == 0
    for width in (80, 120):
        monkeypatch.setattr(render.out, "_width", width)
        lines = [ln for ln in cli("sources").out.splitlines() if ln.strip()]
        assert len(lines) == 3 and all(cell_len(ln) <= width for ln in lines), lines
        assert any(ln.startswith("…") and "deploy.md" in ln for ln in lines)  # the file name survives the cut
        conf = cli("config").out
        assert conf.startswith("config file: ") and "config.toml" in conf.splitlines()[0]


def test_wide_tables_and_a_past_expiry_is_said(cli, monkeypatch) -> None:
    from mnemo._cli import render

    monkeypatch.setattr(render.out, "_width", 80)
    text = "We decided to deploy with GitHub Actions to one VPS behind Caddy; no Kubernetes until we have two services"
    saved = cli("save", text, "--expires", "2020-01-01", "--json")
    assert saved.code == 0 and "is past: it is not recalled until confirmed" in saved.err
    mid = saved.json()["memory"]["id"]
    wide = cli("list", "--wide", "--status", "active").out
    assert mid in wide and "two services" in wide  # whole id, whole text (wrapped)
    review = cli("review", "--wide").out
    assert mid in review and "two services" in review
    assert cli("confirm", mid, "--expires", "30d").err == ""  # a future expiry: nothing to say


def test_a_bug_is_one_line_not_a_traceback(cli, monkeypatch) -> None:
    from mnemo._cli import render

    assert cli("init").code == 0

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(render, "stats", broken)
    r = cli("stats")
    assert r.code == 70 and r.err.startswith("error: internal error: RuntimeError: boom") and "Traceback" not in r.err
    monkeypatch.setenv("MNEMO_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        cli("stats")


def test_a_long_hit_is_shown_by_its_start(cli) -> None:
    text = "The retention runbook says: " + "keep the nightly backups for thirty days and check them weekly. " * 40
    assert cli("save", text).code == 0
    r = cli("search", "retention runbook nightly backups")
    assert r.code == 0 and f"({len(text.strip()):,} characters: mnemo show mem_" in r.out
    assert len(r.out) < len(text)  # not the whole text


def test_a_long_save_says_that_documents_belong_in_ingest(cli) -> None:
    r = cli("save", "-", stdin="Meeting notes about the storage migration and its cache plan. " * 150)
    assert r.code == 0 and "mnemo ingest FILE" in r.err
    quiet = cli("save", "-", "--json", stdin="Another long meeting record about queues and their limits. " * 150)
    assert quiet.code == 0 and quiet.err == ""  # --json stays quiet
