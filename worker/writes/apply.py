"""Apply one memory write: parse, embed, then run the guard pipeline in the run's order.

The order, exactly-once and the erasure fence are `worker.writes.sequencing`'s; this module
is what a write does once its turn comes: the guards (`worker.writes.pipeline`) decide a
disposition, and the note change commits with the write's sequence record.

Plain Python: the Celery task, the benchmark and the tests all call `apply_memory_write`.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from db.enums import Disposition
from db.queries.runs import WriteState, written_after
from worker.agents import config_from_row
from worker.writes.admission import (
    ReasonCode,
    TraceEventName,
    principal_probes,
    resolve_policy,
)
from worker.writes.attempt import (
    Embedding,
    EmbeddingInFlight,
    Outcome,
    WriteAttempt,
    embeddable_text,
)
from worker.writes.operation import (
    Clock,
    Step,
    WaitForSequence,
    WriteDeps,
    WriteResult,
    arrived_late,
    utc_now,
)
from worker.writes.payloads import (
    NON_FINITE,
    Invalid,
    RunContext,
    WriteRequest,
    non_finite_number,
    parse_write,
    payload_digest,
)
from worker.writes.pipeline import run_guards
from worker.writes.sequencing import apply_in_order, parse_sequenced
from worker.writes.vectors import embed_text, prefetch_embeddings, start_embedding

__all__ = ["PERSISTED", "Clock", "WaitForSequence", "WriteDeps", "WriteResult",
           "apply_memory_write", "embed_text", "prefetch_embeddings", "start_embedding",
           "utc_now"]

log = logging.getLogger(__name__)

PERSISTED = frozenset({Disposition.WRITTEN, Disposition.SUPERSEDED_OWN, Disposition.DEDUPED})


def _event_for(outcome: Outcome) -> str:
    disposition = outcome.disposition
    if disposition in PERSISTED:
        return TraceEventName.WRITE
    if disposition == Disposition.BLOCKED:
        return TraceEventName.WRITE_BLOCK
    if disposition == Disposition.CANDIDATE:
        held_for_review = outcome.reason_code == ReasonCode.PROMOTION_REQUIRED
        return (TraceEventName.PROMOTION_REQUIRED if held_for_review
                else TraceEventName.WRITE_QUARANTINE)
    return TraceEventName.WRITE_SKIP



def apply_memory_write(
    deps: WriteDeps,
    run_payload: Any,
    write_payload: Any,
    seq_payload: Any,
    *,
    task_id: str | None = None,
    malformed: str | None = None,
    prev_payload: Any = None,
) -> WriteResult | WaitForSequence:
    """Apply one write. `malformed` marks a message the caller already knows is unusable: it
    is rejected, but still in its run's order. `prev_payload` is the seq of the write before
    it in its run (`prev_seq`; absent: seq - 1, as from a plain INCRBY counter)."""
    started = time.perf_counter()
    placed = parse_sequenced(deps, run_payload, seq_payload, prev_payload, malformed, started)
    if isinstance(placed, WriteResult):
        return placed
    run, seq, prev, malformed = placed.run, placed.seq, placed.prev, placed.malformed
    if malformed is None and non_finite_number(write_payload):
        malformed = NON_FINITE.format(where="write")
    request = Invalid(malformed) if malformed else parse_write(write_payload)
    digest = payload_digest(run_payload, write_payload)
    text = (embeddable_text(request, deps.settings.max_note_length)
            if isinstance(request, WriteRequest) else None)
    embedding = start_embedding(deps, text) if text is not None else Embedding(None, None)
    # The principals the note's id-like words may name: asked with the run's state.
    probes = (() if text is None else
              principal_probes(text, user_id=run.user_id, company_id=run.company_id))

    def guarded_write(conn: Connection, state: WriteState, now: datetime) -> Step:
        return _guarded_write(conn, deps, run, request, seq, state, embedding, now)

    return apply_in_order(deps, run, seq, prev, digest, guarded_write, task_id=task_id,
                          started=started, principal_probes=probes)


def _guarded_write(conn: Connection, deps: WriteDeps, run: RunContext,
                   request: WriteRequest | Invalid, seq: int, state: WriteState,
                   embedding: Embedding | EmbeddingInFlight, now: datetime) -> Step:
    """The guard pipeline's decision on one write, and the note change it made."""
    if isinstance(request, Invalid):
        return Step(Outcome(Disposition.REJECTED_INVALID, f"Not saved: {request.reason}."),
                    TraceEventName.WRITE_SKIP)
    agent = config_from_row(run.agent_id, state.agent_row)
    attempt = WriteAttempt(
        conn=conn,
        run=run,
        request=request,
        seq=seq,
        agent=agent,
        write_policy=deps.write_policy,
        persisted_count=state.persisted_count,
        embedding=embedding,
        now=now,
        memory_policy=resolve_policy(deps.settings, agent.memory_policy),
        admitted_count=state.admitted_count,
        embed=lambda text: embed_text(deps, text),
        newer_changes=(written_after(conn, run.run_id, seq) if arrived_late(state, seq) else {}),
        known_principals=state.principals,
        defer_note_change=True,
    )
    outcome = run_guards(attempt)
    detail = {**outcome.detail, **attempt.hook_detail}
    if attempt.notices:
        outcome = Outcome(outcome.disposition,
                          f"{outcome.reason} Note: {'; '.join(attempt.notices)}.",
                          outcome.note_id, outcome.persisted_increment,
                          outcome.reason_code, outcome.candidate_id)
    if attempt.embedding.error:
        detail["embedding_error"] = attempt.embedding.error
    return Step(
        outcome, _event_for(outcome),
        final_scope=attempt.scope.as_dict() if attempt.scope is not None else None,
        detail=detail,
        admission_fingerprint=attempt.fingerprint if attempt.admitted else None,
        admitted_increment=1 if attempt.admitted else 0,
        events=tuple(attempt.events),
        note_change=attempt.note_change,
    )
