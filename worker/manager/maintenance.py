"""Phases that are pure SQL over pages of notes (SPEC 7.3): folding recorded accesses in
(every cycle), importance scoring, stale-reference pruning, Ebbinghaus decay and TTL
pruning. Each page is its own short transaction, so a long phase never holds locks the
write path needs for long."""

from __future__ import annotations

import uuid
from typing import Any

from db.queries.access import fold_access_page
from db.queries.maintenance import (
    decay_page,
    expire_page,
    prune_stale_page,
    score_importance_page,
)
from worker.manager.deps import PhaseDeps, bump

_FIRST = uuid.UUID(int=0)

# Each access since the last decay multiplies retention by this much more (capped by
# `decay_access_boost_cap`): a note read every day stays, one never read fades.
BOOST_PER_ACCESS = 0.1


def score_importance(deps: PhaseDeps) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    after = _FIRST
    while True:
        with deps.db.transaction() as conn:
            last, seen, changed = score_importance_page(
                conn, after=after, limit=deps.settings.maintenance_page_size, now=deps.now)
        bump(counts, "scored", seen)
        bump(counts, "changed", changed)
        if last is None or seen < deps.settings.maintenance_page_size:
            return counts
        after = last


def decay_unused_notes(deps: PhaseDeps) -> dict[str, Any]:
    settings = deps.settings
    counts: dict[str, Any] = {}
    after = _FIRST
    while True:
        with deps.db.transaction() as conn:
            last, seen, archived = decay_page(
                conn, after=after, limit=settings.maintenance_page_size, now=deps.now,
                base_lambda=settings.decay_base_lambda, boost_per_access=BOOST_PER_ACCESS,
                boost_cap=settings.decay_access_boost_cap,
                archive_below=settings.decay_archive_below, cycle_id=deps.cycle_id)
        bump(counts, "decayed", seen)
        bump(counts, "archived", archived)
        if last is None or seen < settings.maintenance_page_size:
            return counts
        after = last


def fold_access_statistics(deps: PhaseDeps) -> dict[str, Any]:
    """Every cycle, first: the read path's recorded accesses into notes.access_count and
    last_accessed_at, so that importance, decay and hardening read current counts."""
    counts: dict[str, Any] = {}
    size = deps.settings.maintenance_page_size
    while True:
        with deps.db.transaction() as conn:
            taken, updated, hits = fold_access_page(conn, size)
        bump(counts, "notes", updated)
        bump(counts, "accesses", hits)
        if taken < size:
            return counts


def prune_expired_notes(deps: PhaseDeps) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    while True:
        with deps.db.transaction() as conn:
            archived = expire_page(conn, now=deps.now,
                                   limit=deps.settings.maintenance_page_size,
                                   cycle_id=deps.cycle_id)
        bump(counts, "archived", archived)
        if archived < deps.settings.maintenance_page_size:
            return counts


def prune_stale_references(deps: PhaseDeps) -> dict[str, Any]:
    """One page per cycle, continuing from the cursor the previous cycle stored."""
    stored = deps.watermarks.get("stale_references")
    try:
        after = uuid.UUID(stored) if isinstance(stored, str) else _FIRST
    except ValueError:
        after = _FIRST
    size = deps.settings.stale_reference_page_size
    with deps.db.transaction() as conn:
        last, seen, archived = prune_stale_page(conn, after=after, limit=size, now=deps.now,
                                                cycle_id=deps.cycle_id)
    # A short page means the end was reached: the next cycle starts over.
    cursor = str(last) if last is not None and seen == size else str(_FIRST)
    return {"checked": seen, "archived": archived, "watermark": cursor}
