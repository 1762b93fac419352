"""A run's order and exactly-once, for every operation a run sends: writes and forget requests.

Ordering and exactly-once live here, in Postgres:

* a transaction-scoped advisory lock per run serializes the run's operations across processes;
* `write_log (run_id, seq)` is the idempotency record — a redelivered message finds its row
  and gets the recorded result back, without touching anything;
* `runs.applied_seq` orders them: an operation applies only after the one before it in its
  run (`prev_seq`, n-1 when absent); until then it returns `WaitForSequence` (the Celery task
  retries it) until the gap timeout, after which the gap is declared, logged and skipped;
* the erasure fence (worker/erasure/fence.py) is checked first, under the same lock (its
  lock is taken with the run's, its fences read with the run's state);
* the change itself (a `Step`, from the operation), the log row, the applied sequence and the
  trace step commit together (a write's note change is made in the statement that records it).

What a step does is the caller's: `worker.writes.apply` runs the guard pipeline,
`worker.erasure.fact` forgets notes of the run's user.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection
from sqlalchemy import exc as sa_exc

from db.enums import Disposition
from db.queries.runs import (
    WriteRecord,
    WriteState,
    insert_run,
    insert_trace,
    load_write_state,
    lock_run,
    record_write,
    skip_gap,
    start_gap_wait,
)
from worker.erasure.fence import ERASED_REASON, write_fence, write_fence_hashes
from worker.ops import metrics
from worker.writes.admission import TraceEvent, TraceEventName, log_trace
from worker.writes.attempt import Outcome
from worker.writes.operation import (
    Operation,
    Step,
    WaitForSequence,
    WriteDeps,
    WriteResult,
)
from worker.writes.payloads import (
    NON_FINITE,
    Invalid,
    RunContext,
    non_finite_number,
    parse_prev_seq,
    parse_run,
    parse_seq,
)

log = logging.getLogger(__name__)

TRANSIENT_DB_ERRORS: tuple[type[BaseException], ...] = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.TimeoutError,
)

ERROR_REASON = (
    "Not saved because of an infrastructure error ({error}); nothing was counted and the "
    "write can be retried."
)
CONTEXT_CHANGED_REASON = (
    "Not saved: this write's run context (agent, user, company, tenant scope or source) "
    "differs from the run's first write."
)


def apply_in_order(deps: WriteDeps, run: RunContext, seq: int, prev: int, digest: str,
                   operation: Operation, *, task_id: str | None, started: float,
                   principal_probes: tuple[tuple[str, ...], ...] = (),
                   ) -> WriteResult | WaitForSequence:
    """Run `operation` in its run's order, exactly once; transient database errors are
    retried, anything else is answered `error` (recorded so the run is not held up).
    `principal_probes`: principal lookups the operation will make, asked with the run's
    state (`WriteState.principals`)."""
    attempts = max(1, deps.settings.write_max_retries)
    for attempt_no in range(1, attempts + 1):
        try:
            traced: list[dict[str, Any]] = []
            with deps.db.transaction() as conn:
                result = _apply_sequenced(conn, deps, run, seq, prev, digest, operation,
                                          task_id, started, traced, principal_probes)
            for fields in traced:  # logged once committed, so a rolled-back try logs nothing
                log_trace(**fields)
            return result
        except TRANSIENT_DB_ERRORS as exc:
            if attempt_no == attempts:
                log.error("memory write %s/%s failed after %d attempts", run.run_id, seq,
                          attempts, exc_info=True)
                return _record_error(deps, run, seq, digest, task_id, started, exc)
            delay = min(0.1 * 2 ** (attempt_no - 1), 5.0) * (0.5 + random.random())
            log.warning("transient database error on %s/%s (%s); retrying in %.2fs",
                        run.run_id, seq, type(exc).__name__, delay)
            time.sleep(delay)
        except Exception as exc:  # a persistence failure or a bug: answer `error`, never crash
            log.error("memory write %s/%s failed", run.run_id, seq, exc_info=True)
            return _record_error(deps, run, seq, digest, task_id, started, exc)
    raise AssertionError("unreachable")


def _apply_sequenced(
    conn: Connection,
    deps: WriteDeps,
    run: RunContext,
    seq: int,
    prev: int,
    digest: str,
    operation: Operation,
    task_id: str | None,
    started: float,
    traced: list[dict[str, Any]],
    principal_probes: tuple[tuple[str, ...], ...],
) -> WriteResult | WaitForSequence:
    now = deps.clock()
    lock_run(conn, run.run_id)
    state = load_write_state(conn, run.run_id, seq, run.agent_id, _fence_hashes(run),
                             principal_probes)
    # Before the replay check: a replay of an erased run would hand back its recorded scope.
    if _erased(run, seq, state, now):
        return _refuse_erased(conn, seq, now, started)
    logged = state.logged
    if logged is not None and logged["disposition"] != Disposition.ERROR:
        if logged["payload_digest"] == digest:
            return _replay(run.run_id, seq, logged)
        return _sequence_collision(conn, run, seq, now, started)

    detail: dict[str, Any] = {}
    context_digest = run.identity_digest()
    if not state.run_exists:
        insert_run(conn, run, context_digest, now)
    expected = state.applied_seq + 1
    if prev > state.applied_seq:  # the operation before it in its run is not applied yet
        waited = now - start_gap_wait(conn, run.run_id, now)
        if waited < timedelta(seconds=deps.settings.seq_gap_timeout_s) \
                or _missing_write_is_recorded(deps, run.run_id, state.applied_seq, prev, waited):
            return WaitForSequence(run.run_id, seq, expected)
        skip_gap(conn, run.run_id, prev, now)
        detail["gap_skipped"] = [expected, prev]
        metrics.series().sequence_gaps.inc()
        log.warning("run %s: sequence gap %d..%d declared after %.1fs; applying %d",
                    run.run_id, expected, prev, waited.total_seconds(), seq)
    elif seq < expected:
        detail["applied_out_of_order"] = True  # late arrival after a declared gap, or a retry

    if state.run_exists and state.context_digest != context_digest:
        step = Step(Outcome(Disposition.REJECTED_INVALID, CONTEXT_CHANGED_REASON),
                    TraceEventName.WRITE_SKIP)
    else:
        step = operation(conn, state, now)
    detail.update(step.detail)
    outcome = step.outcome

    duration_ms = (time.perf_counter() - started) * 1000
    record_write(conn, WriteRecord(
        run_id=run.run_id, seq=seq, agent_id=run.agent_id, payload_digest=digest,
        disposition=outcome.disposition, note_id=outcome.note_id, reason=outcome.reason,
        final_scope=step.final_scope, duration_ms=duration_ms, task_id=task_id,
        event=step.event, detail=detail,
        persisted_increment=outcome.persisted_increment,
        reason_code=outcome.reason_code, candidate_id=outcome.candidate_id,
        admission_fingerprint=step.admission_fingerprint,
        admitted_increment=step.admitted_increment,
    ), now, step.note_change)
    traced.append({"event": step.event, "run_id": run.run_id, "seq": seq,
                   "agent_id": run.agent_id, "disposition": outcome.disposition,
                   "note_id": outcome.note_id, "candidate_id": outcome.candidate_id,
                   "detail": detail, "duration_ms": round(duration_ms, 3)})
    for extra in step.events:
        _record_event(conn, extra, run, seq, now, traced)
    return WriteResult(
        disposition=outcome.disposition,
        reason=outcome.reason,
        run_id=run.run_id,
        seq=seq,
        note_id=str(outcome.note_id) if outcome.note_id else None,
        final_scope=step.final_scope,
        duration_ms=duration_ms,
        reason_code=outcome.reason_code,
        candidate_id=str(outcome.candidate_id) if outcome.candidate_id else None,
        forgotten=step.forgotten,
        forgotten_candidates=step.forgotten_candidates,
        out_of_order=bool(detail.get("applied_out_of_order")),
    )


def _missing_write_is_recorded(deps: WriteDeps, run_id: str, applied_seq: int, prev: int,
                               waited: timedelta) -> bool:
    """Whether the writes this one waits for are recorded by their client (accepted, to be
    delivered again if the broker lost them): then the gap is not declared, so they apply
    in order. Bounded: once every redelivery a record can get has had its time, the
    redelivery pass is evidently not running and the gap is declared after all."""
    if deps.records is None:
        return False
    s = deps.settings
    patience = s.seq_gap_timeout_s + (s.redelivery_limit + 1) * (
        s.redelivery_after_s + s.flush_period_s)
    if waited >= timedelta(seconds=patience):
        log.error("run %s: writes %d..%d are recorded but were not delivered again within "
                  "%.0fs; is beat (the redelivery pass) running?", run_id, applied_seq + 1,
                  prev, patience)
        return False
    return deps.records.awaiting(run_id, applied_seq, prev)


def _record_event(conn: Connection, event: TraceEvent, run: RunContext, seq: int,
                  now: datetime, traced: list[dict[str, Any]]) -> None:
    """A trace step besides the operation's own (a promotion decision), same transaction."""
    insert_trace(conn, event=event.event, now=now, run_id=run.run_id, seq=seq,
                 agent_id=run.agent_id, disposition=event.disposition,
                 note_id=event.note_id, reason=event.reason, detail=event.detail)
    traced.append({"event": event.event, "run_id": run.run_id, "seq": seq,
                   "agent_id": run.agent_id, "disposition": event.disposition,
                   "note_id": event.note_id, "detail": event.detail})


