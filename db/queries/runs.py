"""Runs, their write sequence, the write log and trace events: the bookkeeping of
ordering and exactly-once."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from db.queries.admission import known_principal_sql
from db.queries.agents import json_or_none
from db.queries.fences import FENCES_OF_SQL, LOCK_FENCE_SHARED_SQL, fence_rows
from db.queries.notes import NOTE_CHANGE_SQL, NoteChange

# --- runs and sequencing ------------------------------------------------------------------

# Serializes all writes of one run, across every worker process; released at commit. Then
# the erasure fence lock, shared (worker/erasure/fence.py): one statement, in that order.
_LOCK_RUN = text(
    "SELECT pg_advisory_xact_lock(hashtextextended('memory.run:' || :run_id, 0)), "
    f"{LOCK_FENCE_SHARED_SQL}"
)

# One round trip for everything the write path needs before its guards run, the fences of
# its run's subjects (:fence_hashes) and when its run began included, and the principals
# its note's id-like words name, if any (up to two lists, :principal_ids_N; admission's
# foreign-identity check, worker/writes/admission/screening.py). Must be a separate
# statement from the locks: in READ COMMITTED a statement's snapshot is taken when it starts,
# so reading in the locking statement could miss the previous holder's commit (or a fence).
_WRITE_STATE = text(f"""
SELECT r.applied_seq, r.persisted_count, r.admitted_count, r.context_digest,
       r.gap_wait_started_at, (r.run_id IS NOT NULL) AS run_exists,
       r.created_at AS run_created_at,
       fences.fence_hashes, fences.fence_erased_at, fences.fence_seq_floors,
       ({known_principal_sql("principal_ids_0")}) AS principal_0,
       ({known_principal_sql("principal_ids_1")}) AS principal_1,
       w.payload_digest AS log_digest, w.disposition AS log_disposition,
       w.note_id AS log_note_id, w.reason AS log_reason, w.final_scope AS log_final_scope,
       w.duration_ms AS log_duration_ms, w.reason_code AS log_reason_code,
       w.candidate_id AS log_candidate_id,
       a.agent_id AS agent_row_id, a.allow_memory_write, a.inject_notes,
       a.max_notes_to_inject, a.note_injection_strategy, a.inject_examples,
       a.max_examples_to_inject, a.example_injection_strategy, a.per_run_cap,
       a.reranker_config, a.scope_config, a.auto_archive_enabled, a.memory_policy
FROM ({FENCES_OF_SQL}) AS fences
LEFT JOIN runs r ON r.run_id = :run_id
LEFT JOIN write_log w ON w.run_id = :run_id AND w.seq = :seq
LEFT JOIN agents a ON a.agent_id = :agent_id
""")  # noqa: S608 - constant fragments only

_INSERT_RUN = text("""
INSERT INTO runs (run_id, agent_id, user_id, company_id, conversation_id,
    conversation_detail_id, primary_scope_entity, primary_scope_record_id, secondary_scopes,
    source, context_digest, created_at, updated_at)
VALUES (:run_id, :agent_id, :user_id, :company_id, :conversation_id, :conversation_detail_id,
    :primary_scope_entity, :primary_scope_record_id, CAST(:secondary_scopes AS jsonb), :source,
    :context_digest, :now, :now)
""")

_START_GAP_WAIT = text("""
UPDATE runs SET gap_wait_started_at = coalesce(gap_wait_started_at, :now)
WHERE run_id = :run_id
RETURNING gap_wait_started_at
""")

_SKIP_GAP = text("""
UPDATE runs SET applied_seq = :seq_before, gap_wait_started_at = NULL, updated_at = :now
WHERE run_id = :run_id AND applied_seq < :seq_before
""")


@dataclass(frozen=True)
class WriteState:
    run_exists: bool
    applied_seq: int
    persisted_count: int
    # Writes admission let through so far (max_writes_per_run).
    admitted_count: int
    context_digest: str | None
    gap_wait_started_at: datetime | None
    logged: dict[str, Any] | None
    agent_row: dict[str, Any] | None
    # The erasure fences of the run's subjects (subject_hash, erased_at, seq_floor) and when
    # the run began (its row's created_at; None before its first write).
    fences: tuple[dict[str, Any], ...] = ()
    run_created_at: datetime | None = None
    # The known principal's kind (or None) for each list of ids asked with the state.
    principals: dict[tuple[str, ...], str | None] = field(default_factory=dict)


def lock_run(conn: Connection, run_id: str) -> None:
    """The run's lock, then the erasure fence lock shared."""
    conn.execute(_LOCK_RUN, {"run_id": run_id})


PRINCIPAL_PROBES = 2


