"""The guard pipeline of SPEC 4: one small, named step per guard, in order.

Each guard looks at a `WriteAttempt` and either returns an `Outcome` (the write stops there)
or None (the next guard runs). Guards that need the database use the attempt's connection,
which is inside the write's transaction with the run (and later the scope) locked, so what
they read cannot change under them. Nothing here knows about Celery.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import numpy as np
from sqlalchemy import Connection

from db import queries
from db.enums import (
    IN_FLIGHT_NOTE_TYPES,
    AuthorType,
    Disposition,
    NoteStatus,
    ProtectionTier,
)
from db.queries.admission import earlier_duplicate_write
from db.queries.candidates import NewCandidate, find_pending_candidate, insert_candidate
from db.scope import SCOPE_HINTS, NoteScope
from worker import admission
from worker.admission import (
    Block,
    MemoryCandidate,
    MemoryPolicy,
    ReasonCode,
    TraceEvent,
    TraceEventName,
    sanitize_reason,
)
from worker.agents import AgentConfig
from worker.corrections import Relation, classify, supersedes
from worker.normalize import content_hash
from worker.payloads import RunContext, WriteRequest, unencodable_reason


@dataclass(frozen=True)
class WritePolicy:
    per_run_cap: int
    max_note_length: int
    near_dup_shortlist: int
    # Other notes of the scope at or above this similarity are checked for being corrected.
    correction_related_similarity: float
    provisional_ttl: timedelta


@dataclass(frozen=True)
class Embedding:
    vector: np.ndarray | None
    model: str | None
    error: str | None = None


@dataclass(frozen=True)
class Outcome:
    disposition: Disposition
    reason: str
    note_id: UUID | None = None
    persisted_increment: int = 0
    # Admission (SPEC 5): why a write was blocked or held, the candidate it became, and
    # non-text detail for its trace step.
    reason_code: str | None = None
    candidate_id: UUID | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class WriteAttempt:
    conn: Connection
    run: RunContext
    request: WriteRequest
    seq: int
    agent: AgentConfig
    policy: WritePolicy
    persisted_count: int
    embedding: Embedding
    now: datetime
    memory_policy: MemoryPolicy = field(default_factory=MemoryPolicy)
    admitted_count: int = 0
    # Embeds a text the admission hooks rewrote (the prefetched vector is of the original).
    embed: Callable[[str], Embedding] | None = None
    # Filled in by the guards as they pass the write along.
    text: str = ""
    note_type: str = ""
    scope: NoteScope | None = None
    content_hash: str = ""
    neighbours: queries.ScopeNeighbours | None = None
    # Set by recognize_correction: the run's own note this write replaces, and the other
    # note of the scope it likely corrects (recorded; the Memory Manager resolves it).
    replaces_own: ReplacedOwn | None = None
    corrects_note_id: UUID | None = None
    notices: list[str] = field(default_factory=list)
    # Set by admission: the write got through it (counts toward max_writes_per_run), with
    # this duplicate fingerprint; trace steps besides the write's own.
    admitted: bool = False
    fingerprint: str | None = None
    events: list[TraceEvent] = field(default_factory=list)
    hook_detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReplacedOwn:
    note_id: UUID
    relation: str


Guard = Callable[[WriteAttempt], Outcome | None]


# --- pure checks, shared with the pre-transaction embedding decision ---------------------

def check_type(value: Any) -> str | Outcome:
    if isinstance(value, str) and value in IN_FLIGHT_NOTE_TYPES:
        return value
    shown = repr(value)[:40]
    return Outcome(
        Disposition.REJECTED_TYPE,
        f"Not saved: type {shown} is not allowed for in-flight memory; use "
        f"{' or '.join(IN_FLIGHT_NOTE_TYPES)}.",
    )


def check_text(value: Any, max_length: int) -> str | Outcome:
    if not isinstance(value, str):
        return Outcome(Disposition.REJECTED_INVALID,
                       f"Not saved: note must be text, not {type(value).__name__}.")
    problem = unencodable_reason(value)
    if problem:
        return Outcome(Disposition.REJECTED_INVALID, f"Not saved: the note {problem}.")
    stripped = value.strip()
    if not stripped:
        return Outcome(Disposition.REJECTED_INVALID, "Not saved: the note is empty.")
    if len(stripped) > max_length:
        return Outcome(
            Disposition.REJECTED_INVALID,
            f"Not saved: the note is {len(stripped)} characters long; the limit is "
            f"{max_length}. Record one short, atomic fact per write.",
        )
    return stripped


def embeddable_text(request: WriteRequest, max_length: int) -> str | None:
    """The text the write will store if it passes validation, else None (nothing to embed)."""
    if isinstance(check_type(request.type), Outcome):
        return None
    checked = check_text(request.note, max_length)
    return None if isinstance(checked, Outcome) else checked


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
    checked = check_text(attempt.request.note, attempt.policy.max_note_length)
    if isinstance(checked, Outcome):
        return checked
    attempt.text = checked
    attempt.content_hash = content_hash(checked)
    return None


# --- admission (SPEC 5): cheap checks first, then the run's limits, then the hook -----------

def _blocked(found: Block) -> Outcome:
    return Outcome(Disposition.BLOCKED, found.reason, reason_code=found.detail["reason_code"],
                   detail=found.detail)


def screen_text(attempt: WriteAttempt) -> Outcome | None:
    """Length, injection patterns, another user's id, repetition: no database, no hook."""
    run = attempt.run
    found = admission.screen_text(attempt.memory_policy, attempt.text, user_id=run.user_id,
                                  company_id=run.company_id, agent_id=run.agent_id)
    return _blocked(found) if found else None