def _fence_hashes(run: RunContext) -> list[str]:
    return write_fence_hashes(agent_id=run.agent_id, user_id=run.user_id,
                              company_id=run.company_id, conversation_id=run.conversation_id)


def _erased(run: RunContext, seq: int, state: WriteState, now: datetime) -> bool:
    """The erasure fence (worker/erasure/fence.py), from what the state read found."""
    return write_fence(state.fences, run_began=state.run_created_at, seq=seq,
                       now=now) is not None


def _refuse_erased(conn: Connection, seq: int, now: datetime, started: float) -> WriteResult:
    """An operation of a run begun before its subject was erased (worker/erasure/fence.py).

    Nothing of it is kept: no runs row (it would hold the erased ids again and re-register
    them as principals), no write_log row, and neither the trace step, the log line nor the
    result (kept in Redis) names the run."""
    duration_ms = (time.perf_counter() - started) * 1000
    insert_trace(conn, event="memory_write_skip", now=now, run_id=None, seq=None,
                 disposition=Disposition.REJECTED_ERASED, reason=ERASED_REASON,
                 duration_ms=duration_ms, detail={"erased": True})
    log.info("memory write refused: its run began before an erasure of its subject")
    return WriteResult(Disposition.REJECTED_ERASED, ERASED_REASON, None, seq,
                       duration_ms=duration_ms)


