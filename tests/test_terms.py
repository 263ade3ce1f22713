"""Query terms' document frequencies kept between questions (``mnemo._recall.terms``).

Recall leaves out the terms a large share of a large store contains, and asks the index how
many rows hold each spelling of a name. Both lookups are remembered; these tests hold that what
is remembered always gives the answer a fresh lookup gives, through every kind of write, and
that it does save lookups.
"""

from __future__ import annotations

import random

import pytest
from fake_embedder import FakeEmbedder

from mnemo import Mnemo
from mnemo._base import text as _text
from mnemo._recall import terms as terms_module
from mnemo._recall.terms import TermStats

WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()


class Counting:
    """A store whose ``doc_freqs`` lookups are counted (everything else passes through)."""

    def __init__(self, store: object) -> None:
        self._store = store
        self.lookups = 0

    def doc_freqs(self, terms):  # noqa: ANN001, ANN201 - the store's own signature
        self.lookups += len(terms)
        return self._store.doc_freqs(terms)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._store, name)


@pytest.fixture
def small_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Common from 5 rows up, so that a store of ~50 memories has terms on both sides of the line."""
    monkeypatch.setattr(terms_module, "COMMON_MIN_ROWS", 5)


def _note(i: int, rng: random.Random) -> str:
    return f"entry{i} " + " ".join(rng.sample(WORDS, 2))


def test_kept_verdicts_are_what_fresh_lookups_say_through_every_kind_of_write(store_target: str, small_line: None) -> None:
    rng = random.Random(11)
    questions = [_text.query_terms(" ".join(rng.sample(WORDS, 5)))[0] for _ in range(6)]
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        m.import_([{"content": _note(i, rng), "id": f"n{i}"} for i in range(48)])
        ids = [f"n{i}" for i in range(48)]
        kept = TermStats()
        store = Counting(m.store)
        fresh_lookups = 0
        verdicts_seen: set[tuple[str, ...]] = set()
        for step in range(40):
            op = step % 4
            if op == 0:
                m.import_([{"content": _note(100 + step, rng), "id": f"w{step}"}])
                ids.append(f"w{step}")
            elif op == 1:
                m.edit(rng.choice(ids), content=_note(200 + step, rng))
            elif op == 2:
                m.forget(rng.choice(ids))  # a status change: the row stays in the full-text index
            else:
                gone = rng.choice(ids)
                ids.remove(gone)
                m.purge([gone])
            for terms in questions:
                fresh = Counting(m.store)
                expected = TermStats().drop_common(fresh, terms)
                fresh_lookups += fresh.lookups
                got = kept.drop_common(store, terms)
                assert got == expected, (step, terms)
                assert kept.doc_freqs(store, terms) == m.store.doc_freqs(terms)
                verdicts_seen.add(tuple(expected))
        assert len(verdicts_seen) > 3  # the writes moved terms across the line, not a fixed answer
        assert any(len(v) < 5 for v in verdicts_seen)  # and some were left out
        assert store.lookups < fresh_lookups / 2, (store.lookups, fresh_lookups)


def test_a_store_under_the_line_is_never_looked_up_and_a_repeated_question_costs_nothing(store_target: str, small_line: None) -> None:
    rng = random.Random(3)
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        m.import_([{"content": _note(i, rng)} for i in range(4)])
        store = Counting(m.store)
        stats = TermStats()
        terms = _text.query_terms("alpha bravo charlie")[0]
        assert stats.drop_common(store, terms) == terms
        assert store.lookups == 0  # 4 rows: no term can be in more than 5
        m.import_([{"content": _note(i, rng)} for i in range(4, 40)])
        stats.drop_common(store, terms)
        first = store.lookups
        assert first == len(terms)
        stats.drop_common(store, terms)
        assert store.lookups == first


def test_when_every_term_is_common_the_rarest_are_kept(store_target: str, small_line: None) -> None:
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        m.import_([{"content": f"entry{i} alpha bravo" + (" charlie" if i < 8 else "") + (" delta" if i < 12 else "")}
                   for i in range(30)])
        terms = _text.query_terms("alpha bravo charlie delta")[0]
        stats = TermStats()
        assert stats.drop_common(m.store, terms) == sorted(terms, key=lambda t: m.store.doc_freqs([t])[t])[:3]
        assert stats.drop_common(m.store, terms)[0] == _text.query_terms("charlie")[0][0]


def test_recall_through_the_kept_counts_finds_the_same_memories(store_target: str, small_line: None) -> None:
    """The long-lived cache inside Mnemo is what recall uses: a write between two questions
    that moves a term across the line changes the answer exactly as a fresh process would."""
    rng = random.Random(5)
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        m.import_([{"content": _note(i, rng), "id": f"n{i}"} for i in range(20)])
        question = " ".join(WORDS[:6])
        alpha = _text.query_terms(WORDS[0])[0][0]
        assert alpha in TermStats().drop_common(m.store, _text.query_terms(question)[0])
        first = [h.memory.id for h in m.recall(question, top_k=10, touch=False, mode="fts")]
        m.import_([{"content": f"extra{i} {WORDS[0]} {WORDS[1]}", "id": f"x{i}"} for i in range(12)])
        assert alpha not in TermStats().drop_common(m.store, _text.query_terms(question)[0])  # it crossed the line
        again = [h.memory.id for h in m.recall(question, top_k=10, touch=False, mode="fts")]
        with Mnemo(store_target, embedder=FakeEmbedder()) as other:
            assert again == [h.memory.id for h in other.recall(question, top_k=10, touch=False, mode="fts")]
        assert first and again != first


def test_a_purge_starts_the_counts_again(store_target: str, small_line: None) -> None:
    """A purge deletes rows without a new ``seq``: a term one row over the line, counted before,
    is under it after one of its rows is purged (the index generation tells)."""
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        m.import_([{"content": f"entry{i} alpha", "id": f"a{i}"} for i in range(6)])
        m.import_([{"content": f"entry{i} filler{i}" + (" bravo" if i == 0 else ""), "id": f"b{i}"} for i in range(30)])
        terms = _text.query_terms("alpha bravo")[0]
        kept = TermStats()
        assert terms[0] not in kept.drop_common(m.store, terms)  # alpha: 6 rows, over the line of 5
        m.purge(["a0"])
        assert terms[0] in TermStats().drop_common(m.store, terms)
        assert kept.drop_common(m.store, terms) == TermStats().drop_common(m.store, terms)
        assert kept.doc_freqs(m.store, terms) == m.store.doc_freqs(terms)


def test_the_words_a_question_was_translated_into_may_all_go(store_target: str, small_line: None) -> None:
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        m.import_([{"content": f"entry{i} alpha bravo"} for i in range(30)])
        terms = _text.query_terms("alpha bravo")[0]
        assert TermStats().drop_common(m.store, terms, keep_rarest=False) == []
        assert TermStats().drop_common(m.store, terms[:1], keep_rarest=False) == []  # one is checked too
        assert len(TermStats().drop_common(m.store, terms)) == 2  # a question's own words: the rarest stay
