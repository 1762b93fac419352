"""Every SQL statement the domain runs, by name. Nothing else in the project writes SQL.

Statements take bound parameters only (never interpolated values); the few literal fragments
spliced in (`INJECTABLE_SQL`, `SCOPE_KEY_SQL`) are our own constants. Vectors are bound as
numpy arrays and travel in pgvector's binary format.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection, text

from db.enums import INJECTABLE_SQL, AuthorType

if TYPE_CHECKING:
    from worker.scope import NoteScope

# The scope key of the parameters bound by `NoteScope.sql_params()`; compare it with
# `notes.scope_key`. The function itself is defined by the schema (db/migrations).
SCOPE_KEY_SQL = (
    "memory_scope_key(:scope_agent_id, :scope_user_id, :scope_company_id, :scope_entity, "
    ":scope_record_id, CAST(:scope_secondary AS jsonb))"
)

# --- agents -----------------------------------------------------------------------------

_SELECT_AGENT = text("SELECT * FROM agents WHERE agent_id = :agent_id")

_UPSERT_AGENT = text("""
INSERT INTO agents (agent_id, allow_memory_write, inject_notes, max_notes_to_inject,
    note_injection_strategy, inject_examples, max_examples_to_inject,
    example_injection_strategy, per_run_cap, reranker_config, scope_config,
    auto_archive_enabled)
VALUES (:agent_id, :allow_memory_write, :inject_notes, :max_notes_to_inject,
    :note_injection_strategy, :inject_examples, :max_examples_to_inject,
    :example_injection_strategy, :per_run_cap, CAST(:reranker_config AS jsonb),
    CAST(:scope_config AS jsonb), :auto_archive_enabled)
ON CONFLICT (agent_id) DO UPDATE SET
    allow_memory_write = EXCLUDED.allow_memory_write,
    inject_notes = EXCLUDED.inject_notes,
    max_notes_to_inject = EXCLUDED.max_notes_to_inject,
    note_injection_strategy = EXCLUDED.note_injection_strategy,
    inject_examples = EXCLUDED.inject_examples,
    max_examples_to_inject = EXCLUDED.max_examples_to_inject,
    example_injection_strategy = EXCLUDED.example_injection_strategy,
    per_run_cap = EXCLUDED.per_run_cap,
    reranker_config = EXCLUDED.reranker_config,
    scope_config = EXCLUDED.scope_config,
    auto_archive_enabled = EXCLUDED.auto_archive_enabled,
    updated_at = now()
""")


def select_agent(conn: Connection, agent_id: str) -> dict[str, Any] | None:
    row = conn.execute(_SELECT_AGENT, {"agent_id": agent_id}).mappings().first()
    return dict(row) if row else None


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def upsert_agent(conn: Connection, config: dict[str, Any]) -> None:
    params = dict(config)
    params["reranker_config"] = _json_or_none(params.get("reranker_config"))
    params["scope_config"] = _json_or_none(params.get("scope_config"))
    conn.execute(_UPSERT_AGENT, params)


# --- runs and sequencing ------------------------------------------------------------------

# Serializes all writes of one run, across every worker process; released at commit.
_LOCK_RUN = text("SELECT pg_advisory_xact_lock(hashtextextended('memory.run:' || :run_id, 0))")

# One round trip for everything the write path needs before its guards run. Must be a
# separate statement from the lock: in READ COMMITTED a statement's snapshot is taken when
# it starts, so reading in the locking statement could miss the previous holder's commit.
_WRITE_STATE = text("""
SELECT r.applied_seq, r.persisted_count, r.context_digest, r.gap_wait_started_at,
       (r.run_id IS NOT NULL) AS run_exists,
       w.payload_digest AS log_digest, w.disposition AS log_disposition,
       w.note_id AS log_note_id, w.reason AS log_reason, w.final_scope AS log_final_scope,
       w.duration_ms AS log_duration_ms,
       a.agent_id AS agent_row_id, a.allow_memory_write, a.inject_notes,
       a.max_notes_to_inject, a.note_injection_strategy, a.inject_examples,
       a.max_examples_to_inject, a.example_injection_strategy, a.per_run_cap,
       a.reranker_config, a.scope_config, a.auto_archive_enabled
