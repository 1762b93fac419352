"""Hardening (SPEC 7.1): every cycle, first. Agent-written provisional notes become vetted
Active notes, oldest first, each judged only against notes of its own exact scope:

* an exact restatement or a judged duplicate of a hardened note → `Archived`, lineage to the
  target (`consolidated_into_note_id`), target reinforced;
* a recorded or judged correction of an older Active note → recency wins: the older note is
  `Revoked` (`superseded_by` the newer) — or, if Immutable/Protected, flagged for review;
* a recorded or judged refinement (same fact, more specific) → replaces the older note
  (`Archived`); a recorded restatement is archived into the older note like a duplicate;
* an expired provisional note → `Archived` (never promoted after its TTL);
* everything else → `Active`, TTL cleared, decay clock started.

Batches are keyset-paged and each is one transaction holding the scope locks the write path
takes, so a note cannot be rewritten by its run while it is being judged.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from db.enums import NoteStatus, ProtectionTier
from db.queries.hardening import (
    HardenedCandidate,
    ProvisionalNote,
    active_candidates,
    hardening_queue,
    load_provisional,
)
from db.queries.manager import (
    NoteChange,
    NoteEvent,
    apply_note_changes,
    insert_note_events,
    lock_notes,
    lock_scopes,
)
from worker.corrections import Relation, classify
from worker.manager.deps import PhaseDeps, bump
from worker.manager.judge import CycleJudge, PairRelation

ACTOR = "hardening"
UNTOUCHABLE = (ProtectionTier.IMMUTABLE.value, ProtectionTier.PROTECTED.value)
_ACTIVE = NoteStatus.ACTIVE.value
_PROVISIONAL = NoteStatus.PROVISIONAL.value
_START = (datetime(1970, 1, 1, tzinfo=UTC), uuid.UUID(int=0))


@dataclass
class _Hardened:
    """A note hardened earlier in this batch: a candidate for the notes after it."""

    note: ProvisionalNote

    def as_candidate(self, other: ProvisionalNote) -> HardenedCandidate | None:
        n = self.note
        if n.content_hash == other.content_hash:
            kind, similarity = "exact", 1.0
        elif (n.embedding is not None and other.embedding is not None
              and n.embedding_model == other.embedding_model
              and n.embedding.shape == other.embedding.shape):
            a, b = np.asarray(n.embedding), np.asarray(other.embedding)
            kind = "near"
            similarity = float(a @ b / ((np.linalg.norm(a) * np.linalg.norm(b)) or 1.0))
        else:
            return None
        return HardenedCandidate(n.id, kind, similarity, n.note, n.content_hash,
                                 n.protection_tier, n.created_at, None, 0)


@dataclass
class HardeningPlan:
    """The decisions for one batch, made in order; applied by the caller in one statement."""

    judge: CycleJudge
    similarity_floor: float
    now: datetime
    changes: dict[uuid.UUID, NoteChange] = field(default_factory=dict)
    events: list[NoteEvent] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    _hardened: dict[uuid.UUID, list[_Hardened]] = field(default_factory=dict)
    _gone: set[uuid.UUID] = field(default_factory=set)  # left the injectable set this batch

    def _change(self, note_id: uuid.UUID, expected: str) -> NoteChange:
        if note_id not in self.changes:
            self.changes[note_id] = NoteChange(note_id, expected)
        return self.changes[note_id]

    def _status_of(self, candidate_id: uuid.UUID) -> str:
        change = self.changes.get(candidate_id)
        if change is not None and change.status is not None:
            return change.status
        return _ACTIVE

    def _expected(self, candidate_id: uuid.UUID) -> str:
        change = self.changes.get(candidate_id)
        return change.expected_status if change is not None else _ACTIVE

    def _retire(self, loser_id: uuid.UUID, winner_id: uuid.UUID, *, status: str, action: str,
                reason: str, tier: str) -> bool:
        """Take the loser out of the injectable set, unless its tier forbids it (then flag
        it). Returns whether it was retired."""
        from_status = self._status_of(loser_id)
        change = self._change(loser_id, self._expected(loser_id))
        if tier in UNTOUCHABLE:
            change.review_flag = f"{action} by {winner_id} ({reason}); {tier} notes are not " \
                                 "changed automatically"
            self.events.append(NoteEvent(loser_id, "flagged", reason, from_status, from_status,
                                         (winner_id,), {"wanted": action}))
            bump(self.counts, "flagged")
            return False
        change.status = status
        change.superseded_by = winner_id
        self._gone.add(loser_id)
        self.events.append(NoteEvent(loser_id, action, reason, from_status, status,
                                     (winner_id,)))
        bump(self.counts, action)
        return True

    def decide(self, note: ProvisionalNote, candidates: list[HardenedCandidate]) -> None:
        if note.expires_at is not None and note.expires_at <= self.now:
            change = self._change(note.id, _PROVISIONAL)
            change.status = NoteStatus.ARCHIVED.value
            self.events.append(NoteEvent(note.id, "expired", "TTL passed before hardening",
                                         _PROVISIONAL, change.status))
            bump(self.counts, "expired")
            return
        pool = [c for c in candidates if c.id not in self._gone]
        for earlier in self._hardened.get(note.scope_key, []):
            candidate = earlier.as_candidate(note)
            if candidate is not None and candidate.id not in self._gone:
                pool.append(candidate)

        exact = next((c for c in pool if c.content_hash == note.content_hash), None)
        if exact is not None:
            self._deduplicate(note, exact, "exact restatement after normalization", "exact")
            return
        # The note this one was recorded as correcting, restating or refining at write time:
        # an Active note found by the query, or a note hardened earlier in this very batch
        # (still Provisional in the database). Resolved by the same deterministic detector
        # that recorded it, whatever their similarity: never a model call.
        recorded = next((c for c in pool if c.kind == "corrects"
                         or (note.corrects_note_id is not None
                             and c.id == note.corrects_note_id)), None)
        if recorded is not None:
            relation = classify(recorded.note, note.note, recorded.similarity).relation
            if relation is Relation.PARAPHRASE:
                self._deduplicate(note, recorded, "recorded restatement at write", "detector")
                return
            if relation is Relation.REFINEMENT:
                self._retire(recorded.id, note.id, status=NoteStatus.ARCHIVED.value,
                             action="archived", reason="recorded refinement at write",
                             tier=recorded.protection_tier)
            elif self._contradiction(note, recorded, "recorded correction at write"):
                return
        near = sorted((c for c in pool if c.kind == "near" and c.similarity is not None
                       and c.similarity >= self.similarity_floor
                       and (recorded is None or c.id != recorded.id)),
                      key=lambda c: -(c.similarity or 0.0))
        seen: set[uuid.UUID] = set()
        for candidate in near:
            if candidate.id in seen or candidate.id in self._gone:
                continue
            seen.add(candidate.id)
            verdict = self.judge.compare(candidate.note, note.note, candidate.similarity)
            if verdict.relation is PairRelation.DUPLICATE:
                self._deduplicate(note, candidate, "judged duplicate", verdict.judge)
                return
            if verdict.relation is PairRelation.REFINEMENT:
                self._retire(candidate.id, note.id, status=NoteStatus.ARCHIVED.value,
                             action="archived", reason=f"refined by a newer note "
                             f"({verdict.judge})", tier=candidate.protection_tier)
            elif verdict.relation is PairRelation.CONTRADICTION and self._contradiction(
                    note, candidate, f"judged contradiction ({verdict.judge})"):
                return
        self._harden(note)

    def _deduplicate(self, note: ProvisionalNote, target: HardenedCandidate, reason: str,
                     judge: str) -> None:
        change = self._change(note.id, _PROVISIONAL)
        change.status = NoteStatus.ARCHIVED.value
        change.consolidated_into = target.id
        self._gone.add(note.id)
        self._change(target.id, self._expected(target.id)).reinforce += 1
        self.events.append(NoteEvent(note.id, "deduplicated", reason, _PROVISIONAL,
                                     change.status, (target.id,), {"judge": judge}))
        self.events.append(NoteEvent(target.id, "reinforced", "a duplicate was folded in",
                                     related=(note.id,)))
        bump(self.counts, "deduplicated")

    def _contradiction(self, note: ProvisionalNote, older: HardenedCandidate,
                       reason: str) -> bool:
        """Recency wins. Returns True when `note` itself lost (nothing more to decide)."""
        if older.created_at > note.created_at:  # the "older" one was written later
            self._retire(note.id, older.id, status=NoteStatus.REVOKED.value, action="revoked",
                         reason=reason + "; the other note is more recent",
                         tier=note.protection_tier)
            return note.id in self._gone
        self._retire(older.id, note.id, status=NoteStatus.REVOKED.value, action="revoked",
                     reason=reason, tier=older.protection_tier)
        return False

    def _harden(self, note: ProvisionalNote) -> None:
        change = self._change(note.id, _PROVISIONAL)
        change.status = _ACTIVE
        change.hardened = True
        self.events.append(NoteEvent(note.id, "hardened", "vetted: no duplicate, no conflict",
                                     _PROVISIONAL, _ACTIVE))
        self._hardened.setdefault(note.scope_key, []).append(_Hardened(note))
        bump(self.counts, "hardened")


def harden_provisional_notes(deps: PhaseDeps) -> dict[str, int]:
    settings = deps.settings
    counts: dict[str, int] = {}
    after = _START
    while True:
        with deps.db.transaction() as conn:
            queue = hardening_queue(conn, after=after, limit=settings.hardening_batch_size)
            if not queue:
                break
            lock_scopes(conn, [queued.scope_key for queued in queue])
            notes = load_provisional(conn, [queued.id for queued in queue])
            candidates = active_candidates(conn, [n.id for n in notes],
                                           settings.hardening_candidates)
            plan = HardeningPlan(deps.judge, settings.hardening_similarity, deps.now)
            for note in notes:
                plan.decide(note, candidates.get(note.id, []))
            lock_notes(conn, list(plan.changes))
            apply_note_changes(conn, list(plan.changes.values()), deps.now)
            insert_note_events(conn, plan.events, actor=ACTOR, cycle_id=deps.cycle_id,
                               now=deps.now)
        for key, value in plan.counts.items():
            bump(counts, key, value)
        bump(counts, "batches")
        after = (queue[-1].created_at, queue[-1].id)
    counts["new_notes"] = counts.get("hardened", 0)
    return counts
