"""The `vectors` phase (every cycle, first): notes and examples stored without a vector get
one.

A write whose embedding failed (an endpoint outage) is stored anyway — fail-open, SPEC 4 —
but without a vector it is invisible to `Relevant` retrieval, to hardening's and
consolidation's neighbour searches and to contradiction detection. This phase runs before
all of them, so once the embedder works again the next cycle sees every note by meaning.

At most `MEMORY_EMBEDDING_BACKFILL_PER_CYCLE` rows per cycle, notes first (provisional ones
first of all: hardening judges them next), embedded in batches, each batch stored in its own
short transaction only if the row still says what was embedded. An embedder that still fails
ends the phase (`embedding_failed`); the rows wait for the next cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import numpy as np
from sqlalchemy import Connection

from db.queries.missing_vectors import (
    Unembedded,
    examples_without_vector,
    notes_without_vector,
    set_example_vectors,
    set_note_vectors,
)
from worker.embeddings import Embedder
from worker.manager.deps import PhaseDeps, bump

EMBED_BATCH = 64  # texts per embedding call: a batch is far cheaper per text than one each

Reader = Callable[[Connection, int], list[Unembedded]]
Writer = Callable[[Connection, list[Unembedded], list[np.ndarray], str, datetime], int]


class EmbedderStillFailing(Exception):
    pass


def embed_missing_vectors(deps: PhaseDeps) -> dict[str, int | bool]:
    counts: dict[str, int] = {"notes_embedded": 0, "examples_embedded": 0}
    if deps.embedder is None:
        bump(counts, "no_embedder")
        return dict(counts)
    budget = deps.settings.embedding_backfill_per_cycle
    try:
        budget = backfill(deps, deps.embedder, notes_without_vector, set_note_vectors, budget,
                          counts, "notes_embedded")
        budget = backfill(deps, deps.embedder, examples_without_vector, set_example_vectors,
                          budget, counts, "examples_embedded")
    except EmbedderStillFailing:
        bump(counts, "embedding_failed")
    return {**counts, "budget_exhausted": budget <= 0}


def backfill(deps: PhaseDeps, embedder: Embedder, read: Reader, store: Writer, budget: int,
             counts: dict[str, int], counted_as: str) -> int:
    """Pages of rows without a vector until none is left or the budget is spent; returns
    what is left of the budget."""
    while budget > 0:
        with deps.db.read() as conn:
            page = read(conn, min(EMBED_BATCH, budget))
        if not page:
            break
        vectors = embed_page(embedder, page)
        with deps.db.transaction() as conn:
            bump(counts, counted_as, store(conn, page, vectors, embedder.model_name, deps.now))
        budget -= len(page)
    return budget


def embed_page(embedder: Embedder, page: list[Unembedded]) -> list[np.ndarray]:
    try:
        return list(embedder.embed([row.text for row in page]))
    except Exception as exc:  # still down: the rows keep waiting, nothing else is lost
        raise EmbedderStillFailing() from exc