def load_write_state(conn: Connection, run_id: str, seq: int, agent_id: str,
                     fence_hashes: list[str],
                     principal_probes: tuple[tuple[str, ...], ...] = ()) -> WriteState:
    """Call after `lock_run`, in a statement of its own. `principal_probes`: at most
    `PRINCIPAL_PROBES` lists of ids whose known principal to look up (`known_principal`)."""
    assert len(principal_probes) <= PRINCIPAL_PROBES
    probes = list(principal_probes) + [None] * (PRINCIPAL_PROBES - len(principal_probes))
    row = conn.execute(_WRITE_STATE, {
        "run_id": run_id, "seq": seq, "agent_id": agent_id, "fence_hashes": fence_hashes,
        **{f"principal_ids_{i}": None if ids is None else list(ids)
           for i, ids in enumerate(probes)},
    }).mappings().one()
    logged = None
    if row["log_disposition"] is not None:
        logged = {
            "payload_digest": row["log_digest"],
            "disposition": row["log_disposition"],
            "note_id": row["log_note_id"],
            "reason": row["log_reason"],
            "final_scope": row["log_final_scope"],
            "duration_ms": row["log_duration_ms"],
            "reason_code": row["log_reason_code"],
            "candidate_id": row["log_candidate_id"],
        }
    agent_row = None
    if row["agent_row_id"] is not None:
        agent_row = {k: row[k] for k in row if k not in _NON_AGENT_STATE}
        agent_row.pop("agent_row_id")
    return WriteState(
        run_exists=bool(row["run_exists"]),
        applied_seq=int(row["applied_seq"] or 0),
        persisted_count=int(row["persisted_count"] or 0),
        admitted_count=int(row["admitted_count"] or 0),
        context_digest=row["context_digest"],
        gap_wait_started_at=row["gap_wait_started_at"],
        logged=logged,
        agent_row=agent_row,
        fences=tuple(fence_rows(row)),
        run_created_at=row["run_created_at"],
        principals={ids: row[f"principal_{i}"] for i, ids in enumerate(principal_probes)},
    )


_NON_AGENT_STATE = frozenset({
    "applied_seq", "persisted_count", "admitted_count", "context_digest", "gap_wait_started_at",
    "run_exists", "run_created_at", "fence_hashes", "fence_erased_at", "fence_seq_floors",
    "principal_0", "principal_1",
    "log_digest", "log_disposition", "log_note_id", "log_reason",
    "log_final_scope", "log_duration_ms", "log_reason_code", "log_candidate_id",
})


def insert_run(conn: Connection, run: Any, context_digest: str, now: datetime) -> None:
    conn.execute(_INSERT_RUN, {
        "run_id": run.run_id,
        "agent_id": run.agent_id,
        "user_id": run.user_id,
        "company_id": run.company_id,
        "conversation_id": run.conversation_id,
        "conversation_detail_id": run.conversation_detail_id,
        "primary_scope_entity": run.primary_scope_entity,
        "primary_scope_record_id": run.primary_scope_record_id,
        "secondary_scopes": json.dumps(run.secondary_scopes, sort_keys=True),
        "source": run.source,
        "context_digest": context_digest,
        "now": now,
    })


def start_gap_wait(conn: Connection, run_id: str, now: datetime) -> datetime:
    return conn.execute(_START_GAP_WAIT, {"run_id": run_id, "now": now}).scalar_one()


def skip_gap(conn: Connection, run_id: str, seq_before: int, now: datetime) -> None:
    conn.execute(_SKIP_GAP, {"run_id": run_id, "seq_before": seq_before, "now": now})


# What the run's writes after `seq` wrote, changed or restated (note ids) or held (memory
# candidate ids), each with the latest of those seqs: what a late operation of the run (one
# older than its applied sequence) must not override. Served by the write_log primary key.
_WRITTEN_AFTER = text("""
SELECT id, max(seq) AS seq FROM (
    SELECT note_id AS id, seq FROM write_log
    WHERE run_id = :run_id AND seq > :seq AND note_id IS NOT NULL
    UNION ALL
    SELECT candidate_id, seq FROM write_log
    WHERE run_id = :run_id AND seq > :seq AND candidate_id IS NOT NULL
) AS later
GROUP BY id
""")


def written_after(conn: Connection, run_id: str, seq: int) -> dict[uuid.UUID, int]:
    """Note and candidate ids later writes of the run touched, with the latest such seq."""
    rows = conn.execute(_WRITTEN_AFTER, {"run_id": run_id, "seq": seq})
    return {row.id: int(row.seq) for row in rows}


# --- recording outcomes ----------------------------------------------------------------------

