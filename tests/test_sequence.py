"""Context: a turn of a conversation or a section of a document is found through its neighbours."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_embedder import FakeEmbedder
from mnemo import Mnemo
from mnemo._recall.rank import Scored
from mnemo._recall.sequence import CONTEXT_REACH, CONTEXT_SHARE, PER_HIT, with_context

# one afternoon's talk (session 1) and a later one (session 2); the question's words are in
# turn 2, its answer in turn 4 ("which studio": the one by the river), which shares no word with it
TALK = [
    ("s1", "Caroline: How was your weekend? Mine was far too short."),
    ("s1", "Melanie: Busy, the kids had two football matches. Anything fun on your side?"),
    ("s1", "Caroline: I finally signed up for the pottery class I told you about."),
    ("s1", "Melanie: Oh nice, which studio did you pick in the end?"),
    ("s1", "Caroline: The little one by the river, I go straight after work."),
    ("s1", "Melanie: That sounds lovely, send me photos of the first bowl."),
    ("s1", "Caroline: Deal. How is the new car running?"),
    ("s1", "Melanie: Great so far, the mileage is much better than the old van."),
    ("s2", "Melanie: Guess what, our neighbour's cat had kittens."),
    ("s2", "Caroline: No way! Are you keeping one?"),
    ("s2", "Melanie: The grey one, we called her Pebble."),
]
ELSEWHERE = [
    "The bakery on Main Street closes early on Sundays.",
    "Book club moved to the library on Oak Avenue.",
    "Team lunch is at the ramen place near the station.",
    "Jake's band rents a recording studio downtown every Saturday.",
    "The yoga studio changed its schedule to mornings.",
]


def _talk(m: Mnemo, *, places: bool = True, archived: tuple[int, ...] = ()) -> list[str]:
    """Import TALK as a chat import keeps it (conversation, session, place) and ELSEWHERE as
    standalone notes; the turns' ids in order."""
    records = []
    for i, (session, text) in enumerate(TALK):
        place = {"source": "chat:talk.json", "source_session": session, "metadata": {"chunk": i}} if places else {}
        records.append({"id": f"turn-{i}", "content": text, **place, **({"status": "archived"} if i in archived else {})})
    records += [{"id": f"note-{i}", "content": text} for i, text in enumerate(ELSEWHERE)]
    m.import_(records)
    return [f"turn-{i}" for i in range(len(TALK))]


def test_a_hits_neighbours_are_lifted_below_it_and_say_so(m: Mnemo) -> None:
    _talk(m)
    hits = m.recall("pottery class", top_k=10, explain=True)
    ids = [h.memory.id for h in hits]
    assert ids[0] == "turn-2"
    lifted = [h for h in hits if h.explain.get("context_of") == "turn-2"]
    assert len(lifted) == PER_HIT == 2 and [h.memory.id for h in lifted] == ids[1:3]
    near = {f"turn-{i}" for i in (0, 1, 3, 4)}  # two places either side; two of them come along
    for h in lifted:
        assert h.memory.id in near
        assert h.score == pytest.approx(CONTEXT_SHARE * hits[0].score, rel=1e-3)
        assert h.explain["context_of"] == "turn-2" and h.explain["context_share"] == CONTEXT_SHARE
    assert all(h.score < hits[0].score for h in hits[1:])
    assert CONTEXT_REACH == 2


def test_without_places_turns_stand_alone(m: Mnemo) -> None:
    _talk(m, places=False)
    hits = m.recall("pottery class", top_k=10, explain=True)
    assert hits[0].memory.id == "turn-2"
    assert not any("context_of" in h.explain for h in hits)
    assert {f"turn-{i}" for i in (0, 1, 3, 4)} != {h.memory.id for h in hits[1:5]}


