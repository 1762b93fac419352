"""Consolidation and contradiction resolution (SPEC 7.3), always within one exact scope.

Consolidation: star clusters of 3–7 Active notes at cosine ≥ 0.60 around the best-connected
note; the judge writes one note for a cluster or declines (a declined cluster is memoized by
content and not offered again). Members are archived into the new note, which lists its
originals in `derived_from_note_ids`; after `consolidation_max_generations` a cluster is
re-derived from the originals instead of from summaries of summaries.

Contradictions: pairs at cosine ≥ 0.70, each evaluated once per content (memo), at most
`contradiction_max_pairs` new evaluations per cycle. The newer note wins when it is more than
`contradiction_recency_days` newer; otherwise higher importance, then more accesses, then
recency. Protected and Immutable notes are flagged for review, never revoked.
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from db.enums import NoteStatus, ProtectionTier
from db.queries.consolidation import (
    PoolNote,
    changed_scopes,
    insert_consolidated_note,
    load_pool,
    scope_pairs,
)
from db.queries.manager import (
    NoteChange,
    NoteEvent,
    apply_note_changes,
    insert_note_events,
    lock_notes,
    lock_scopes,
    memo_get,
    memo_put,
)
from worker.manager.deps import PhaseDeps, bump
from worker.manager.judge import PairRelation, pair_key
from worker.normalize import content_hash

UNTOUCHABLE = (ProtectionTier.IMMUTABLE.value, ProtectionTier.PROTECTED.value)
_ACTIVE = NoteStatus.ACTIVE.value
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Scopes examined per transaction.
_SCOPES_PER_BATCH = 200


def _since(deps: PhaseDeps) -> datetime:
    return deps.last_maintenance or _EPOCH


def star_clusters(pairs: dict[tuple[uuid.UUID, uuid.UUID], float], pool: dict[uuid.UUID,
                  PoolNote], *, min_size: int, max_size: int) -> list[list[uuid.UUID]]:
    """Greedy star clusters: the note with most neighbours and its closest unused neighbours.
    Only notes of one exact scope are ever neighbours (the pairs come from one scope)."""
    neighbours: dict[uuid.UUID, list[tuple[float, uuid.UUID]]] = {}
    for (a, b), similarity in pairs.items():
        if a in pool and b in pool:
            neighbours.setdefault(a, []).append((similarity, b))
            neighbours.setdefault(b, []).append((similarity, a))
    used: set[uuid.UUID] = set()
    clusters = []
    for centre in sorted(neighbours, key=lambda n: (-len(neighbours[n]), str(n))):
        if centre in used:
            continue
        closest = [n for _, n in sorted(neighbours[centre], reverse=True) if n not in used]
        members = [centre, *closest[: max_size - 1]]
        if len(members) >= min_size:
            clusters.append(members)
            used.update(members)
    return clusters


def consolidate_similar_notes(deps: PhaseDeps) -> dict[str, Any]:
    settings = deps.settings
    counts: dict[str, Any] = {}
    with deps.db.read() as conn:
        scopes = changed_scopes(conn, _since(deps))
    for start in range(0, len(scopes), _SCOPES_PER_BATCH):
        batch = scopes[start:start + _SCOPES_PER_BATCH]
        with deps.db.transaction() as conn:
            lock_scopes(conn, batch)
            pairs = scope_pairs(conn, batch, threshold=settings.consolidation_similarity,
                                k=settings.consolidation_max_cluster)
            ids = sorted({i for pair in pairs for i in pair})
            pool = {i: n for i, n in load_pool(conn, ids).items()
                    if n.status == _ACTIVE and n.protection_tier not in UNTOUCHABLE}
            for members in star_clusters(pairs, pool, min_size=settings.consolidation_min_cluster,
                                         max_size=settings.consolidation_max_cluster):
                _consolidate(deps, conn, [pool[m] for m in members], counts)
    return counts


def _consolidate(deps: PhaseDeps, conn: Any, members: list[PoolNote],
                 counts: dict[str, Any]) -> None:
    generation = max(m.consolidation_count for m in members) + 1
    sources = members
    if generation > deps.settings.consolidation_max_generations:
        # Re-derive from the original notes rather than summarize summaries again.
        originals = sorted({o for m in members for o in (m.derived_from or (m.id,))})
        loaded = load_pool(conn, originals)
        sources = [loaded[o] for o in originals if o in loaded]
        generation = 1
    texts = [m.note for m in sources]
    if deps.judge.cluster_declined(texts):
        bump(counts, "declined_memoized")
        return
    merged = deps.judge.consolidate(texts)
    if merged is None or len(merged) > deps.settings.max_note_length:
        deps.judge.decline_cluster(texts)
        bump(counts, "declined")
        return
    embedding, model = None, None
    if deps.embedder is not None:
        try:
            embedding = deps.embedder.embed([merged])[0]
            model = getattr(deps.embedder, "model_name", None) or deps.settings.embedding_model
        except Exception:
            bump(counts, "embedding_failed")
            return
    derived = sorted({o for m in members for o in (m.derived_from or (m.id,))})
    note_id = insert_consolidated_note(
        conn, template_id=members[0].id, note=merged,
        type=Counter(m.type for m in members).most_common(1)[0][0],
        content_hash=content_hash(merged),
        importance=max((m.importance_score for m in members if m.importance_score is not None),
                       default=None),
        confidence=max((m.confidence for m in members if m.confidence is not None),
                       default=None),
        access_count=sum(m.access_count for m in members), embedding=embedding,
        embedding_model=model, derived_from=derived, generation=generation, now=deps.now)
    member_ids = [m.id for m in members]
    lock_notes(conn, member_ids)
    apply_note_changes(conn, [
        NoteChange(m.id, _ACTIVE, status=NoteStatus.ARCHIVED.value, consolidated_into=note_id)
        for m in members], deps.now)
    events = [NoteEvent(m.id, "consolidated", f"merged with {len(members) - 1} similar notes",
                        _ACTIVE, NoteStatus.ARCHIVED.value, (note_id,)) for m in members]
    events.append(NoteEvent(note_id, "created", f"consolidated from {len(members)} notes",
                            None, _ACTIVE, tuple(member_ids), {"generation": generation}))
    insert_note_events(conn, events, actor="consolidation", cycle_id=deps.cycle_id,
                       now=deps.now)
    bump(counts, "clusters")
    bump(counts, "archived", len(members))


def _winner(a: PoolNote, b: PoolNote, recency_days: float) -> tuple[PoolNote, PoolNote, str]:
    newer, older = (a, b) if (a.created_at, str(a.id)) > (b.created_at, str(b.id)) else (b, a)
    if newer.created_at - older.created_at > timedelta(days=recency_days):
        return newer, older, f"newer by more than {recency_days:g} days"
    ia, ib = newer.importance_score or 0.0, older.importance_score or 0.0
    if ia != ib:
        return (newer, older, "higher importance") if ia > ib else (older, newer,
                                                                      "higher importance")
    if newer.access_count != older.access_count:
        return ((newer, older, "accessed more often") if newer.access_count > older.access_count
                else (older, newer, "accessed more often"))
    return newer, older, "more recent"


def resolve_contradictions(deps: PhaseDeps) -> dict[str, Any]:
    settings = deps.settings
    counts: dict[str, Any] = {"evaluated": 0}
    with deps.db.read() as conn:
        scopes = changed_scopes(conn, _since(deps))
    for start in range(0, len(scopes), _SCOPES_PER_BATCH):
        if counts["evaluated"] >= settings.contradiction_max_pairs:
            bump(counts, "deferred_scopes", len(scopes) - start)
            break
        batch = scopes[start:start + _SCOPES_PER_BATCH]
        with deps.db.transaction() as conn:
            lock_scopes(conn, batch)
            pairs = scope_pairs(conn, batch, threshold=settings.contradiction_similarity,
                                k=settings.hardening_candidates)
            pool = load_pool(conn, sorted({i for pair in pairs for i in pair}))
            changes: list[NoteChange] = []
            events: list[NoteEvent] = []
            retired: set[uuid.UUID] = set()
            for (a_id, b_id), similarity in sorted(pairs.items(), key=lambda kv: -kv[1]):
                a, b = pool.get(a_id), pool.get(b_id)
                if a is None or b is None or a.id in retired or b.id in retired:
                    continue
                if a.scope_key != b.scope_key:  # cannot happen; never compare across scopes
                    continue
                older, newer = sorted((a, b), key=lambda n: (n.created_at, str(n.id)))
                key = pair_key(older.note, newer.note, deps.judge.version)
                remembered = memo_get(conn, "pair", key)
                if remembered is not None:  # decided before (maybe in another scope): free
                    bump(counts, "memoized")
                    relation, judge = PairRelation(remembered[0]), f"memo:{remembered[1]}"
                elif counts["evaluated"] >= settings.contradiction_max_pairs:
                    bump(counts, "deferred")
                    continue
                else:
                    verdict = deps.judge.compare(older.note, newer.note, similarity)
                    counts["evaluated"] += 1
                    if verdict.decided or deps.judge.model is None:
                        memo_put(conn, "pair", key, verdict.relation.value, verdict.judge,
                                 deps.now, [content_hash(older.note), content_hash(newer.note)])
                    relation, judge = verdict.relation, verdict.judge
                if relation is not PairRelation.CONTRADICTION:
                    continue
                winner, loser, why = _winner(a, b, settings.contradiction_recency_days)
                reason = f"contradiction ({judge}); kept the note with {why}"
                if loser.protection_tier in UNTOUCHABLE:
                    if loser.review_flag:  # already waiting for a human
                        continue
                    changes.append(NoteChange(loser.id, _ACTIVE, review_flag=(
                        f"contradicted by {winner.id}; {loser.protection_tier} notes are not "
                        "changed automatically")))
                    events.append(NoteEvent(loser.id, "flagged", reason, _ACTIVE, _ACTIVE,
                                            (winner.id,), {"wanted": "revoked"}))
                    bump(counts, "flagged")
                else:
                    changes.append(NoteChange(loser.id, _ACTIVE,
                                              status=NoteStatus.REVOKED.value,
                                              superseded_by=winner.id))
                    events.append(NoteEvent(loser.id, "revoked", reason, _ACTIVE,
                                            NoteStatus.REVOKED.value, (winner.id,)))
                    bump(counts, "revoked")
                retired.add(loser.id)
            lock_notes(conn, [c.note_id for c in changes])
            apply_note_changes(conn, changes, deps.now)
            insert_note_events(conn, events, actor="contradictions", cycle_id=deps.cycle_id,
                               now=deps.now)
    return counts