FROM (SELECT 1) AS one
LEFT JOIN runs r ON r.run_id = :run_id
LEFT JOIN write_log w ON w.run_id = :run_id AND w.seq = :seq
LEFT JOIN agents a ON a.agent_id = :agent_id
""")

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
    context_digest: str | None
    gap_wait_started_at: datetime | None
    logged: dict[str, Any] | None
    agent_row: dict[str, Any] | None


def lock_run(conn: Connection, run_id: str) -> None:
    conn.execute(_LOCK_RUN, {"run_id": run_id})


def load_write_state(conn: Connection, run_id: str, seq: int, agent_id: str) -> WriteState:
    row = conn.execute(
        _WRITE_STATE, {"run_id": run_id, "seq": seq, "agent_id": agent_id}
    ).mappings().one()
    logged = None
    if row["log_disposition"] is not None:
        logged = {
            "payload_digest": row["log_digest"],
            "disposition": row["log_disposition"],
            "note_id": row["log_note_id"],
            "reason": row["log_reason"],
            "final_scope": row["log_final_scope"],
            "duration_ms": row["log_duration_ms"],
        }
    agent_row = None
    if row["agent_row_id"] is not None:
        agent_row = {k: row[k] for k in row if k not in _NON_AGENT_STATE}
        agent_row.pop("agent_row_id")
    return WriteState(
        run_exists=bool(row["run_exists"]),
        applied_seq=int(row["applied_seq"] or 0),
        persisted_count=int(row["persisted_count"] or 0),
        context_digest=row["context_digest"],
        gap_wait_started_at=row["gap_wait_started_at"],
        logged=logged,
        agent_row=agent_row,
    )


_NON_AGENT_STATE = frozenset({
    "applied_seq", "persisted_count", "context_digest", "gap_wait_started_at", "run_exists",
    "log_digest", "log_disposition", "log_note_id", "log_reason", "log_final_scope",
    "log_duration_ms",
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


# --- scope neighbourhood -------------------------------------------------------------------

# Serializes writes that could land in the same exact scope: two runs writing the same fact
# at once must not both see "no such note" and both insert it.
_LOCK_SCOPE = text(
    f"SELECT pg_advisory_xact_lock(hashtextextended('memory.scope:' || {SCOPE_KEY_SQL}::text, 0))"
)

_OWN = f"(n.source_agent_run_id = :run_id AND n.author_type = '{AuthorType.AGENT.value}')"

# What the guards need to know about the write's exact scope, in one round trip:
#  - within_run: a note this run already wrote or reinforced that currently says the same;
#  - exact: any injectable note in the scope whose normalized text is the same;
#  - near: the vector shortlist over injectable notes in the scope (same embedding model).
# The shortlist is computed over a MATERIALIZED scope subset: an approximate vector index
# must never be scanned first and filtered after (that returns too few rows).
# Only our own constant fragments are spliced into this statement.
_SCOPE_NEIGHBOURS = text(f"""
WITH within_run AS (
    SELECT n.id, 'within_run' AS kind, 1.0::float8 AS similarity, true AS own
    FROM write_log w JOIN notes n ON n.id = w.note_id
    WHERE w.run_id = :run_id AND n.scope_key = {SCOPE_KEY_SQL}
      AND n.content_hash = :content_hash AND n.{INJECTABLE_SQL}
    LIMIT 1
), exact AS (
    SELECT n.id, 'exact' AS kind, 1.0::float8 AS similarity, coalesce({_OWN}, false) AS own
    FROM notes n
    WHERE n.scope_key = {SCOPE_KEY_SQL} AND n.content_hash = :content_hash
      AND n.{INJECTABLE_SQL}
    ORDER BY n.created_at
    LIMIT 1
), scoped AS MATERIALIZED (
    SELECT n.id, n.embedding, coalesce({_OWN}, false) AS own
    FROM notes n
    WHERE :has_vector AND n.scope_key = {SCOPE_KEY_SQL} AND n.{INJECTABLE_SQL}
      AND n.embedding_model = :embedding_model AND vector_dims(n.embedding) = :dims
), near AS (
    SELECT id, 'near' AS kind, 1 - (embedding <=> CAST(:vector AS vector)) AS similarity, own
    FROM scoped
    ORDER BY embedding <=> CAST(:vector AS vector)
    LIMIT :shortlist
)
SELECT id, kind, similarity, own FROM within_run
UNION ALL SELECT id, kind, similarity, own FROM exact
UNION ALL SELECT id, kind, similarity, own FROM near WHERE similarity >= :threshold
""")  # noqa: S608


@dataclass(frozen=True)
class Neighbour:
    note_id: uuid.UUID
    similarity: float
    own: bool


@dataclass(frozen=True)
class ScopeNeighbours:
    within_run: uuid.UUID | None
    exact: Neighbour | None
    near: list[Neighbour]  # most similar first, at or above the threshold


def lock_scope(conn: Connection, scope: NoteScope) -> None:
    conn.execute(_LOCK_SCOPE, scope.sql_params())


def scope_neighbours(
    conn: Connection,
    *,
    run_id: str,
    scope: NoteScope,
    content_hash: str,
    vector: np.ndarray | None,
    embedding_model: str | None,
    shortlist: int,
    threshold: float,
) -> ScopeNeighbours:
    params = {
        **scope.sql_params(),
        "run_id": run_id,
        "content_hash": content_hash,
        "has_vector": vector is not None,
        "vector": vector,
        "dims": 0 if vector is None else int(vector.shape[0]),
        "embedding_model": embedding_model,
        "shortlist": shortlist,
        "threshold": threshold,
    }
    within_run = None
    exact = None
    near: list[Neighbour] = []
    for row in conn.execute(_SCOPE_NEIGHBOURS, params):
        if row.kind == "within_run":
            within_run = row.id
        elif row.kind == "exact":
            exact = Neighbour(row.id, 1.0, row.own)
        else:
            near.append(Neighbour(row.id, float(row.similarity), row.own))
    return ScopeNeighbours(within_run=within_run, exact=exact, near=near)


# --- note changes ---------------------------------------------------------------------------

_INSERT_NOTE = text("""
INSERT INTO notes (id, agent_id, user_id, company_id, primary_scope_entity,
    primary_scope_record_id, secondary_scopes, type, note, content_hash, status, author_type,
    protection_tier, access_count, last_accessed_at, expires_at, embedding, embedding_model,
    source_conversation_id, source_conversation_detail_id, source_agent_run_id,
    valid_from, created_at, updated_at)