def test_neighbours_obey_the_recalls_filters(m: Mnemo) -> None:
    _talk(m, archived=(1,))
    m.forget("turn-3")  # deleted
    m.import_([{"id": "other-scope", "content": "Caroline: see you there", "scope": "project:elsewhere",
                "source": "chat:talk.json", "source_session": "s1", "metadata": {"chunk": 5}}])
    ids = [h.memory.id for h in m.recall("pottery class", top_k=10, scope="global")]
    assert "turn-4" in ids and "turn-3" not in ids and "turn-1" not in ids and "other-scope" not in ids
    assert "turn-1" in [h.memory.id for h in m.recall("pottery class", top_k=10, include_archived=True)]
    assert "turn-4" not in [h.memory.id for h in m.recall("pottery class", top_k=10, types=["decision"])]


def test_a_session_is_part_of_the_place(m: Mnemo) -> None:
    _talk(m)
    ids = [h.memory.id for h in m.recall("kittens neighbour cat", top_k=10)]
    assert ids[0] == "turn-8" and "turn-9" in ids and "turn-10" in ids
    assert "turn-7" not in ids and "turn-6" not in ids  # the end of session 1 is another conversation


def test_an_odd_chunk_value_is_no_place(m: Mnemo) -> None:
    m.import_([{"id": "a", "content": "pottery class on Thursday", "source": "chat:x", "metadata": {"chunk": "first"}},
               {"id": "b", "content": "something else entirely", "source": "chat:x", "metadata": {"chunk": 1}}])
    assert [h.memory.id for h in m.recall("pottery class", top_k=5)] == ["a"]


def test_an_ingested_documents_next_section_comes_with_it(m: Mnemo, tmp_path: Path) -> None:
    doc = tmp_path / "onboarding.md"
    doc.write_text("# Onboarding\n\n## VPN\n\nEveryone needs the VPN before the first day: ask IT for a token.\n\n"
                   "## Laptop\n\n" + "The laptop is configured by the helpdesk. " * 14 + "\n\n"
                   "## Access\n\nRequest repository access from your team lead on the first morning.\n", encoding="utf-8")
    m.ingest([doc], chunk_chars=200)
    chunks = sorted(m.store.memories_by_source(f"file:{doc}"), key=lambda x: x.metadata["chunk"])
    assert len(chunks) >= 3
    hits = m.recall("VPN token", top_k=5, explain=True)
    assert hits[0].memory.id == chunks[0].id
    assert chunks[1].id in [h.memory.id for h in hits]


def test_with_context_is_pure_ranking() -> None:
    scored = [Scored(1, 0.9, 0.5, None), Scored(2, 0.4, 0.4, None), Scored(3, 0.1, 0.1, None), Scored(4, 0.05, 0.1, None)]
    places = {1: ("doc", None, 10), 2: ("doc", None, 30)}
    asked: list[tuple[str, object, list[int]]] = []

    def members(source: str, session: object, chunks: list[int]) -> dict[int, int]:
        asked.append((source, session, sorted(chunks)))
        # around place 10: 7 (11, found by nothing), 8 (9, found by nothing), 4 (12, a weak match), 9 (8)
        return {7: 11, 8: 9, 4: 12, 9: 8, 1: 10} if 10 in [c - 1 for c in chunks] else {}

    out = with_context(scored, 0.15, lambda pks: {pk: places[pk] for pk in pks if pk in places}, members)
    # the weak match first, then the nearer of the rest, the following place before the preceding one
    assert [s.pk for s in out] == [1, 4, 7, 2, 3]
    assert out[1].score == out[2].score == pytest.approx(CONTEXT_SHARE * 0.9) and out[2].similarity is None
    assert asked[0] == ("doc", None, [8, 9, 11, 12])
    assert with_context(scored, 0.95, lambda pks: places, members) == scored  # nothing above the floor lends