def duplicate_write(attempt: WriteAttempt) -> Outcome | None:
    """The seed's scope-aware fingerprint, against the run's earlier admitted writes (in
    Postgres, under the run lock: it holds across worker processes)."""
    scope, _ = clamped_scope(attempt.run, attempt.request.scope_hint)
    attempt.fingerprint = admission.write_fingerprint(
        scope=scope.as_dict(), source=attempt.run.source,
        scope_label="user" if scope.user_id is not None else "agent", text=attempt.text)
    if not attempt.memory_policy.reject_duplicate_writes:
        return None
    earlier = earlier_duplicate_write(attempt.conn, attempt.run.run_id, attempt.fingerprint)
    if earlier is None:
        return None
    return _blocked(admission.block(ReasonCode.DUPLICATE_WRITE, earlier_seq=earlier))


def run_write_limit(attempt: WriteAttempt) -> Outcome | None:
    limit = attempt.memory_policy.max_writes_per_run
    if limit is None or attempt.admitted_count < limit:
        return None
    return _blocked(admission.block(
        ReasonCode.WRITE_LIMIT,
        f"this run already made {attempt.admitted_count} memory writes, its limit of {limit}.",
        max_writes_per_run=limit))


def hook_context(attempt: WriteAttempt) -> dict[str, Any]:
    """The seed's hook context (and our tenant fields); never the text itself."""
    run = attempt.run
    agent_level = attempt.request.scope_hint == "agent"
    return {
        "source": run.source, "scope": "agent" if agent_level else "user",
        "user_id": run.user_id, "memory_user_id": None if agent_level else run.user_id,
        "agent_name": run.agent_id, "agent_id": run.agent_id, "company_id": run.company_id,
        "trace_id": run.run_id, "run_id": run.run_id, "seq": attempt.seq,
        "type": attempt.note_type,
    }


