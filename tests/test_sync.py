"""mnemo sync: devices that share a folder converge, nothing acknowledged is lost, a purge is a
purge everywhere, and half-copied, damaged or foreign segments wait with a reason.

One device of each test is the test's store (``store_target``: a PostgreSQL database on the
PostgreSQL run, so sync between a team store and a SQLite file is covered there); the others
are SQLite files. The property test simulates the sync tool itself: each device sees its own
copy of the folder, and files travel between the copies whole or cut short.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_embedder import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo import Mnemo
from mnemo._replica import segments as seg

ALL = ("active", "superseded", "archived", "deleted")


def state(m: Mnemo) -> set[tuple[Any, ...]]:
    """What must be equal on every device: each memory's id, text, kind, scope, tags and status, and the links."""
    mems = {(x.id, x.content, x.type, x.scope, tuple(sorted(x.tags)), x.status, x.superseded_by) for x in m.list(scope="all", statuses=ALL, limit=100_000)}
    links = {("link", x.id, r["id"], r["kind"]) for x in m.list(scope="all", statuses=ALL, limit=100_000)
             for r in m.related(x.id) if r["direction"] == "out"}
    return mems | links


def devices(tmp_path: Path, store_target: str, n: int = 2) -> list[Mnemo]:
    return [Mnemo(store_target if i == 0 else tmp_path / f"dev{i}.db", embedder=FakeEmbedder()) for i in range(n)]


def sync_all(ms: list[Mnemo], folder: Path, rounds: int = 2) -> None:
    for _ in range(rounds):
        for m in ms:
            m.sync(folder)


def test_two_devices_converge_through_saves_edits_forgets_and_links(tmp_path: Path, store_target: str) -> None:
    a, b = devices(tmp_path, store_target)
    folder = tmp_path / "shared"
    x = a.remember("The orders service uses PostgreSQL 16", type="decision", tags=["db"])
    y = a.remember("I prefer tabs over spaces", type="user_preference")
    z = b.remember("Deploys happen on Fridays at noon")
    sync_all([a, b], folder)
    assert state(a) == state(b) and len(b.list(scope="all")) == 3
    b.edit(x.id, content="The orders service uses PostgreSQL 17")
    a.forget(y.id)
    b.remember("The orders service uses PostgreSQL 17 and PgBouncer")  # links or supersedes on b
    a.edit(z.id, tags=["ops"])
    sync_all([a, b], folder)
    assert state(a) == state(b)
    assert a.get(x.id).content.endswith("17") and b.get(y.id).status == "deleted" and b.get(z.id).tags == ["ops"]
    # history travels: b's edit is in a's history of x
    assert any(e["kind"] == "updated" for e in a.history(x.id))
    b.restore(y.id)
    sync_all([a, b], folder)
    assert a.get(y.id).status == "active" and state(a) == state(b)
    for m in (a, b):
        m.close()


def test_concurrent_edits_resolve_the_same_way_everywhere_and_the_loser_is_kept(tmp_path: Path, store_target: str) -> None:
    a, b = devices(tmp_path, store_target)
    folder = tmp_path / "shared"
    x = a.remember("The API gateway listens on port 8080")
    sync_all([a, b], folder)
    a.edit(x.id, content="The API gateway listens on port 8443")
    b.edit(x.id, content="The API gateway listens on port 9000")
    sync_all([a, b], folder)
    assert state(a) == state(b)
    winner = a.get(x.id).content
    loser = ({"The API gateway listens on port 8443", "The API gateway listens on port 9000"} - {winner}).pop()
    kept = [e for m in (a, b) for e in m.history(x.id) if e["kind"] == "sync_conflict"]
    assert kept and kept[0]["data"]["lost"]["content"] == loser
    status = [m.sync_status(folder) for m in (a, b)]
    assert any(s["conflicts"] for s in status)
    for m in (a, b):
        m.close()


def test_a_purge_is_a_purge_everywhere_stores_and_segments(tmp_path: Path, store_target: str) -> None:
    a, b = devices(tmp_path, store_target)
    folder = tmp_path / "shared"
    secret = "my salary target is zanzibar-quokka 123456"
    x = a.remember(secret)
    a.remember("zanzibar-quokka is also the name of the project plan")  # another memory, not purged
    sync_all([a, b], folder)
    b.edit(x.id, tags=["private"])
    sync_all([a, b], folder)
    b.purge([x.id])
    sync_all([a, b], folder)
    for m in (a, b):
        with pytest.raises(Exception, match="no memory"):
            m.get(x.id)
    assert state(a) == state(b)
    needle = secret.encode()
    for path in [*folder.rglob("*"), *tmp_path.glob("dev*.db*")]:
        if path.is_file():
            assert needle not in path.read_bytes(), path
    if not store_target.startswith("postgresql"):
        for path in Path(store_target).parent.glob(Path(store_target).name + "*"):
            assert needle not in path.read_bytes(), path
    for m in (a, b):
        m.close()


