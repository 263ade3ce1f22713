"""Context: a memory that is one turn of a conversation or one section of a document is found
through its neighbours.

A question's words and meaning often land on one turn ("what do you do on weekends?") while
the answer is the next one ("mostly hiking with my dog"), or on one paragraph of a note while
the fact sits in the paragraph after it. People read around what they found; recall does the
same: each of the strongest hits (``ANCHORS``) lends ``CONTEXT_SHARE`` of its score to the two
(``PER_HIT``) of the memories up to ``CONTEXT_REACH`` places before and after it, in the same
source and session, that match the question best by themselves (metadata ``chunk``: what ingest
numbers a document's chunks and a chat export's windows with, and what an import may carry).
A neighbour keeps its own score when that is higher, always ranks below the hit that lifted it,
and may be a memory neither channel found.

Measured (``bench/quality.py``, e5, hybrid R@5 / R@10, relevance floor off in the simulation
the choice was made with): LoCoMo dev 0.598 / 0.683 → 0.651 / 0.742; our blind conversations
(``bench/recall/conversations_heldout.json``, seen since: the first version, which lifted all four
places, scored 0.622 → 0.627 on it once) 0.622 / 0.753 → 0.642 / 0.769. Lifting all four places
filled ranks 2-5 with one hit's surroundings and pushed the next independent answer out (LoCoMo
0.661, the blind set 0.627); one place either side was worse on both (0.623, 0.588). Memories
without a place (saved, captured) are untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .rank import Scored

#: how many places either side of a hit count as its context
CONTEXT_REACH = 2
#: the share of a hit's score its neighbours are lifted to
CONTEXT_SHARE = 0.85
#: how many of the places around a hit are lifted: the two that match the question best by
#: themselves (all four crowded out the next independent hit: see the module's note)
PER_HIT = 2
#: how many of the best hits lend their score (the rest could not place a neighbour in the top)
ANCHORS = 10

Position = tuple[str, "str | None", int]


def with_context(
    scored: list[Scored],
    floor: float,
    positions: Callable[[Sequence[int]], dict[int, Position]],
    members: Callable[[str, "str | None", Sequence[int]], dict[int, int]],
) -> list[Scored]:
    """``scored`` (best first) with the neighbours of its best hits lifted, best first again.

    ``positions(pks)`` gives the place of each pk that has one; ``members(source, session,
    chunks)`` the visible memories (pk -> chunk) at those places, with the recall's filters
    applied. A new neighbour has no similarity; with ``explain`` on, every lifted memory's
    breakdown says which hit lifted it (``context_of``, a pk until recall names it)."""
    anchors = [s for s in scored[:ANCHORS] if s.score >= floor]
    places = positions([s.pk for s in anchors]) if anchors else {}
    if not places:
        return scored
    by_pk = {s.pk: s for s in scored}
    explain = scored[0].explain is not None
    lifted: dict[int, Scored] = {}
    for anchor in anchors:
        place = places.get(anchor.pk)
        if place is None:
            continue
        source, session, chunk = place
        near = [c for d in range(1, CONTEXT_REACH + 1) for c in (chunk - d, chunk + d) if c >= 0]
        share = CONTEXT_SHARE * anchor.score
        found = members(source, session, near)
        # the places that relate to the question by themselves first, then the nearer, then the
        # one after (a reply follows what it answers)
        order = sorted((pk for pk in found if pk != anchor.pk),
                       key=lambda pk: (-(by_pk[pk].score if pk in by_pk else 0.0), abs(found[pk] - chunk), found[pk] < chunk))
        for pk in order[:PER_HIT]:
            own = lifted.get(pk) or by_pk.get(pk)
            if own is not None and own.score >= share:
                continue
            info = None
            if explain:
                info = {**((own.explain or {}) if own is not None else {}), "context_of": anchor.pk, "context_share": CONTEXT_SHARE,
                        "own_score": own.score if own is not None else 0.0, "score": share}
            lifted[pk] = Scored(pk, share, own.similarity if own is not None else None, info)
    if not lifted:
        return scored
    out = [lifted.get(s.pk, s) for s in scored] + [s for pk, s in lifted.items() if pk not in by_pk]
    # a tie (two neighbours of one hit) goes to the one that matched better by itself
    out.sort(key=lambda s: (-s.score, -(by_pk[s.pk].score if s.pk in by_pk else 0.0), -s.pk))
    return out


def named_anchor(explain: dict[str, object] | None, memories: dict[int, object]) -> dict[str, object] | None:
    """An explain breakdown with ``context_of`` turned from the lifting hit's pk into its id."""
    if not explain or "context_of" not in explain:
        return explain
    anchor = memories.get(explain["context_of"])  # type: ignore[call-overload]
    return {**explain, "context_of": getattr(anchor, "id", None)}