def _take_rewrite(attempt: WriteAttempt, rewritten: str, after: str) -> Outcome | None:
    """A hook's rewrite replaces the text: it must still be storable, passes the cheap checks
    again, and is embedded anew."""
    checked = check_text(rewritten, attempt.policy.max_note_length)
    if isinstance(checked, Outcome):
        return _blocked(admission.block(ReasonCode.HOOK_INVALID_REWRITE, rewritten_by=after))
    run = attempt.run
    found = admission.screen_text(attempt.memory_policy, checked, user_id=run.user_id,
                                  company_id=run.company_id, agent_id=run.agent_id)
    if found:
        return _blocked(Block(found.code, found.reason, {**found.detail, "rewritten_by": after}))
    if checked != attempt.text:
        attempt.text = checked
        attempt.content_hash = content_hash(checked)
        if attempt.embed is not None:
            attempt.embedding = attempt.embed(checked)
    return None


def admission_hook(attempt: WriteAttempt) -> Outcome | None:
    """`memory_write_admission`, bounded by the hook timeout; fail-closed when required."""
    verdict = admission.run_write_hook(attempt.memory_policy, attempt.text, hook_context(attempt))
    if verdict.hooked:
        attempt.hook_detail["write_hook"] = verdict.kind
    if verdict.error:
        attempt.hook_detail["hook_error"] = verdict.error  # the type name only
    if verdict.kind == "block":
        assert verdict.code is not None
        reason = sanitize_reason(verdict.reason, attempt.text)
        extra = {"hook_error": verdict.error} if verdict.error else {}
        if verdict.code is ReasonCode.HOOK_ERROR:
            reason = (f"the memory admission check failed ({verdict.error}) and this agent's "
                      "memory requires it to approve every write.")
        elif reason is not None:
            reason = f"blocked by the memory admission policy: {reason}"
        return _blocked(admission.block(verdict.code, reason, **extra))
    if verdict.kind == "rewrite":
        assert verdict.text is not None
        attempt.hook_detail["rewritten"] = True
        return _take_rewrite(attempt, verdict.text, "write_hook")
    return None


ADMISSION_CHECKS: Sequence[Guard] = (screen_text, duplicate_write, run_write_limit,
                                     admission_hook)


def admit(attempt: WriteAttempt) -> Outcome | None:
    """Write admission (SPEC 5): `blocked` with a reason code, or on to the next guard. The
    cheap checks run first, then the run's duplicate fingerprint and write limit, then the
    hook (the seed's order: a classifier sees only what basic filtering let through)."""
    for check in ADMISSION_CHECKS:
        outcome = check(attempt)
        if outcome is not None:
            return outcome
    attempt.admitted = True
    return None


def clamped_scope(run: RunContext, hint: Any) -> tuple[NoteScope, str | None]:
    """Agent + user + company + tenant dimensions; a hint may narrow, never broaden.
    Returns the scope and a notice when the hint was ignored."""
    scope = run.full_scope
    if hint == "agent":
        scope = NoteScope(
            agent_id=scope.agent_id,
            user_id=None,
            company_id=scope.company_id,
            primary_scope_entity=scope.primary_scope_entity,
            primary_scope_record_id=scope.primary_scope_record_id,
            secondary_scopes=dict(scope.secondary_scopes),
        )
    elif hint is not None and hint not in SCOPE_HINTS:
        return scope, (f"scope hint {repr(hint)[:30]} ignored (only 'user' or 'agent' may "
                       "narrow the scope)")
    return scope, None


def clamp_scope(attempt: WriteAttempt) -> Outcome | None:
    """Agent + user + company + tenant dimensions; a hint may narrow, never broaden."""
    scope, notice = clamped_scope(attempt.run, attempt.request.scope_hint)
    if notice:
        attempt.notices.append(notice)
    attempt.scope = scope
    return None


CANDIDATE_REASON = (
    "Not saved to memory yet: notes from internal sources ({source}) are held as candidates "
    "for review and are not available to future runs unless promoted. Do not tell the user "
    "that this was remembered."
)


