"""The guard pipeline of SPEC 4: one small, named step per guard, in order.

Each guard looks at a `WriteAttempt` and either returns an `Outcome` (the write stops there)
or None (the next guard runs). Guards that need the database use the attempt's connection,
which is inside the write's transaction with the run (and later the scope) locked, so what
they read cannot change under them. Nothing here knows about Celery.

The types a guard works on and the pure checks are in worker/writes/attempt.py; the write
admission guards (`admit`, `hold_internal_memory`) in worker/writes/admission/guards.py. The order
of both pipelines is defined here.
"""

from __future__ import annotations

from collections.abc import Sequence

from db.enums import AuthorType, Disposition, NoteStatus, ProtectionTier
from db.queries.notes import (
    NewNote,
    NoteChange,
    apply_note_change,
    lock_scope,
    new_note_change,
    reinforce_change,
    scope_neighbours,
    supersede_own_change,
)
from worker.corrections import classify, supersedes
from worker.normalize import content_hash
from worker.writes.admission.guards import admit, hold_internal_memory, quarantine_doubtful
from worker.writes.attempt import (
    Guard,
    Outcome,
    ReplacedOwn,
    WriteAttempt,
    check_text,
    check_type,
    clamped_scope,
)

# --- the guards, in SPEC 4 order ----------------------------------------------------------

def capability_gate(attempt: WriteAttempt) -> Outcome | None:
    if attempt.agent.allow_memory_write:
        return None
    return Outcome(
        Disposition.SKIPPED_DISABLED,
        "Nothing was saved: memory writes are disabled for this agent. Do not tell the user "
        "that this was remembered.",
    )


def validate_type(attempt: WriteAttempt) -> Outcome | None:
    checked = check_type(attempt.request.type)
    if isinstance(checked, Outcome):
        return checked
    attempt.note_type = checked
    return None


def validate_text(attempt: WriteAttempt) -> Outcome | None:
    checked = check_text(attempt.request.note, attempt.write_policy.max_note_length)
    if isinstance(checked, Outcome):
        return checked
    attempt.text = checked
    attempt.content_hash = content_hash(checked)
    return None


def clamp_scope(attempt: WriteAttempt) -> Outcome | None:
    """Agent + user + company + tenant dimensions; a hint may narrow, never broaden."""
    scope, notice = clamped_scope(attempt.run, attempt.request.scope_hint)
    if notice:
        attempt.notices.append(notice)
    attempt.scope = scope
    return None


def look_around_scope(attempt: WriteAttempt) -> Outcome | None:
    """Lock the exact scope and fetch what the remaining guards compare against."""
    assert attempt.scope is not None
    # The vector before the lock: the scope is not held while it is still being computed.
    vector, model = attempt.embedding.vector, attempt.embedding.model
    lock_scope(attempt.conn, attempt.scope)
    attempt.neighbours = scope_neighbours(
        attempt.conn,
        run_id=attempt.run.run_id,
        scope=attempt.scope,
        content_hash=attempt.content_hash,
        vector=vector,
        embedding_model=model,
        shortlist=attempt.write_policy.near_dup_shortlist,
        related_floor=attempt.write_policy.correction_related_similarity,
    )
    return None


def within_run_idempotency(attempt: WriteAttempt) -> Outcome | None:
    assert attempt.neighbours is not None
    if attempt.neighbours.within_run is None:
        return None
    return Outcome(
        Disposition.SKIPPED_DUPLICATE,
        "Already saved earlier in this run; nothing new was stored.",
        note_id=attempt.neighbours.within_run,
    )


STALE_REASON = (
    "Not saved: a newer write of this run, seq {seq}, already changed this; an older write "
    "arriving late never overrides it."
)


def refuse_stale_override(attempt: WriteAttempt) -> Outcome | None:
    """A late write (older than what its run already applied: it came after its gap was
    declared, or was retried after an `error`) never overrides what a later write of its run
    wrote, changed or restated. Last write wins means last in the run's order, not last to
    arrive: left to `recognize_correction`, "currency is EUR" (seq 2, late) would replace the
    run's "currency is CHF" (seq 3), or be recorded as correcting it and have hardening
    revoke it. The same detector decides, so exactly the notes the next guard would pick
    are protected; a late write about anything else goes on as usual."""
    if not attempt.newer_changes:
        return None
    assert attempt.neighbours is not None
    for neighbour in (*attempt.neighbours.own, *attempt.neighbours.related):
        newer_seq = attempt.newer_changes.get(neighbour.note_id)
        if newer_seq is None:
            continue
        if supersedes(classify(neighbour.note, attempt.text, neighbour.similarity)):
            return Outcome(Disposition.SKIPPED_STALE, STALE_REASON.format(seq=newer_seq),
                           note_id=neighbour.note_id)
    return None


# What a cross-run write is recorded as, and what hardening will do about it.
_RECORDED_AS = {
    "correction": " It looks like a correction of an existing note; the Memory Manager will "
                  "retire the older one.",
    "refinement": " It looks like a more specific version of an existing note; the Memory "
                  "Manager will retire the older one.",
    "paraphrase": " It restates an existing note; the Memory Manager will fold it into that "
                  "note.",
}