def _replay(run_id: str, seq: int, logged: dict[str, Any]) -> WriteResult:
    return WriteResult(
        disposition=logged["disposition"],
        reason=logged["reason"],
        run_id=run_id,
        seq=seq,
        note_id=str(logged["note_id"]) if logged["note_id"] else None,
        final_scope=logged["final_scope"],
        duration_ms=float(logged["duration_ms"]),
        replayed=True,
        reason_code=logged.get("reason_code"),
        candidate_id=str(logged["candidate_id"]) if logged.get("candidate_id") else None,
    )


def _sequence_collision(
    conn: Connection, run: RunContext, seq: int, now: datetime, started: float
) -> WriteResult:
    reason = (
        f"Not saved: sequence number {seq} of this run was already used by a different "
        "write. Enqueue it again to get a fresh sequence number."
    )
    duration_ms = (time.perf_counter() - started) * 1000
    insert_trace(
        conn, event="memory_write_skip", now=now, run_id=run.run_id, seq=seq,
        agent_id=run.agent_id, disposition=Disposition.ERROR, reason=reason,
        detail={"sequence_collision": True}, duration_ms=duration_ms,
    )
    log.error("run %s: sequence %d reused by a different payload", run.run_id, seq)
    return WriteResult(Disposition.ERROR, reason, run.run_id, seq, duration_ms=duration_ms)