VALUES (:id, :scope_agent_id, :scope_user_id, :scope_company_id, :scope_entity,
    :scope_record_id, CAST(:scope_secondary AS jsonb), :type, :note, :content_hash, :status,
    :author_type, :protection_tier, 1, :now, :expires_at, :embedding, :embedding_model,
    :source_conversation_id, :source_conversation_detail_id, :source_agent_run_id,
    :now, :now, :now)
""")

_SUPERSEDE_OWN = text("""
UPDATE notes SET note = :note, type = :type, content_hash = :content_hash,
    embedding = :embedding, embedding_model = :embedding_model, updated_at = :now
WHERE id = :id
""")

_REINFORCE = text("""
UPDATE notes SET access_count = access_count + 1, last_accessed_at = :now, updated_at = :now
WHERE id = :id
""")


@dataclass(frozen=True)
class NewNote:
    scope: NoteScope
    type: str
    note: str
    content_hash: str
    status: str
    author_type: str
    protection_tier: str
    expires_at: datetime | None
    embedding: np.ndarray | None
    embedding_model: str | None
    source_conversation_id: str | None
    source_conversation_detail_id: str | None
    source_agent_run_id: str | None


def insert_note(conn: Connection, note: NewNote, now: datetime) -> uuid.UUID:
    note_id = uuid.uuid4()
    conn.execute(_INSERT_NOTE, {
        **note.scope.sql_params(),
        "id": note_id,
        "type": note.type,
        "note": note.note,
        "content_hash": note.content_hash,
        "status": note.status,
        "author_type": note.author_type,
        "protection_tier": note.protection_tier,
        "expires_at": note.expires_at,
        "embedding": note.embedding,
        "embedding_model": note.embedding_model if note.embedding is not None else None,
        "source_conversation_id": note.source_conversation_id,
        "source_conversation_detail_id": note.source_conversation_detail_id,
        "source_agent_run_id": note.source_agent_run_id,
        "now": now,
    })
    return note_id


def supersede_own_note(
    conn: Connection, note_id: uuid.UUID, *, note: str, type: str, content_hash: str,
    embedding: np.ndarray | None, embedding_model: str | None, now: datetime,
) -> None:
    conn.execute(_SUPERSEDE_OWN, {
        "id": note_id, "note": note, "type": type, "content_hash": content_hash,
        "embedding": embedding,
        "embedding_model": embedding_model if embedding is not None else None,
        "now": now,
    })


def reinforce_note(conn: Connection, note_id: uuid.UUID, now: datetime) -> None:
    conn.execute(_REINFORCE, {"id": note_id, "now": now})


# --- recording outcomes ----------------------------------------------------------------------

# The idempotency record, the run's applied sequence and the trace step commit together, in
# the same transaction as the note change they describe.
_RECORD_WRITE = text("""
WITH logged AS (
    INSERT INTO write_log (run_id, seq, payload_digest, disposition, note_id, reason,
        final_scope, duration_ms, task_id, applied_at)
    VALUES (:run_id, :seq, :payload_digest, :disposition, :note_id, :reason,
        CAST(:final_scope AS jsonb), :duration_ms, :task_id, :now)
    ON CONFLICT (run_id, seq) DO UPDATE SET
        payload_digest = EXCLUDED.payload_digest, disposition = EXCLUDED.disposition,
        note_id = EXCLUDED.note_id, reason = EXCLUDED.reason,
        final_scope = EXCLUDED.final_scope, duration_ms = EXCLUDED.duration_ms,
        task_id = EXCLUDED.task_id, applied_at = EXCLUDED.applied_at
    RETURNING seq
), advanced AS (
    UPDATE runs SET applied_seq = greatest(applied_seq, :seq),
        persisted_count = persisted_count + :persisted_increment,
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
""")

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


def record_write(conn: Connection, record: WriteRecord, now: datetime) -> None:
    conn.execute(_RECORD_WRITE, {
        "run_id": record.run_id,
        "seq": record.seq,
        "agent_id": record.agent_id,
        "payload_digest": record.payload_digest,
        "disposition": record.disposition,
        "note_id": record.note_id,
        "reason": record.reason,
        "final_scope": _json_or_none(record.final_scope),
        "duration_ms": record.duration_ms,
        "task_id": record.task_id,
        "event": record.event,
        "detail": json.dumps(record.detail),
        "persisted_increment": record.persisted_increment,
        "now": now,
    })


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