def test_vectors_travel_when_the_model_is_the_same(tmp_path: Path, store_target: str) -> None:
    a, b = devices(tmp_path, store_target)
    folder = tmp_path / "shared"
    for i in range(20):
        a.remember(f"fact number {i}: the {i}th service runs on host h{i}")
    a.sync(folder)
    before = b.embedder.calls
    b.sync(folder)
    assert b.embedder.calls == before  # not one text embedded again
    assert b.stats()["vectors"] >= 20 and b.recall("which host runs the 7th service", top_k=1)[0].memory.content.startswith("fact number 7")
    for m in (a, b):
        m.close()


def test_half_copied_damaged_future_and_foreign_segments_wait_with_a_reason(tmp_path: Path) -> None:
    a, b = Mnemo(tmp_path / "a.db", embedder=FakeEmbedder()), Mnemo(tmp_path / "b.db", embedder=FakeEmbedder())
    folder = tmp_path / "shared"
    a.remember("first fact")
    a.sync(folder)
    a.remember("second fact")
    a.sync(folder)
    dev = a.sync_status(folder)["device"]
    first, second = sorted((folder / dev).glob("*.seg"))
    whole = second.read_bytes()
    second.write_bytes(whole[: len(whole) // 2])  # still being copied
    (folder / dev / "00000003.seg").write_bytes(b"MNEMO-SYNC 9\n{}\n")  # a newer mnemo's
    (folder / dev / "00000004.seg").write_bytes(b"garbage")
    report = b.sync(folder)
    why = {s["file"].split("/")[1]: s["why"] for s in report["skipped"]}
    assert "still being copied" in why["00000002.seg"] and "newer mnemo" in why["00000003.seg"] and "not a mnemo" in why["00000004.seg"]
    assert [m.content for m in b.list()] == ["first fact"]
    second.write_bytes(whole)  # the copy completes
    b.sync(folder)
    assert sorted(m.content for m in b.list()) == ["first fact", "second fact"]
    assert {w["segment"] for d in b.sync_status(folder)["devices"] for w in d["waiting"]} == {3, 4}


def test_segments_of_an_encrypted_store_are_sealed(tmp_path: Path) -> None:
    key = "correct horse battery staple"
    a = Mnemo(tmp_path / "a.db", embedder=FakeEmbedder(), key=key)
    b = Mnemo(tmp_path / "b.db", embedder=FakeEmbedder(), key=key)
    c = Mnemo(tmp_path / "c.db", embedder=FakeEmbedder(), key="another key entirely")
    folder = tmp_path / "shared"
    a.remember("the vault code is hidden-walrus")
    with pytest.raises(Exception, match="encrypted: sync needs its key"):
        a.sync(folder)
    a.sync(folder, key=key)
    assert not any(b"hidden-walrus" in p.read_bytes() for p in folder.rglob("*.seg"))
    b.sync(folder, key=key)
    assert [m.content for m in b.list()] == ["the vault code is hidden-walrus"]
    skipped = c.sync(folder, key="another key entirely")["skipped"]
    assert skipped and "another key" in skipped[0]["why"] and c.list() == []


def test_sync_limited_to_a_scope_shares_only_that_scope(tmp_path: Path, store_target: str) -> None:
    a, b = devices(tmp_path, store_target)
    folder = tmp_path / "shared"
    a.remember("The shop uses Stripe", scope="project:shop")
    a.remember("My dentist is on Tuesday", scope="global")
    a.sync(folder, scopes=["project:shop"])
    b.sync(folder, scopes=["project:shop"])
    assert [m.content for m in b.list(scope="all")] == ["The shop uses Stripe"]
    for m in (a, b):
        m.close()


# ---------------------------------------------------------------- the property: any operations, any order


class World:
    """Three devices, each with its own copy of the shared folder; the sync tool copies files
    between the copies, whole or cut short (a copy in flight)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ms = [Mnemo(root / f"d{i}.db", embedder=FakeEmbedder()) for i in range(3)]
        self.views = [root / f"view{i}" for i in range(3)]
        self.created: set[str] = set()
        self.purged: dict[str, str] = {}
        self.ids = [m.sync_status(v)["device"] for m, v in zip(self.ms, self.views)]

    def copy(self, rng: random.Random, *, whole: bool) -> None:
        """The sync tool: one file from one copy of the folder to another (never over the
        writer's own file: a tool does not put an older or half copy over the newer original)."""
        src, dst = rng.sample(range(3), 2)
        files = [p for p in self.views[src].rglob("*.seg") if p.relative_to(self.views[src]).parts[0] != self.ids[dst]]
        if not files:
            return
        f = rng.choice(files)
        target = self.views[dst] / f.relative_to(self.views[src])
        target.parent.mkdir(parents=True, exist_ok=True)
        data = f.read_bytes()
        target.write_bytes(data if whole else data[: rng.randrange(1, max(2, len(data)))])

    def settle(self) -> None:
        """Every file copied whole everywhere, then everyone syncs, three times: a purge made
        after the last sync travels in round one's sync, reaches the memory's writer in round
        two, whose rewritten segment (without the text) reaches the other copies only in round
        three (with two, the other folders kept the writer's old segment: hypothesis found it)."""
        for _ in range(3):
            for i in range(3):
                for f in self.views[i].rglob("*.seg"):
                    if f.relative_to(self.views[i]).parts[0] != self.ids[i]:
                        continue
                    for j in range(3):
                        if j != i:
                            target = self.views[j] / f.relative_to(self.views[i])
                            target.parent.mkdir(parents=True, exist_ok=True)
                            shutil.copyfile(f, target)
            for i in range(3):
                self.ms[i].sync(self.views[i])

    def close(self) -> None:
        for m in self.ms:
            m.close()


OPS = st.lists(st.tuples(st.sampled_from(["save", "save", "edit", "forget", "restore", "purge", "sync", "sync", "copy", "cut"]),
                         st.integers(0, 2), st.integers(0, 10**6)), min_size=5, max_size=30)


@settings(max_examples=int(os.environ.get("MNEMO_SYNC_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=OPS)
def test_any_operations_in_any_sync_order_converge(tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, int]]) -> None:
    w = World(tmp_path_factory.mktemp("world"))
    words = ["redis", "postgres", "kafka", "nginx", "订单", "用户", "缓存", "deploy", "friday", "port"]
    try:
        for op, dev, seed in ops:
            rng = random.Random(seed)
            m = w.ms[dev]
            mems = m.list(scope="all", statuses=ALL, limit=1000)
            if op == "save":
                mem = m.remember(f"{rng.choice(words)} {rng.choice(words)} note {seed}")
                w.created.add(mem.id)
            elif op == "edit" and mems:
                target = rng.choice(mems)
                text = f"{rng.choice(words)} edited {seed}"
                if target.content != text:
                    m.edit(target.id, content=text)
            elif op == "forget" and mems:
                target = rng.choice(mems)
                if target.status != "deleted":
                    m.forget(target.id)
            elif op == "restore" and mems:
                target = rng.choice(mems)
                try:
                    m.restore(target.id)
                except Exception:
                    pass  # nothing to undo on an active memory
            elif op == "purge" and mems:
                target = rng.choice(mems)
                w.purged[target.id] = target.content
                m.purge([target.id])
            elif op == "sync":
                m.sync(w.views[dev])
            elif op in ("copy", "cut"):
                w.copy(rng, whole=op == "copy")
        w.settle()
        first = state(w.ms[0])
        assert all(state(m) == first for m in w.ms[1:])
        ids = {x.id for x in w.ms[0].list(scope="all", statuses=ALL, limit=100_000)}
        assert w.created - set(w.purged) <= ids, "an acknowledged write was lost"
        assert not ids & set(w.purged)
        texts = [t.encode() for mid, t in w.purged.items() if not any(t == x.content for x in w.ms[0].list(scope="all", statuses=ALL, limit=100_000))]
        for path in w.root.rglob("*"):
            if path.is_file() and texts:
                data = path.read_bytes()
                assert not any(t in data for t in texts), f"purged text left in {path}"
    finally:
        w.close()


# ---------------------------------------------------------------- kills


@pytest.mark.slow
def test_a_killed_sync_leaves_store_and_folder_consistent_and_the_next_one_completes(tmp_path: Path) -> None:
    """A sample of the kill benchmark (bench/sync.py kills it 30+ times): a sync applying 2,000
    memories (~1.5 s here) is killed at random instants; the store still opens, and the next sync
    ends with every memory there."""
    folder = tmp_path / "shared"
    with Mnemo(tmp_path / "a.db", embedder=FakeEmbedder()) as a:
        a.import_([{"content": f"imported fact {i} about service s{i} with detail {i * 7}"} for i in range(2000)])
        a.sync(folder)
        want = state(a)
    env = {**os.environ, "MNEMO_HOME": str(tmp_path / "home"), "MNEMO_DB": str(tmp_path / "b.db")}
    init = subprocess.run([sys.executable, "-m", "mnemo", "init"], env=env, capture_output=True, text=True, timeout=120)
    assert init.returncode == 0, init.stderr  # the store exists: each kill lands in the sync, not in making it
    rng = random.Random(7)
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, "-m", "mnemo", "sync", str(folder)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            proc.wait(timeout=rng.uniform(0.35, 1.4))
        except subprocess.TimeoutExpired:
            proc.kill()
        proc.wait()
        proc.stderr.close()  # type: ignore[union-attr]
        check = subprocess.run([sys.executable, "-m", "mnemo", "stats", "--json"], env=env, capture_output=True, text=True, timeout=120)
        assert check.returncode == 0, check.stderr
        for f in folder.rglob("*.seg"):  # nothing half-written under a final name
            seg.decode(f.read_bytes())
    done = subprocess.run([sys.executable, "-m", "mnemo", "sync", str(folder), "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with Mnemo(tmp_path / "b.db", embedder=FakeEmbedder()) as b:
        assert {s for s in state(b) if s[0] != "link"} == {s for s in want if s[0] != "link"}


# ---------------------------------------------------------------- merge and the command line


def test_merge_of_two_stores_dedups_and_keeps_both_histories(tmp_path: Path, store_target: str) -> None:
    here = Mnemo(store_target, embedder=FakeEmbedder())
    shared = here.remember("We use PostgreSQL 16 for the orders database", type="decision")
    here.remember("I prefer dark mode in every editor")
    with Mnemo(tmp_path / "laptop.db", embedder=FakeEmbedder()) as other:
        other.remember("We use PostgreSQL 16 for the orders database", type="decision")  # a repeat of here's
        mine = other.remember("Deploys run on Fridays at noon")
        other.edit(mine.id, content="Deploys run on Fridays at 14:00")
        gone = other.remember("An old note nobody needs")
        other.forget(gone.id)
    counts = here.merge(tmp_path / "laptop.db")
    assert counts["read"] == 3 and counts["merged"] == 1 and counts["created"] == 1 and counts["added_as_they_were"] == 1
    assert here.get(mine.id).content == "Deploys run on Fridays at 14:00"
    history = here.history(mine.id)  # the other store's history of it, and its arrival here
    assert any(e["kind"] == "updated" and e["data"]["before"]["content"].endswith("noon") for e in history)
    assert [e["cause"] for e in history if e["kind"] == "created"].count("merge") == 1
    assert any(e["kind"] == "merged" for e in here.history(shared.id)) and here.get(gone.id).status == "deleted"
    again = here.merge(tmp_path / "laptop.db")
    assert again["unchanged"] + again["merged"] == 3 - again["created"] and here.stats()["total"] == 3
    here.close()


def test_the_sync_command(tmp_path: Path, cli: Any) -> None:
    r = cli("sync")
    assert r.code == 2 and "sync_dir" in r.err
    cli("save", "We deploy on Fridays")
    r = cli("sync", str(tmp_path / "shared"), "--json")
    assert r.code == 0 and r.json()["written"] == "00000001.seg"
    r = cli("sync", str(tmp_path / "shared"), "--status")
    assert r.code == 0 and "this one" in r.out
    (tmp_path / "afile").write_text("x")
    r = cli("sync", str(tmp_path / "afile"))
    assert r.code != 0 and "Traceback" not in r.err


def test_doctor_warns_about_a_store_inside_a_synced_folder(tmp_path: Path) -> None:
    box = tmp_path / "Dropbox" / "notes"
    box.mkdir(parents=True)
    with Mnemo(box / "m.db", embedder=FakeEmbedder()) as m:
        check = {c["check"]: c for c in m.doctor()}["sync folder"]
    assert check["status"] == "warn" and "Dropbox" in check["detail"] and "mnemo sync" in check["fix"]
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / ".stfolder").mkdir()
    with Mnemo(tmp_path / "st" / "m.db", embedder=FakeEmbedder()) as m:
        assert "Syncthing" in {c["check"]: c for c in m.doctor()}["sync folder"]["detail"]


def test_segment_format_round_trip_and_checks() -> None:
    data = seg.encode("dev-1", 3, [{"op": "put", "id": "x", "hlc": "1"}])
    got = seg.decode(data)
    assert (got.device, got.number, got.records) == ("dev-1", 3, [{"op": "put", "id": "x", "hlc": "1"}])
    clock = seg.Clock("a")
    v1 = clock.tick()
    clock.seen("9999999999999.000000.b")
    assert clock.tick() > "9999999999999.000000.b" > v1
    assert json.loads(data.split(b"\n")[1])["records"] == 1


def test_compaction_folds_a_devices_files_and_a_new_device_bootstraps_from_the_snapshot(tmp_path: Path, store_target: str) -> None:
    a, b = devices(tmp_path, store_target)
    folder = tmp_path / "shared"
    x = a.remember("The cache is Redis 6")
    for i in range(4):
        a.remember(f"step {i} of the rollout is done")
        a.edit(x.id, content=f"The cache is Redis {7 + i}")
        a.sync(folder)
        if i == 1:
            b.sync(folder)  # b has applied the first two files, not the rest
    gone = a.remember("a note to purge later")
    a.sync(folder)
    a.purge([gone.id])
    report = a.sync(folder, compact=True)
    dev = report["device"]
    assert report["compacted"] >= 6 and len(list((folder / dev).glob("*.seg"))) == 1
    b.sync(folder)
    c = Mnemo(tmp_path / "new.db", embedder=FakeEmbedder())
    c.sync(folder)
    assert state(a) == state(b) == state(c) and c.get(x.id).content == "The cache is Redis 10"
    for m in (a, b, c):
        m.close()


def test_a_sync_cut_short_mid_apply_never_sends_back_what_it_received(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the kill benchmark: memories inserted before a kill, with their versions not yet
    recorded, came back from the new device as its own, and every one was a false conflict."""
    a, b = Mnemo(tmp_path / "a.db", embedder=FakeEmbedder()), Mnemo(tmp_path / "b.db", embedder=FakeEmbedder())
    folder = tmp_path / "shared"
    a.import_([{"content": f"fact {i} about host h{i}"} for i in range(300)])
    a.sync(folder)
    real, calls = b.store.set_sync_version, {"n": 0}

    def dies_later(*args: Any) -> None:
        calls["n"] += 1
        if calls["n"] > 200:  # the process dies in the second batch
            raise KeyboardInterrupt
        real(*args)

    monkeypatch.setattr(b.store, "set_sync_version", dies_later)
    with pytest.raises(KeyboardInterrupt):
        b.sync(folder)
    monkeypatch.setattr(b.store, "set_sync_version", real)
    assert 0 < len(b.list(limit=1000)) < 300  # some batches are in
    again = b.sync(folder)
    assert again["pushed"] == 0 and len(b.list(limit=1000)) == 300
    assert a.sync(folder)["conflicts"] == 0 and state(a) == state(b)


def test_a_device_made_by_sync_records_the_model_and_passes_vectors_on(tmp_path: Path) -> None:
    """Found by the kill benchmark: a store filled only by sync recorded no model, so what it
    later sent carried no vectors and a third device had to embed everything."""
    a, b, c = (Mnemo(tmp_path / f"{n}.db", embedder=FakeEmbedder()) for n in "abc")
    folder = tmp_path / "shared"
    for i in range(10):
        a.remember(f"fact {i} about host h{i}")
    a.sync(folder)
    b.sync(folder)
    assert b.stats()["model"] == a.stats()["model"] and b.stats()["vectors"] >= 10
    b.remember("a fact b adds itself")
    b.sync(folder)
    b_dir = folder / b.sync_status(folder)["device"]
    records = [r for f in b_dir.glob("*.seg") for r in seg.decode(f.read_bytes()).records]
    assert records and all("vector" in r for r in records if r["op"] == "put")
    before = c.embedder.calls
    c.sync(folder)
    assert c.embedder.calls == before and state(c) == state(b)


def test_links_to_a_memory_from_a_file_applied_later_are_made_when_it_arrives(tmp_path: Path) -> None:
    """Found by CI: a device applying b's file before a's dropped b's link to a's memory
    (device folders are read in name order, and ids are random)."""
    a, b, c = (Mnemo(tmp_path / f"{n}.db", embedder=FakeEmbedder()) for n in "abc")
    folder = tmp_path / "shared"
    x = a.remember("The payments service is written in Go")
    a.sync(folder)
    b.sync(folder)
    y = b.remember("The payments service runs on three hosts")
    with b.store.transaction():
        b.store.add_relation(y.id, x.id, "related", 0.7)
    b.edit(y.id, tags=["ops"])  # the link travels with y's next version
    b.sync(folder)
    a_dir = folder / a.sync_status(folder)["device"]
    hidden = tmp_path / "later"
    shutil.move(str(a_dir), hidden)  # c sees b's file first, a's after
    c.sync(folder)
    shutil.move(str(hidden), a_dir)
    c.sync(folder)
    assert {r["id"] for r in c.related(y.id)} == {x.id} and state(c) == state(b)