def _record_error(
    deps: WriteDeps, run: RunContext, seq: int, digest: str, task_id: str | None,
    started: float, exc: BaseException,
) -> WriteResult:
    """Record an `error` outcome so later operations of the run are not held up behind it.

    An `error` row is not final: a retry of the same (run, seq) is applied normally."""
    reason = ERROR_REASON.format(error=type(exc).__name__)
    duration_ms = (time.perf_counter() - started) * 1000
    try:
        with deps.db.transaction() as conn:
            now = deps.clock()
            lock_run(conn, run.run_id)
            state = load_write_state(conn, run.run_id, seq, run.agent_id, _fence_hashes(run))
            if _erased(run, seq, state, now):  # recording would re-create the erased run
                return WriteResult(Disposition.REJECTED_ERASED, ERASED_REASON, None, seq,
                                   duration_ms=duration_ms)
            if not state.run_exists:
                insert_run(conn, run, run.identity_digest(), now)
            unlogged = state.logged is None or state.logged["disposition"] == Disposition.ERROR
            # Recording would advance the run's sequence; never do that past a missing write.
            if unlogged and seq <= state.applied_seq + 1:
                record_write(conn, WriteRecord(
                    run_id=run.run_id, seq=seq, agent_id=run.agent_id, payload_digest=digest,
                    disposition=Disposition.ERROR, note_id=None, reason=reason,
                    final_scope=None, duration_ms=duration_ms, task_id=task_id,
                    event="memory_write_skip", detail={"error": type(exc).__name__},
                    persisted_increment=0,
                ), now)
    except Exception:
        log.warning("could not record the error of %s/%s", run.run_id, seq, exc_info=True)
    return WriteResult(Disposition.ERROR, reason, run.run_id, seq, duration_ms=duration_ms)


@dataclass(frozen=True)
class Sequenced:
    """Where an operation goes in its run: `malformed` still says why it will be refused."""

    run: RunContext
    seq: int
    prev: int
    malformed: str | None


def parse_sequenced(deps: WriteDeps, run_payload: Any, seq_payload: Any, prev_payload: Any,
                    malformed: str | None, started: float) -> Sequenced | WriteResult:
    """The run, seq and prev_seq of an operation; without a usable run or seq it cannot be
    ordered and is answered at once (with why the message was refused, when it was). A bad
    prev_seq is refused in the run's order."""
    run = parse_run(run_payload)
    if not isinstance(run, Invalid) and non_finite_number(run_payload):
        run = Invalid(NON_FINITE.format(where="run"))
    if isinstance(run, Invalid):
        return unsequenced_rejection(deps, run_payload, seq_payload, malformed or run.reason,
                                     started)
    seq = parse_seq(seq_payload)
    if isinstance(seq, Invalid):
        return unsequenced_rejection(deps, run_payload, seq_payload, malformed or seq.reason,
                                     started)
    parsed_prev = parse_prev_seq(prev_payload, seq)
    if isinstance(parsed_prev, Invalid):
        malformed = malformed or parsed_prev.reason
    prev = parsed_prev if isinstance(parsed_prev, int) else seq - 1
    return Sequenced(run, seq, prev, malformed)


def unsequenced_rejection(deps: WriteDeps, run_payload: Any, seq_payload: Any, reason: str,
                          started: float) -> WriteResult:
    """An operation without a usable run id or seq cannot be ordered; answer and trace it."""
    run_id = run_payload.get("run_id") if isinstance(run_payload, dict) else None
    run_id = run_id if isinstance(run_id, str) and 0 < len(run_id) <= 200 else None
    usable_seq = isinstance(seq_payload, int) and not isinstance(seq_payload, bool)
    seq = seq_payload if usable_seq else None
    result = WriteResult(
        disposition=Disposition.REJECTED_INVALID,
        reason=f"Not saved: {reason}.",
        run_id=run_id,
        seq=seq,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
    try:
        with deps.db.transaction() as conn:
            insert_trace(
                conn, event="memory_write_skip", now=deps.clock(), run_id=run_id,
                seq=seq if seq is not None and 0 < seq < 2**62 else None,
                disposition=result.disposition, reason=result.reason,
                duration_ms=result.duration_ms, detail={"unsequenced": True},
            )
    except Exception:
        log.warning("could not trace a rejected write", exc_info=True)
    log.info("memory write rejected before sequencing: %s", reason)
    return result