def hold_internal_memory(attempt: WriteAttempt) -> Outcome | None:
    """Promotion of internal memory (SPEC 5): a write whose run source is internal becomes a
    non-injectable candidate unless the promotion hook approves or rewrites it."""
    policy = attempt.memory_policy
    run = attempt.run
    if not policy.needs_promotion(run.source):
        return None
    assert attempt.scope is not None
    pending = find_pending_candidate(attempt.conn, run.run_id, attempt.scope,
                                     attempt.content_hash)
    if pending is not None:  # the run already holds this note: no second hook call
        return Outcome(Disposition.CANDIDATE, CANDIDATE_REASON.format(source=run.source),
                       reason_code=ReasonCode.PROMOTION_REQUIRED.value, candidate_id=pending,
                       detail={"reason_code": ReasonCode.PROMOTION_REQUIRED.value,
                               "already_held": True})
    candidate_id = uuid4()
    verdict = admission.run_promotion_hook(policy, MemoryCandidate(
        candidate_id=str(candidate_id), source=run.source,
        scope="user" if attempt.scope.user_id is not None else "agent",
        memory_user_id=attempt.scope.user_id, original_user_id=run.user_id,
        agent_name=run.agent_id, trace_id=run.run_id, run_id=run.run_id, data=attempt.text,
    ), hook_context(attempt))
    detail: dict[str, Any] = {"candidate_id": str(candidate_id), "source": run.source}
    if verdict.error:
        detail["hook_error"] = verdict.error
    reason = sanitize_reason(verdict.reason, attempt.text)
    if verdict.action in ("approve", "rewrite"):
        if verdict.action == "rewrite":
            assert verdict.text is not None
            stopped = _take_rewrite(attempt, verdict.text, "promotion_hook")
            if stopped is not None:
                attempt.events.append(TraceEvent(
                    TraceEventName.PROMOTION_BLOCKED, Disposition.BLOCKED, reason=stopped.reason,
                    detail={**detail, **stopped.detail}))
                return stopped
        event = (TraceEventName.PROMOTION_APPROVED if verdict.action == "approve"
                 else TraceEventName.PROMOTION_REWRITTEN)
        attempt.events.append(TraceEvent(event, reason=reason, detail=detail))
        return None
    if verdict.action == "reject":
        found = admission.block(ReasonCode.PROMOTION_REJECTED, **detail)
        attempt.events.append(TraceEvent(TraceEventName.PROMOTION_REJECTED, Disposition.BLOCKED,
                                          reason=reason, detail=found.detail))
        return _blocked(found)
    held = insert_candidate(attempt.conn, NewCandidate(
        run_id=run.run_id, seq=attempt.seq, scope=attempt.scope, source=run.source,
        type=attempt.note_type, note=attempt.text, content_hash=attempt.content_hash,
        conversation_id=run.conversation_id, conversation_detail_id=run.conversation_detail_id,
    ), candidate_id, attempt.now)
    detail["candidate_id"] = str(held)
    if verdict.hooked:  # a reviewer was asked and kept it (or failed): it stays non-injectable
        attempt.events.append(TraceEvent(TraceEventName.PROMOTION_BLOCKED, Disposition.CANDIDATE,
                                          reason=reason, detail=dict(detail)))
    return Outcome(Disposition.CANDIDATE, CANDIDATE_REASON.format(source=run.source),
                   reason_code=ReasonCode.PROMOTION_REQUIRED.value, candidate_id=held,
                   detail={"reason_code": ReasonCode.PROMOTION_REQUIRED.value, **detail})