# The idempotency record, the run's applied sequence and the trace step commit together, in
# the same transaction as the note change they describe.
_RECORD_TAIL = """
logged AS (
    INSERT INTO write_log (run_id, seq, payload_digest, disposition, note_id, reason,
        final_scope, duration_ms, task_id, applied_at, reason_code, candidate_id,
        admission_fingerprint)
    VALUES (:run_id, :seq, :payload_digest, :disposition, :note_id, :reason,
        CAST(:final_scope AS jsonb), :duration_ms, :task_id, :now, :reason_code, :candidate_id,
        :admission_fingerprint)
    ON CONFLICT (run_id, seq) DO UPDATE SET
        payload_digest = EXCLUDED.payload_digest, disposition = EXCLUDED.disposition,
        note_id = EXCLUDED.note_id, reason = EXCLUDED.reason,
        final_scope = EXCLUDED.final_scope, duration_ms = EXCLUDED.duration_ms,
        task_id = EXCLUDED.task_id, applied_at = EXCLUDED.applied_at,
        reason_code = EXCLUDED.reason_code, candidate_id = EXCLUDED.candidate_id,
        admission_fingerprint = EXCLUDED.admission_fingerprint
    RETURNING seq
), advanced AS (
    UPDATE runs SET applied_seq = greatest(applied_seq, :seq),
        persisted_count = persisted_count + :persisted_increment,
        admitted_count = admitted_count + :admitted_increment,
        gap_wait_started_at = CASE WHEN :seq >= applied_seq + 1 THEN NULL
                                   ELSE gap_wait_started_at END,
        updated_at = :now
    WHERE run_id = :run_id
    RETURNING applied_seq
)
INSERT INTO trace_events (event, run_id, seq, agent_id, disposition, note_id, reason, detail,
    duration_ms, created_at)
SELECT :event, :run_id, :seq, :agent_id, :disposition, :note_id, :reason,
    CAST(:detail AS jsonb), :duration_ms, :now
FROM logged, advanced
"""
_RECORD_WRITE = text("WITH " + _RECORD_TAIL)
# ... with the note change the write made, in the same statement (one round trip). The change
# is not read by the rest: every part of a statement with data-modifying CTEs runs once, on
# one snapshot, and write_log's reference to the new note is checked at its end.
_RECORD_WRITE_WITH = {
    kind: text(f"WITH changed AS ({sql.strip()}\nRETURNING id),{_RECORD_TAIL}")
    for kind, sql in NOTE_CHANGE_SQL.items()
}

_INSERT_TRACE = text("""
INSERT INTO trace_events (event, run_id, seq, agent_id, disposition, note_id, reason, detail,
    duration_ms, created_at)
VALUES (:event, :run_id, :seq, :agent_id, :disposition, :note_id, :reason,
    CAST(:detail AS jsonb), :duration_ms, :now)
""")


@dataclass(frozen=True)
class WriteRecord:
    run_id: str
    seq: int
    agent_id: str | None
    payload_digest: str
    disposition: str
    note_id: uuid.UUID | None
    reason: str
    final_scope: dict[str, Any] | None
    duration_ms: float
    task_id: str | None
    event: str
    detail: dict[str, Any]
    persisted_increment: int
    # Admission (SPEC 5): the blocked/candidate reason code, the candidate held, the write's
    # duplicate fingerprint and whether it counts toward max_writes_per_run.
    reason_code: str | None = None
    candidate_id: uuid.UUID | None = None
    admission_fingerprint: str | None = None
    admitted_increment: int = 0


def record_write(conn: Connection, record: WriteRecord, now: datetime,
                 change: NoteChange | None = None) -> None:
    """Record a write's outcome; `change`: the note change it made, not yet applied, made
    in the same statement."""
    params = {
        "run_id": record.run_id,
        "seq": record.seq,
        "agent_id": record.agent_id,
        "payload_digest": record.payload_digest,
        "disposition": record.disposition,
        "note_id": record.note_id,
        "reason": record.reason,
        "final_scope": json_or_none(record.final_scope),
        "duration_ms": record.duration_ms,
        "task_id": record.task_id,
        "event": record.event,
        "detail": json.dumps(record.detail),
        "persisted_increment": record.persisted_increment,
        "reason_code": record.reason_code,
        "candidate_id": record.candidate_id,
        "admission_fingerprint": record.admission_fingerprint,
        "admitted_increment": record.admitted_increment,
        "now": now,
    }
    if change is None:
        conn.execute(_RECORD_WRITE, params)
        return
    if change.now != now or set(change.params) & set(params) - {"now"}:
        raise ValueError("a note change recorded with its write shares only its time")
    conn.execute(_RECORD_WRITE_WITH[change.kind], {**change.params, **params})


def insert_trace(
    conn: Connection, *, event: str, now: datetime, run_id: str | None = None,
    seq: int | None = None, agent_id: str | None = None, disposition: str | None = None,
    note_id: uuid.UUID | None = None, reason: str | None = None,
    detail: dict[str, Any] | None = None, duration_ms: float | None = None,
) -> None:
    conn.execute(_INSERT_TRACE, {
        "event": event, "run_id": run_id, "seq": seq, "agent_id": agent_id,
        "disposition": disposition, "note_id": note_id, "reason": reason,
        "detail": json.dumps(detail or {}), "duration_ms": duration_ms, "now": now,
    })
