"""PostgreSQL-only behaviour: team privacy by row-level security with two real roles, many
writer processes at once, migrate both ways, and bad input (unreachable server, a missing
privilege, a dimension mismatch, a server restart). The rest of the suite also runs on
PostgreSQL (scripts/test's second run); these need the server whatever the run."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import socket
import string
import subprocess
import time
from pathlib import Path

import pytest
from conftest import PgDatabases, pg_url
from fake_embedder import FakeEmbedder

from mnemo import Mnemo
from mnemo.errors import EmbedderError, SchemaTooNewError, StoreError, StorePrivilegeError, StoreUnreachableError

pytestmark = pytest.mark.postgres


def _words(rng: random.Random, n: int = 4) -> str:
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 9))) for _ in range(n))


@pytest.fixture
def team(pg_databases: PgDatabases) -> dict[str, str]:
    """A team store created by its owner (mnemo), and URLs for alice and bob."""
    name = pg_databases.new(owner="mnemo")
    with Mnemo(pg_url(name), embedder=FakeEmbedder()):
        pass
    return {"owner": pg_url(name), "alice": pg_url(name, user="mnemo_alice"), "bob": pg_url(name, user="mnemo_bob")}


# ---------------------------------------------------------------- team privacy (row-level security)


def test_private_memories_are_invisible_to_other_roles(team: dict[str, str], cli) -> None:
    r = cli("visibility", "project:alice-diary", "private", "--db", team["alice"], "--json")
    assert r.code == 0, r.err
    assert r.json() == {"role": "mnemo_alice", "private_scopes": ["project:alice-diary"]}
    with Mnemo(team["alice"], embedder=FakeEmbedder()) as alice:
        secret = alice.remember("my salary negotiation target is confidential", scope="project:alice-diary")
        shared = alice.remember("the team deploys the api on thursdays", scope="global")
        assert {h.memory.id for h in alice.recall("salary negotiation", scope="project:alice-diary")} == {secret.id}
    with Mnemo(team["bob"], embedder=FakeEmbedder()) as bob:
        assert [h.memory.id for h in bob.recall("team deploys api thursdays")] == [shared.id]
        assert [h.memory.id for h in bob.recall("salary negotiation target", scope="all", min_score=0.0)] == [shared.id]
        assert bob.list(scope="all", statuses=("active", "superseded", "archived", "deleted")) == [bob.get(shared.id)]
        with pytest.raises(Exception, match="no memory"):
            bob.get(secret.id)
        with pytest.raises(Exception, match="no memory"):
            bob.history(secret.id)
        assert bob.stats()["total"] == 1
        # nothing in the client decides this: raw SQL as bob sees no private row either, and
        # bob cannot write a row that claims to be alice's
        conn = bob.store.conn
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 1
        assert conn.execute("SELECT COUNT(*) FROM events WHERE memory_id = %s", (secret.id,)).fetchone()[0] == 0
        with pytest.raises(Exception, match="row-level security"):
            conn.execute("UPDATE memories SET owner = 'mnemo_alice', visibility = 'private' WHERE id = %s", (shared.id,))
        # forgetting a memory bob cannot see is "not found", and changes nothing
        with pytest.raises(Exception, match="no memory"):
            bob.forget(secret.id)
    with Mnemo(team["alice"], embedder=FakeEmbedder()) as alice:
        assert alice.get(secret.id).status == "active"
        assert alice.stats()["total"] == 2
    # the owner of the tables is bound too (FORCE ROW LEVEL SECURITY)
    with Mnemo(team["owner"], embedder=FakeEmbedder()) as owner:
        assert owner.stats()["total"] == 1


def test_a_private_scope_can_be_shared_again(team: dict[str, str]) -> None:
    """Back to shared: the memory and its full-text postings are visible to the team again."""
    with Mnemo(team["alice"], embedder=FakeEmbedder()) as alice:
        alice.store.set_private_scope("project:plans", True)
        mem = alice.remember("the offsite moves to lisbon in may", scope="project:plans")
    with Mnemo(team["bob"], embedder=FakeEmbedder()) as bob:
        assert bob.store.get(mem.id) is None and bob.store.doc_freqs(["lisbon"]) == {"lisbon": 0}
    with Mnemo(team["alice"], embedder=FakeEmbedder()) as alice:
        alice.store.set_private_scope("project:plans", False)
        assert alice.store.private_scopes() == []
    with Mnemo(team["bob"], embedder=FakeEmbedder()) as bob:
        assert bob.get(mem.id).content == mem.content
        assert bob.store.doc_freqs(["lisbon"]) == {"lisbon": 1}
        assert [h.memory.id for h in bob.recall("offsite lisbon", scope="all")] == [mem.id]


#: tables every role reads whole, and why; every other table of the store's schema must show a
#: role nothing of another role's private data (the test below lists them from the catalog, so
#: a new table is checked the day it is added)
SHARED_METADATA = {
    "meta": "the store's recorded embedding model, dimension and index generation: one per store, no content",
    "schema_migrations": "which migrations ran (the schema version): no content",
}


def _store_tables(conn) -> list[str]:
    """Every table (and view) in the store's schema, from the catalog."""
    return [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY c.relname").fetchall()]


def _rows_as_text(conn, table: str) -> list[str]:
    """Every row of ``table`` this connection's role may read, all columns as one lower-case text."""
    return [r[0].lower() for r in conn.execute(f'SELECT row_to_json(t)::text FROM "{table}" t').fetchall()]


def test_a_second_owner_reads_nothing_of_another_owners_private_data(team: dict[str, str], tmp_path: Path) -> None:
    """Alice writes private data into every table of the store (a private scope's memories with
    tags, their history, links, postings and vectors, an ingested document, a session's injection
    log and state, LLM usage, a job, a purged memory's tombstone); bob, and the role that owns
    the tables, read none of it from any table — history written before the scope went private
    included, and what sync keeps (versions, applied segments, the device's state)."""
    scope = "project:quokka-private"
    with Mnemo(team["bob"], embedder=FakeEmbedder()) as bob:
        team_note = bob.remember("the team deploys the api on thursdays", scope="global")
    with Mnemo(team["alice"], embedder=FakeEmbedder()) as alice:
        # written while the scope is still shared: making it private must hide all of it
        early = alice.remember("zanzibar quokka plan drafted before the scope went private", scope=scope, tags=["quokkatag"],
                               dedup=False)
        doc = tmp_path / "quokka-notes.md"
        doc.write_text("# Quokka budget\n\nThe zanzibar quokka budget is forty two units for the winter.\n", "utf-8")
        assert alice.ingest([doc], scope=scope)["ingested"] == 1
        alice.store.set_private_scope(scope, True)
        secret = alice.remember("zanzibar quokka salary target is confidential", scope=scope, type="decision", tags=["quokkatag"],
                                dedup=False)
        gone = alice.remember("zanzibar quokka note that will be purged", scope=scope, dedup=False)
        alice.edit(secret.id, importance=0.9)
        with alice.store.transaction():
            alice.store.add_relation(secret.id, early.id, "related", 0.9)
            alice.store.add_relation(secret.id, team_note.id, "related", 0.5)  # a link to a shared memory is private too
            alice.store.add_usage("2026-12-01", "quokka-usage", calls=1, tokens=5)
            assert alice.store.claim_job("capture:/home/alice/quokka.jsonl", "quokka-worker", at="2026-12-01T00:00:00Z",
                                         stale_before="2026-11-30T00:00:00Z")
        alice.purge([gone.id])
        # sync with another of alice's devices: versions, applied segments and the device's state are hers
        with Mnemo(tmp_path / "laptop.db", embedder=FakeEmbedder()) as laptop:
            with laptop.store.transaction():
                laptop.store.set_sync_value("device", "quokka-laptop")
            laptop.remember("zanzibar quokka note from the laptop", scope=scope)
            laptop.sync(tmp_path / "sync")
        with alice.store.transaction():
            alice.store.set_sync_value("device", "quokka-desk")
        alice.sync(tmp_path / "sync", scopes=[scope])
        ctx = alice.context("zanzibar quokka salary", scope=scope, session="alice-quokka-session")
        assert ctx["log_id"] and ctx["memories"]
        conn = alice.store.conn
        tables = _store_tables(conn)
        mine = conn.execute("SELECT id, content_hash, embed_hash FROM memories WHERE owner = current_user").fetchall()
        assert len(mine) >= 3 and all(conn.execute("SELECT vec IS NOT NULL FROM memories WHERE id = %s", (r[0],)).fetchone()[0] for r in mine)
        markers = {"quokka", "zanzibar", gone.id} | {v.lower() for r in mine for v in r}
        # the scenario reaches every table: a table nobody writes here would be checked for nothing
        for table in tables:
            rows = _rows_as_text(conn, table)
            assert rows, f"alice wrote nothing into {table}: add it to this test's scenario"
            if table not in SHARED_METADATA:
                assert any(mk in row for row in rows for mk in markers), f"alice's private data is not in {table}"
        assert len(alice.history(early.id)) >= 1 and alice.store.relations(secret.id)
        purged = conn.execute("SELECT mem_visibility FROM events WHERE memory_id = %s AND kind = 'purged'", (gone.id,)).fetchall()
        assert purged == [("private",)]
    assert {"memories", "events", "relations", "embeddings", "memory_terms", "sources", "injections", "session_state",
            "usage", "jobs", "private_scopes", "meta", "schema_migrations", "sync_versions", "sync_applied", "sync_state"} <= set(tables)
    for role in ("bob", "owner"):
        with Mnemo(team[role], embedder=FakeEmbedder()) as other:
            conn = other.store.conn
            assert _store_tables(conn) == tables
            for table in tables:
                leaked = [row for row in _rows_as_text(conn, table) if any(mk in row for mk in markers)]
                assert leaked == [], f"{role} reads alice's private data in {table}: {leaked[:2]}"
            assert other.store.relations(team_note.id) == [] and other.store.injections() == [] and other.store.usage() == {}
            assert other.store.get_session_value("alice-quokka-session", "injected") is None
            assert other.store.get_job("capture:/home/alice/quokka.jsonl") is None
            assert other.store.list_sources() == [] and other.store.get_embeddings(other.embedder.name, [r[2] for r in mine]) == {}
            assert [m.id for m in other.list(scope="all")] == [team_note.id]
    with Mnemo(team["bob"], embedder=FakeEmbedder()) as bob:
        # bob's own session, usage and job do not collide with alice's (each role has its own rows)
        bob.context("team deploys thursdays", session="alice-quokka-session")
        with bob.store.transaction():
            bob.store.add_usage("2026-12-01", "quokka-usage", calls=2, tokens=7)
            assert bob.store.claim_job("capture:/home/alice/quokka.jsonl", "bob-worker", at="2026-12-01T00:00:00Z",
                                       stale_before="2026-11-30T00:00:00Z")
        assert bob.store.usage("2026-12-01") == {"quokka-usage": {"calls": 2, "tokens": 7}}
        assert bob.store.get_session_value("alice-quokka-session", "injected") == [team_note.id]
        # the same words as alice's private memory: bob gets his own memory, with its vector
        mine_too = bob.remember("zanzibar quokka salary target is confidential", scope="global")
        assert mine_too.id != secret.id
        assert bob.store.conn.execute("SELECT vec IS NOT NULL FROM memories WHERE id = %s", (mine_too.id,)).fetchone()[0]
    with Mnemo(team["alice"], embedder=FakeEmbedder()) as alice:
        assert alice.store.usage("2026-12-01") == {"quokka-usage": {"calls": 1, "tokens": 5}}
        assert alice.store.get_job("capture:/home/alice/quokka.jsonl")["owner"] == "quokka-worker"
        assert [r["id"] for r in alice.store.injections()] == [ctx["log_id"]]
        # sharing the scope again shows the team its memories, history, links and document
        alice.store.set_private_scope(scope, False)
    with Mnemo(team["bob"], embedder=FakeEmbedder()) as bob:
        assert bob.history(early.id) and bob.history(secret.id)
        assert {r["id"] for r in bob.store.relations(secret.id)} == {early.id, team_note.id}
        assert [s["key"] for s in bob.store.list_sources()] == [f"file:{doc.resolve()}"]
        assert bob.store.injections(session="alice-quokka-session")[0]["memory_ids"] == [team_note.id]  # his own only


def test_upgrading_a_team_store_makes_existing_private_data_private(pg_databases: PgDatabases, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written at schema version 3 (before migration 4) by alice and bob: after the
    upgrade bob reads nothing of alice's private data from any table — history left readable by
    the old bug, and rows that named no owner (her session's injection log and state, her
    document, her vectors) included; alice still reads all of it."""
    import mnemo._stores.postgres as pg
    import mnemo._stores.postgres_schema as schema

    name = pg_databases.new(owner="mnemo")
    urls = {"owner": pg_url(name), "alice": pg_url(name, user="mnemo_alice"), "bob": pg_url(name, user="mnemo_bob")}
    with monkeypatch.context() as old:
        old.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:3])
        old.setattr(pg, "MIGRATIONS", schema.MIGRATIONS[:3])
        old.setattr(pg, "LATEST_VERSION", 3)
        old.setattr(pg.PostgresStore, "_OWNER_KEY", "")
        import mnemo._core.mnemo as core  # version 3's recall did not read around its hits (no place column yet)

        old.setattr(core, "with_context", lambda scored, *args: scored)
        scope = "project:quokka-private"
        Mnemo(urls["owner"], embedder=FakeEmbedder()).close()
        with Mnemo(urls["bob"], embedder=FakeEmbedder()) as bob:
            team_note = bob.remember("the team deploys the api on thursdays", scope="global")
        with Mnemo(urls["alice"], embedder=FakeEmbedder()) as alice:
            early = alice.remember("zanzibar quokka plan drafted before the scope went private", scope=scope, dedup=False)
            doc = tmp_path / "quokka-notes.md"
            doc.write_text("# Quokka budget\n\nThe zanzibar quokka budget is forty two units for the winter.\n", "utf-8")
            alice.ingest([doc], scope=scope)
            conn = alice.store.conn  # version 3's set_private_scope (its UPDATE of events changed nothing)
            conn.execute("INSERT INTO private_scopes (scope) VALUES (%s)", (scope,))
            conn.execute("UPDATE memories SET visibility = 'private' WHERE scope = %s AND owner = current_user", (scope,))
            conn.execute("UPDATE memory_terms t SET visibility = 'private' FROM memories m WHERE m.pk = t.pk AND m.scope = %s", (scope,))
            secret = alice.remember("zanzibar quokka salary target is confidential", scope=scope, dedup=False)
            with alice.store.transaction():
                alice.store.add_relation(secret.id, team_note.id, "related", 0.5)
            ctx = alice.context("zanzibar quokka salary", scope=scope, session="alice-quokka-session")
            assert ctx["log_id"]
            mine = conn.execute("SELECT id, content_hash, embed_hash FROM memories WHERE owner = current_user").fetchall()
        with Mnemo(urls["bob"], embedder=FakeEmbedder()) as bob:  # the leak this migration closes
            assert bob.store.conn.execute("SELECT COUNT(*) FROM events WHERE memory_id = %s", (early.id,)).fetchone()[0] == 1
    markers = {"quokka", "zanzibar"} | {v.lower() for r in mine for v in r}
    Mnemo(urls["owner"], embedder=FakeEmbedder()).close()  # the table owner migrates
    with Mnemo(urls["bob"], embedder=FakeEmbedder()) as bob:
        conn = bob.store.conn
        assert bob.store.schema_versions() == (schema.LATEST_VERSION, schema.LATEST_VERSION)
        for table in _store_tables(conn):
            leaked = [row for row in _rows_as_text(conn, table) if any(mk in row for mk in markers)]
            assert leaked == [], f"bob reads alice's private data in {table}: {leaked[:2]}"
        assert [m.id for m in bob.list(scope="all")] == [team_note.id]
    with Mnemo(urls["alice"], embedder=FakeEmbedder()) as alice:
        assert [r["id"] for r in alice.store.injections()] == [ctx["log_id"]]
        assert alice.store.get_session_value("alice-quokka-session", "injected")
        assert [s["scope"] for s in alice.store.list_sources()] == [scope]
        assert alice.history(early.id) and {r["id"] for r in alice.store.relations(secret.id)} == {team_note.id}
        assert set(alice.store.get_embeddings(alice.embedder.name, [r[2] for r in mine])) == {r[2] for r in mine}


def test_child_connection_keeps_the_password_off_the_command_line(pg_databases: PgDatabases) -> None:
    """What a child process (the background capture worker) is given to open the store again:
    the URL without its password (no ``***`` in it, which would be taken for the password) and
    PGPASSWORD for its environment."""
    import sys

    from mnemo._stores.postgres import redact_url, split_password

    assert split_password("postgresql://alice:p%40ss:w@db.example:5433/team?sslmode=require") == (
        "postgresql://alice@db.example:5433/team?sslmode=require", "p@ss:w")
    assert split_password("postgresql://alice@/team?host=/run/pg&password=x%26y+z&port=5") == (
        "postgresql://alice@/team?host=/run/pg&port=5", "x&y+z")
    assert split_password("postgresql://alice@db/team?host=/run/pg") == ("postgresql://alice@db/team?host=/run/pg", None)
    assert redact_url("postgresql://alice:pw@db/team?password=pw2&sslmode=require") == \
        "postgresql://alice:***@db/team?password=***&sslmode=require"
    url = pg_databases.url()
    assert "@" in url and ":" not in url.split("://", 1)[1].split("@", 1)[0]
    with_password = url.replace("@", ":hunter%232@", 1)
    with Mnemo(with_password, embedder=FakeEmbedder()) as m:
        m.remember("written by the parent")
        dsn, env = m.store.child_connection()
        assert m.store.url == url.replace("@", ":***@", 1)
    assert dsn == url and env == {"PGPASSWORD": "hunter#2"}
    # the child, started as the capture worker should be, opens the same store with that password
    probe = ("import os, sys; from mnemo._stores.postgres import PostgresStore; s = PostgresStore(sys.argv[1], create=False); "
             "print(s.conn.info.password, s.count_embeddings(), s.conn.execute('SELECT content FROM memories').fetchone()[0])")
    out = subprocess.run([sys.executable, "-c", probe, dsn], env={**os.environ, **env}, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(None, 2)[0] == "hunter#2" and out.stdout.strip().endswith("written by the parent")
    with Mnemo(url, embedder=FakeEmbedder()) as m:  # no password at all: nothing to pass on
        assert m.store.child_connection() == (url, {})


def test_visibility_is_refused_on_sqlite(cli, tmp_path: Path) -> None:
    Mnemo(tmp_path / "x.db", embedder=FakeEmbedder()).close()
    r = cli("visibility", "global", "private", "--db", str(tmp_path / "x.db"))
    assert r.code != 0 and "PostgreSQL" in r.err


# ---------------------------------------------------------------- many writers at once

N_PROCS, N_WRITES, SHARED_EVERY = 8, 250, 25
SHARED = [f"shared decision {c}: " + _words(random.Random(c)) for c in "abcdefghij"]


def _writer(url: str, proc: int, out: "mp.Queue[dict]") -> None:
    rng = random.Random(proc)
    errors: list[str] = []
    ids: list[str] = []
    searches = 0
    try:
        m = Mnemo(url, embedder=FakeEmbedder())
        for i in range(N_WRITES):
            try:
                if i % SHARED_EVERY == 0:  # every process writes the same ten statements: dedup races
                    m.remember(SHARED[(i // SHARED_EVERY) % len(SHARED)])
                else:
                    ids.append(m.remember(f"process {'abcdefgh'[proc]} note " + _words(rng), dedup=False).id)
                if i % 10 == 0:
                    m.recall(_words(rng, 2), top_k=5)
                    searches += 1
            except Exception as exc:  # counted, not raised: the parent asserts there are none
                errors.append(f"{type(exc).__name__}: {exc}")
        m.close()
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    out.put({"proc": proc, "errors": errors, "ids": ids, "searches": searches})


@pytest.mark.slow
def test_eight_processes_write_and_search_at_once(pg_databases: PgDatabases) -> None:
    url = pg_databases.url()
    with Mnemo(url, embedder=FakeEmbedder()) as m:
        m.remember("seed memory so the model is claimed before the race")
    ctx = mp.get_context("spawn")
    out: "mp.Queue[dict]" = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, p, out)) for p in range(N_PROCS)]
    start = time.monotonic()
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    elapsed = time.monotonic() - start
    errors = [e for r in results for e in r["errors"]]
    assert errors == [], errors[:5]
    written = [i for r in results for i in r["ids"]]
    unique_per_proc = N_WRITES - N_WRITES // SHARED_EVERY
    assert len(written) == len(set(written)) == N_PROCS * unique_per_proc
    with Mnemo(url, embedder=FakeEmbedder()) as m:
        assert m.store.existing_ids(written) == set(written)  # no lost write
        for text in SHARED:  # one memory per shared statement: dedup never raced
            assert len([x for x in m.list(scope="all", limit=100_000) if x.content == text]) == 1, text
        assert m.stats()["total"] == 1 + N_PROCS * unique_per_proc + len(SHARED)
    assert sum(r["searches"] for r in results) == N_PROCS * (N_WRITES // 10)
    print(f"{N_PROCS} processes x {N_WRITES} writes + searches: {elapsed:.1f} s")


# ---------------------------------------------------------------- migrate, both ways


def test_migrate_sqlite_to_postgres_and_back(cli, tmp_path: Path, pg_databases: PgDatabases) -> None:
    db = tmp_path / "local.db"
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        a = m.remember("we chose postgres for the team store", type="decision", tags=["db"])
        m.remember("the deploy runs on port 8080", scope="project:api")
        m.remember("the deploy runs on port 9090", scope="project:api")  # supersedes the first
        gone = m.remember("a note to forget")
        m.forget(gone.id)
        before = {x.id: x for x in m.list(scope="all", statuses=("active", "superseded", "archived", "deleted"), limit=1000)}
        history = {i: m.history(i) for i in before}
        hits = [h.memory.id for h in m.recall("which database did we choose", top_k=3, touch=False)]
    url = pg_databases.url()
    r = cli("migrate", "--from", str(db), "--to", url, "--json")
    assert r.code == 0, r.err
    report = r.json()
    assert report["copied"] == len(before) == 4 and report["verified"]["memories"] == 4 and report["vectors_copied"]
    again = cli("migrate", "--from", str(db), "--to", url, "--json").json()
    assert again["copied"] == 0 and again["already_there"] == 4  # idempotent
    with Mnemo(url, embedder=FakeEmbedder()) as pg:
        after = {x.id: x for x in pg.list(scope="all", statuses=("active", "superseded", "archived", "deleted"), limit=1000)}
        assert after == before
        assert {i: pg.history(i) for i in after} == history
        assert [h.memory.id for h in pg.recall("which database did we choose", top_k=3, touch=False)] == hits
        assert pg.get(a.id).tags == ["db"] and pg.stats()["vectors"] >= 4
    back = tmp_path / "copy.db"
    r = cli("migrate", "--from", url, "--to", str(back), "--json")
    assert r.code == 0, r.err and r.json()["copied"] == 4
    with Mnemo(back, embedder=FakeEmbedder()) as local:
        assert {x.id: x for x in local.list(scope="all", statuses=("active", "superseded", "archived", "deleted"), limit=1000)} == before
        assert [h.memory.id for h in local.recall("which database did we choose", top_k=3)] == hits


# ---------------------------------------------------------------- bad input


def test_unreachable_server_fails_fast_and_clearly(cli) -> None:
    # a port that accepts connections and never answers: only connect_timeout ends the wait
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    try:
        for url in (f"postgresql://mnemo@127.0.0.1:{port}/x", "postgresql://mnemo@127.0.0.1:1/x"):
            start = time.monotonic()
            with pytest.raises(StoreUnreachableError, match="cannot connect to PostgreSQL at 127.0.0.1"):
                Mnemo(url, embedder=FakeEmbedder())
            assert time.monotonic() - start < 8
        r = cli("search", "anything", "--db", f"postgresql://mnemo@127.0.0.1:{port}/x")
        assert r.code != 0 and r.err.startswith("error: cannot connect to PostgreSQL") and len(r.err.splitlines()) == 1
    finally:
        silent.close()


def test_missing_extension_privilege_is_explained(cli, pg_databases: PgDatabases) -> None:
    url = pg_url(pg_databases.new(template="template1", owner="mnemo"))  # no vector extension there
    r = cli("init", "--db", url)
    assert r.code != 0 and len(r.err.splitlines()) == 1 and "Traceback" not in r.err
    assert "'vector' extension" in r.err and "superuser" in r.err and "CREATE EXTENSION vector" in r.err
    with pytest.raises(StorePrivilegeError):
        Mnemo(url, embedder=FakeEmbedder())


def test_missing_store_and_newer_schema(pg_databases: PgDatabases) -> None:
    url = pg_databases.url()
    with pytest.raises(StoreError, match="run `mnemo init"):
        Mnemo(url, embedder=FakeEmbedder(), create=False)
    Mnemo(url, embedder=FakeEmbedder()).close()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', 'now')")
    with pytest.raises(SchemaTooNewError, match="newer"):
        Mnemo(url, embedder=FakeEmbedder())


class WrongDim(FakeEmbedder):
    """The same model name answering with vectors of another size."""

    dim = 32

    def embed_passages(self, texts):  # type: ignore[override]
        return super().embed_passages(texts)[:, :32]

    def embed_queries(self, texts):  # type: ignore[override]
        return super().embed_queries(texts)[:, :32]


def test_dimension_mismatch_is_a_clear_error(pg_databases: PgDatabases) -> None:
    url = pg_databases.url()
    with Mnemo(url, embedder=FakeEmbedder()) as m:
        m.remember("a memory indexed with 256-d vectors")
        with pytest.raises(StoreError, match="dimension mismatch"):
            with m.store.transaction():
                m.store.put_embeddings(m.embedder.name, [("h" * 32, 32, b"\0" * 128)])
    with Mnemo(url, embedder=WrongDim()) as m:
        for call in (lambda: m.remember("another memory"), lambda: m.recall("memory")):
            with pytest.raises(EmbedderError, match="32-d.*256-d"):
                call()
        assert m.stats()["total"] == 1


#: the test cluster's data folder (scripts/pg-setup's default); read at import, before the
#: autouse fixture clears MNEMO_* variables
PG_DATA = os.environ.get("MNEMO_TEST_PG_DATA", "/tmp/mnemo-pg/data")


def _restart_server() -> bool:
    data = PG_DATA
    pg_ctl = "/usr/lib/postgresql/15/bin/pg_ctl"
    if not Path(pg_ctl).exists() or os.geteuid() != 0 or not Path(data, "PG_VERSION").exists():
        return False
    log = str(Path(data).parent / "server.log")  # the server must not inherit our pipes
    subprocess.run(["runuser", "-u", "postgres", "--", pg_ctl, "-D", data, "-l", log, "-m", "fast", "-w", "restart"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    return True


def test_client_reconnects_after_the_server_restarts(pg_databases: PgDatabases) -> None:
    url = pg_databases.url()
    with Mnemo(url, embedder=FakeEmbedder()) as m:
        first = m.remember("written before the restart")
        if not _restart_server():  # not our cluster (or not root): drop our connection instead
            admin = pg_databases.conn
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (url.split("/")[3].split("?")[0],))
        pg_databases.reopen()
        assert [h.memory.id for h in m.recall("written before the restart")] == [first.id]  # reconnected
        second = m.remember("written after the restart")
        assert m.get(second.id).content == "written after the restart"
        assert json.loads(json.dumps(m.stats()))["total"] == 2


def test_postgres_store_implements_the_store_port() -> None:
    import inspect

    from mnemo._stores.postgres import PostgresStore
    from mnemo._stores.base import Store, VectorSearch

    wanted = [n for n, v in vars(Store).items() if callable(v) and not n.startswith("_")]
    wanted += [n for n, v in vars(Store.__mro__[1]).items() if callable(v) and not n.startswith("_")]  # AuxStore
    assert [n for n in wanted if not callable(getattr(PostgresStore, n, None))] == []
    for name in wanted:
        assert list(inspect.signature(getattr(Store, name)).parameters) == list(inspect.signature(getattr(PostgresStore, name)).parameters), name
    assert all(callable(getattr(PostgresStore, n)) for n in ("vector_index", "vector_search"))
    assert not issubclass(type("S", (), {}), VectorSearch)


def test_doctor_reports_the_postgres_schema_version(pg_databases: PgDatabases) -> None:
    from mnemo._stores.postgres_schema import LATEST_VERSION

    with Mnemo(pg_databases.url(), embedder=FakeEmbedder()) as m:
        assert m.store.schema_versions() == (LATEST_VERSION, LATEST_VERSION)
        schema = next(c for c in m.doctor() if c["check"] == "schema")
        assert schema["status"] == "ok" and schema["detail"] == f"schema version {LATEST_VERSION} (this mnemo: {LATEST_VERSION})"


def test_init_reports_whether_it_created_the_store(pg_databases: PgDatabases, cli) -> None:
    url = pg_databases.url()
    first = cli("init", "--db", url, "--json")
    assert first.code == 0, first.err
    assert first.json()["created"] is True
    again = cli("init", "--db", url, "--json").json()
    assert again["created"] is False and again["total"] == 0