def recognize_correction(attempt: WriteAttempt) -> Outcome | None:
    """Within a run, last write wins: a write the correction detector confidently calls a
    correction, paraphrase or refinement of one of the run's own notes replaces it, at any
    similarity ("I love blue charts!" → "actually, red charts!"). `distinct` never does, and
    neither does high similarity alone (a less specific restatement would erase detail).
    Across runs nothing is replaced (ADD-only-strict), but the note this write most likely
    corrects, restates or refines is recorded for the Memory Manager (and the read path shows
    only the newer of the two until then)."""
    assert attempt.neighbours is not None
    for own in attempt.neighbours.own:
        verdict = classify(own.note, attempt.text, own.similarity)
        if supersedes(verdict):
            attempt.replaces_own = ReplacedOwn(own.note_id, verdict.relation.value)
            return None
    for other in attempt.neighbours.related:
        verdict = classify(other.note, attempt.text, other.similarity)
        if supersedes(verdict):  # a correction, restatement or refinement: hardening resolves it
            attempt.corrects_note_id = other.note_id
            attempt.corrects_relation = verdict.relation.value
            return None
    return None


def per_run_cap(attempt: WriteAttempt) -> Outcome | None:
    cap = attempt.agent.per_run_cap
    limit = attempt.write_policy.per_run_cap if cap is None else cap
    if attempt.persisted_count < limit:
        return None
    if attempt.replaces_own is not None:
        return None  # a correction of the run's own note is applied even at the cap
    return Outcome(
        Disposition.SKIPPED_CAP,
        f"Not saved: this run already saved {limit} new notes, its limit. The Memory Manager "
        "can still learn this from the conversation.",
    )


def change_note(attempt: WriteAttempt, change: NoteChange) -> None:
    """The note change a guard decided on: made now, or, when the attempt defers it, handed
    to the write's record (one statement with it: worker/writes/sequencing.py)."""
    if attempt.defer_note_change:
        attempt.note_change = change
    else:
        apply_note_change(attempt.conn, change)


def near_duplicate(attempt: WriteAttempt) -> Outcome | None:
    assert attempt.neighbours is not None
    own = attempt.replaces_own
    if own is not None:
        change_note(attempt, supersede_own_change(
            own.note_id, note=attempt.text, type=attempt.note_type,
            content_hash=attempt.content_hash, embedding=attempt.embedding.vector,
            embedding_model=attempt.embedding.model, now=attempt.now,
        ))
        return Outcome(
            Disposition.SUPERSEDED_OWN,
            f"Updated the note saved earlier in this run ({own.relation}); the newest "
            "statement wins.",
            note_id=own.note_id,
        )
    exact = attempt.neighbours.exact
    if exact is not None:
        change_note(attempt, reinforce_change(exact.note_id, attempt.now))
        return Outcome(
            Disposition.DEDUPED,
            "Already remembered: an existing note says exactly this, and it was reinforced.",
            note_id=exact.note_id,
        )
    return None  # anything else, however similar, is a new note (ADD-only-strict)


def persist_provisional(attempt: WriteAttempt) -> Outcome:
    assert attempt.scope is not None
    change = new_note_change(
        NewNote(
            scope=attempt.scope,
            type=attempt.note_type,
            note=attempt.text,
            content_hash=attempt.content_hash,
            status=NoteStatus.PROVISIONAL,
            author_type=AuthorType.AGENT,
            protection_tier=ProtectionTier.STANDARD,
            expires_at=attempt.now + attempt.write_policy.provisional_ttl,
            embedding=attempt.embedding.vector,
            embedding_model=attempt.embedding.model,
            source_conversation_id=attempt.run.conversation_id,
            source_conversation_detail_id=attempt.run.conversation_detail_id,
            source_agent_run_id=attempt.run.run_id,
            corrects_note_id=attempt.corrects_note_id,
        ),
        attempt.now,
    )
    change_note(attempt, change)
    corrects = ("" if attempt.corrects_note_id is None
                else _RECORDED_AS.get(attempt.corrects_relation or "", _RECORDED_AS["correction"]))
    return Outcome(
        Disposition.WRITTEN,
        "Saved as a provisional note: it is available to future runs now and will be "
        "reviewed by the Memory Manager." + corrects,
        note_id=change.note_id,
        persisted_increment=1,
    )


PIPELINE: Sequence[Guard] = (
    capability_gate,
    validate_type,
    validate_text,
    admit,
    clamp_scope,
    quarantine_doubtful,
    hold_internal_memory,
    look_around_scope,
    within_run_idempotency,
    refuse_stale_override,
    recognize_correction,
    per_run_cap,
    near_duplicate,
)


# Promoting a held candidate later (worker/writes/candidates.py): the normal pipeline from the scope
# on — dedupe, supersede-own, scope clamp, TTL — without admission (the promotion is the
# approval) and without the per-run cap (an operator's decision, not the run's amplification).
PROMOTION_PIPELINE: Sequence[Guard] = (
    capability_gate,
    validate_type,
    validate_text,
    clamp_scope,
    look_around_scope,
    within_run_idempotency,
    recognize_correction,
    near_duplicate,
)


def run_guards(attempt: WriteAttempt, pipeline: Sequence[Guard] = PIPELINE) -> Outcome:
    for guard in pipeline:
        outcome = guard(attempt)
        if outcome is not None:
            return outcome
    return persist_provisional(attempt)