@pytest.mark.model
@pytest.mark.parametrize("question", ["Which studio did Caroline pick for her pottery class?", "Where is Caroline's pottery studio?"])
def test_the_answer_next_to_the_match_with_the_real_model(tmp_path: Path, store_target: str, question: str) -> None:
    """Through e5: the studio is named in the reply after the turn that mentions pottery; alone,
    that reply is not in the top five."""
    with Mnemo(store_target, model="e5") as m:
        _talk(m)
        ids = [h.memory.id for h in m.recall(question, top_k=5)]
        assert ids[0] == "turn-2" and "turn-4" in ids, ids
    with Mnemo(tmp_path / "alone.db", model="e5") as alone:
        _talk(alone, places=False)
        ids = [h.memory.id for h in alone.recall(question, top_k=5)]
        assert ids[0] == "turn-2" and "turn-4" not in ids, ids


def test_an_edit_above_a_kept_chunk_moves_its_place(m: Mnemo, tmp_path: Path) -> None:
    """Re-ingesting an edited document keeps its unchanged chunks (same memory, no new vector)
    but gives them their new places, so reading around a hit still reads its real neighbours."""
    doc = tmp_path / "runbook.md"
    sections = ["## Backups\n\nThe database is backed up nightly to the NAS.",
                "## Restore\n\nRestores are tested on the first Monday of each month.",
                "## Contacts\n\nThe on-call engineer answers the pager within fifteen minutes."]
    doc.write_text("# Runbook\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    m.ingest([doc], chunk_chars=120)
    before = {c.content: c for c in m.store.memories_by_source(f"file:{doc}")}
    calls = m.embedder.calls
    doc.write_text("# Runbook\n\n## Access\n\nAsk IT for a VPN token before your first shift.\n\n" + "\n\n".join(sections) + "\n",
                   encoding="utf-8")
    m.ingest([doc], chunk_chars=120)
    after = sorted(m.store.memories_by_source(f"file:{doc}"), key=lambda c: c.metadata["chunk"])
    assert [c.metadata["chunk"] for c in after] == list(range(len(after))) == list(range(len(before) + 1))
    assert all(before[c.content].id == c.id for c in after[1:])  # kept, not rewritten
    assert m.embedder.calls - calls == 1  # only the new section was embedded
    doc_text = doc.read_text("utf-8")
    assert all(doc_text[c.metadata["start"]:c.metadata["end"]].strip() == c.content.strip() for c in after)
    # the restore section's neighbours are the backups and contacts sections, not stale places
    hits = m.recall("first Monday restore test", top_k=5, explain=True, touch=False)
    restore = next(c for c in after if "first Monday" in c.content)
    near = {c.id for c in after if abs(c.metadata["chunk"] - restore.metadata["chunk"]) <= 2 and c.id != restore.id}
    assert hits[0].memory.id == restore.id
    assert {h.memory.id for h in hits if h.explain.get("context_of") == restore.id} <= near


def test_explain_shows_what_lifted_a_neighbour(monkeypatch: pytest.MonkeyPatch) -> None:
    """`mnemo search --explain` of a neighbour lifted by context: its own breakdown ends at its
    own score, and one more line names the hit; one that neither channel found has only that line."""
    from rich.console import Console

    from mnemo._base.models import Hit, Memory
    from mnemo._cli import render

    console = Console(record=True, width=400, highlight=False, soft_wrap=True)
    monkeypatch.setattr(render, "out", console)
    own = {"similarity": 0.77, "baseline": 0.73, "bm25": 0.0, "dense_relevance": 0.0, "lexical_relevance": 0.0, "relevance": 0.0,
           "importance_factor": 1.0, "confidence_factor": 1.0, "recency_factor": 1.0, "access_factor": 1.0, "time_factor": 1.0,
           "score": 0.408, "context_of": "turn-2", "context_share": 0.85, "own_score": 0.01}
    render.hits([Hit(Memory(id="turn-4", content="the one by the river"), 0.408, 0.77, own),
                 Hit(Memory(id="turn-5", content="see you there"), 0.408, None,
                     {"context_of": "turn-2", "context_share": 0.85, "own_score": 0.0, "score": 0.408})], explain=True)
    text = console.export_text()
    assert "= 0.010" in text and text.count("↳ next to turn-2 in its document or conversation: 0.85 of that hit's score = 0.408") == 2
