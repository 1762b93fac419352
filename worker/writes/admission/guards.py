"""Write admission (SPEC 5) as guards of the SPEC 4 pipeline: `admit` and
`hold_internal_memory`, and the small named checks `admit` runs.

Cheap checks first, then the run's limits, then the hook. The policy and its decisions are
plain functions in worker/writes/admission/; these guards apply them to a `WriteAttempt`, using its
connection (inside the write's transaction, the run locked) for the run's state. The order of
the pipeline is defined in worker/writes/pipeline.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import uuid4

from db.enums import Disposition
from db.queries.admission import earlier_duplicate_write, known_principal
from db.queries.candidates import NewCandidate, find_pending_candidate, insert_candidate
from worker.normalize import content_hash
from worker.writes import admission
from worker.writes.admission import (
    Block,
    MemoryCandidate,
    ReasonCode,
    TraceEvent,
    TraceEventName,
    sanitize_reason,
)
from worker.writes.admission.effects import EffectFinding, screen_effects
from worker.writes.admission.reasons import EFFECT_CLAUSES
from worker.writes.attempt import Guard, Outcome, WriteAttempt, check_text, clamped_scope


def _blocked(found: Block) -> Outcome:
    return Outcome(Disposition.BLOCKED, found.reason, reason_code=found.detail["reason_code"],
                   detail=found.detail)


def _principal(attempt: WriteAttempt, ids: list[str]) -> str | None:
    """The kind of the known principal among `ids`: answered with the run's state when the
    write path asked it there, else looked up."""
    key = tuple(ids)
    if key in attempt.known_principals:
        return attempt.known_principals[key]
    return known_principal(attempt.conn, ids)


def _screen(attempt: WriteAttempt, text: str) -> Block | None:
    run = attempt.run
    return admission.screening_block(attempt.memory_policy, text, user_id=run.user_id,
                                 company_id=run.company_id,
                                 principals=lambda ids: _principal(attempt, ids))


def screen_text(attempt: WriteAttempt) -> Outcome | None:
    """Length, injection patterns, another principal's id, repetition: no hook."""
    found = _screen(attempt, attempt.text)
    return _blocked(found) if found else None


def effect_code(finding: EffectFinding) -> ReasonCode:
    return ReasonCode(f"effect-{finding.effect.value}")


def _judge_effects(attempt: WriteAttempt, text: str) -> Block | None:
    """Block what the note would clearly make an agent do; remember a doubtful effect for
    `quarantine_doubtful`, which holds the write once its scope is known."""
    if not attempt.memory_policy.screen_effects:
        return None
    finding = screen_effects(text)
    if finding is None:
        return None
    if finding.action == "block":
        return admission.block(effect_code(finding), **finding.detail())
    attempt.quarantine = finding
    return None


def judge_effects(attempt: WriteAttempt) -> Outcome | None:
    """Admission by effect (worker/writes/admission/effects.py): six languages, decoded
    payloads too."""
    found = _judge_effects(attempt, attempt.text)
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
    checked = check_text(rewritten, attempt.write_policy.max_note_length)
    if isinstance(checked, Outcome):
        return _blocked(admission.block(ReasonCode.HOOK_INVALID_REWRITE, rewritten_by=after))
    attempt.quarantine = None  # judged anew: the rewrite is what would be stored
    found = _screen(attempt, checked) or _judge_effects(attempt, checked)
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


ADMISSION_CHECKS: Sequence[Guard] = (screen_text, judge_effects, duplicate_write,
                                     run_write_limit, admission_hook)


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


QUARANTINE_REASON = (
    "Not saved to memory yet: {clause}. It is held for review and is not available to future "
    "runs unless an operator promotes it. Do not tell the user that this was remembered."
)


def _hold(attempt: WriteAttempt, held_reason: str, candidate_id: Any) -> Any:
    run = attempt.run
    assert attempt.scope is not None
    return insert_candidate(attempt.conn, NewCandidate(
        run_id=run.run_id, seq=attempt.seq, scope=attempt.scope, source=run.source,
        type=attempt.note_type, note=attempt.text, content_hash=attempt.content_hash,
        conversation_id=run.conversation_id, conversation_detail_id=run.conversation_detail_id,
        held_reason=held_reason,
    ), candidate_id, attempt.now)


def quarantine_doubtful(attempt: WriteAttempt) -> Outcome | None:
    """A write whose effect admission found doubtful becomes a candidate: never injected
    until an operator promotes it, and nothing benign is lost. No hook is asked: the
    promotion hook approves internal memory, it does not overrule the screening."""
    finding = attempt.quarantine
    if finding is None:
        return None
    code = effect_code(finding)
    assert attempt.scope is not None
    held = find_pending_candidate(attempt.conn, attempt.run.run_id, attempt.scope,
                                  attempt.content_hash) or _hold(attempt, code.value, uuid4())
    detail = {"reason_code": code.value, "candidate_id": str(held), **finding.detail()}
    return Outcome(Disposition.CANDIDATE, QUARANTINE_REASON.format(clause=EFFECT_CLAUSES[code]),
                   reason_code=code.value, candidate_id=held, detail=detail)


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
    if attempt.quarantine is not None:  # the reviewer's rewrite reads as doubtful
        return quarantine_doubtful(attempt)
    held = _hold(attempt, ReasonCode.PROMOTION_REQUIRED.value, candidate_id)
    detail["candidate_id"] = str(held)
    if verdict.hooked:  # a reviewer was asked and kept it (or failed): it stays non-injectable
        attempt.events.append(TraceEvent(TraceEventName.PROMOTION_BLOCKED, Disposition.CANDIDATE,
                                          reason=reason, detail=dict(detail)))
    return Outcome(Disposition.CANDIDATE, CANDIDATE_REASON.format(source=run.source),
                   reason_code=ReasonCode.PROMOTION_REQUIRED.value, candidate_id=held,
                   detail={"reason_code": ReasonCode.PROMOTION_REQUIRED.value, **detail})