def look_around_scope(attempt: WriteAttempt) -> Outcome | None:
    """Lock the exact scope and fetch what the remaining guards compare against."""
    assert attempt.scope is not None
    queries.lock_scope(attempt.conn, attempt.scope)
    attempt.neighbours = queries.scope_neighbours(
        attempt.conn,
        run_id=attempt.run.run_id,
        scope=attempt.scope,
        content_hash=attempt.content_hash,
        vector=attempt.embedding.vector,
        embedding_model=attempt.embedding.model,
        shortlist=attempt.policy.near_dup_shortlist,
        related_floor=attempt.policy.correction_related_similarity,
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


def recognize_correction(attempt: WriteAttempt) -> Outcome | None:
    """Within a run, last write wins: a write the correction detector confidently calls a
    correction, paraphrase or refinement of one of the run's own notes replaces it, at any
    similarity ("I love blue charts!" → "actually, red charts!"). `distinct` never does, and
    neither does high similarity alone (a less specific restatement would erase detail).
    Across runs nothing is replaced (ADD-only-strict), but the note this write most likely
    corrects is recorded for the Memory Manager."""
    assert attempt.neighbours is not None
    for own in attempt.neighbours.own:
        verdict = classify(own.note, attempt.text, own.similarity)
        if supersedes(verdict):
            attempt.replaces_own = ReplacedOwn(own.note_id, verdict.relation.value)
            return None
    for other in attempt.neighbours.related:
        verdict = classify(other.note, attempt.text, other.similarity)
        if verdict.relation is Relation.CORRECTION and supersedes(verdict):
            attempt.corrects_note_id = other.note_id
            return None
    return None


def per_run_cap(attempt: WriteAttempt) -> Outcome | None:
    cap = attempt.agent.per_run_cap
    limit = attempt.policy.per_run_cap if cap is None else cap
    if attempt.persisted_count < limit:
        return None
    if attempt.replaces_own is not None:
        return None  # a correction of the run's own note is applied even at the cap
    return Outcome(
        Disposition.SKIPPED_CAP,
        f"Not saved: this run already saved {limit} new notes, its limit. The Memory Manager "
        "can still learn this from the conversation.",
    )


def near_duplicate(attempt: WriteAttempt) -> Outcome | None:
    assert attempt.neighbours is not None
    own = attempt.replaces_own
    if own is not None:
        queries.supersede_own_note(
            attempt.conn, own.note_id, note=attempt.text, type=attempt.note_type,
            content_hash=attempt.content_hash, embedding=attempt.embedding.vector,
            embedding_model=attempt.embedding.model, now=attempt.now,
        )
        return Outcome(
            Disposition.SUPERSEDED_OWN,
            f"Updated the note saved earlier in this run ({own.relation}); the newest "
            "statement wins.",
            note_id=own.note_id,
        )
    exact = attempt.neighbours.exact
    if exact is not None:
        queries.reinforce_note(attempt.conn, exact.note_id, attempt.now)
        return Outcome(
            Disposition.DEDUPED,
            "Already remembered: an existing note says exactly this, and it was reinforced.",
            note_id=exact.note_id,
        )
    return None  # anything else, however similar, is a new note (ADD-only-strict)


def persist_provisional(attempt: WriteAttempt) -> Outcome:
    assert attempt.scope is not None
    note_id = queries.insert_note(
        attempt.conn,
        queries.NewNote(
            scope=attempt.scope,
            type=attempt.note_type,
            note=attempt.text,
            content_hash=attempt.content_hash,
            status=NoteStatus.PROVISIONAL,
            author_type=AuthorType.AGENT,
            protection_tier=ProtectionTier.STANDARD,
            expires_at=attempt.now + attempt.policy.provisional_ttl,
            embedding=attempt.embedding.vector,
            embedding_model=attempt.embedding.model,
            source_conversation_id=attempt.run.conversation_id,
            source_conversation_detail_id=attempt.run.conversation_detail_id,
            source_agent_run_id=attempt.run.run_id,
            corrects_note_id=attempt.corrects_note_id,
        ),
        attempt.now,
    )
    corrects = (" It looks like a correction of an existing note; the Memory Manager will "
                "retire the older one." if attempt.corrects_note_id else "")
    return Outcome(
        Disposition.WRITTEN,
        "Saved as a provisional note: it is available to future runs now and will be "
        "reviewed by the Memory Manager." + corrects,
        note_id=note_id,
        persisted_increment=1,
    )


PIPELINE: Sequence[Guard] = (
    capability_gate,
    validate_type,
    validate_text,
    admit,
    clamp_scope,
    hold_internal_memory,
    look_around_scope,
    within_run_idempotency,
    recognize_correction,
    per_run_cap,
    near_duplicate,
)


# Promoting a held candidate later (worker/candidates.py): the normal pipeline from the scope
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

