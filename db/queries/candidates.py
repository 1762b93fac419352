"""Memory candidates (SPEC 5): internal memory held out of the injectable set until promoted.

Candidates live in their own table, which no read path queries, so "a candidate is never
injected" holds by construction. Promotion writes a note through the normal guard pipeline
(worker/writes/candidates.py); these statements only hold and decide the candidates.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from db.scope import SCOPE_KEY_SQL, NoteScope

CANDIDATE_COLUMNS = (
    "id, run_id, seq, agent_id, user_id, company_id, primary_scope_entity, "
    "primary_scope_record_id, secondary_scopes, source, type, note, content_hash, "
    "conversation_id, conversation_detail_id, status, held_reason, decision_reason, decided_by, "
    "decided_at, note_id, created_at, updated_at"
)

_FIND_PENDING = text(f"""
SELECT id FROM memory_candidates
WHERE run_id = :run_id AND scope_key = {SCOPE_KEY_SQL} AND content_hash = :content_hash
  AND status = 'candidate'
""")  # noqa: S608 - constant fragments only

_INSERT = text("""
INSERT INTO memory_candidates (id, run_id, seq, agent_id, user_id, company_id,
    primary_scope_entity, primary_scope_record_id, secondary_scopes, source, type, note,
    content_hash, conversation_id, conversation_detail_id, held_reason, created_at, updated_at)
VALUES (:id, :run_id, :seq, :scope_agent_id, :scope_user_id, :scope_company_id, :scope_entity,
    :scope_record_id, CAST(:scope_secondary AS jsonb), :source, :type, :note, :content_hash,
    :conversation_id, :conversation_detail_id, :held_reason, :now, :now)
ON CONFLICT (run_id, scope_key, content_hash) WHERE status = 'candidate' DO NOTHING
RETURNING id
""")

_SELECT_ONE = text(f"SELECT {CANDIDATE_COLUMNS} FROM memory_candidates WHERE id = :id")  # noqa: S608
_SELECT_FOR_UPDATE = text(
    f"SELECT {CANDIDATE_COLUMNS} FROM memory_candidates WHERE id = :id FOR UPDATE"  # noqa: S608
)

_LIST = text(f"""
SELECT {CANDIDATE_COLUMNS} FROM memory_candidates
WHERE (CAST(:agent_id AS text) IS NULL OR agent_id = :agent_id)
  AND (CAST(:run_id AS text) IS NULL OR run_id = :run_id)
  AND (CAST(:status AS text) IS NULL OR status = :status)
ORDER BY created_at, id
LIMIT :limit
""")  # noqa: S608 - constant fragments only

_DECIDE = text("""
UPDATE memory_candidates SET status = :status, decision_reason = :reason, decided_by = :actor,
    decided_at = :now, note_id = coalesce(:note_id, note_id), updated_at = :now
WHERE id = :id
""")

_NOTE_DECISION = text("""
UPDATE memory_candidates SET decision_reason = :reason, updated_at = :now WHERE id = :id
""")

_ADD_PERSISTED = text("""
UPDATE runs SET persisted_count = persisted_count + :n, updated_at = :now WHERE run_id = :run_id
""")


@dataclass(frozen=True)
class NewCandidate:
    run_id: str
    seq: int
    scope: NoteScope
    source: str
    type: str
    note: str
    content_hash: str
    conversation_id: str | None
    conversation_detail_id: str | None
    held_reason: str = "promotion-required"


def find_pending_candidate(conn: Connection, run_id: str, scope: NoteScope,
                           content_hash: str) -> uuid.UUID | None:
    return conn.execute(_FIND_PENDING, {**scope.sql_params(), "run_id": run_id,
                                        "content_hash": content_hash}).scalar_one_or_none()


def insert_candidate(conn: Connection, candidate: NewCandidate, candidate_id: uuid.UUID,
                     now: datetime) -> uuid.UUID:
    """Hold a candidate; the pending one of the same run, scope and text if there is one."""
    inserted = conn.execute(_INSERT, {
        **candidate.scope.sql_params(),
        "id": candidate_id, "run_id": candidate.run_id, "seq": candidate.seq,
        "source": candidate.source, "type": candidate.type, "note": candidate.note,
        "content_hash": candidate.content_hash, "conversation_id": candidate.conversation_id,
        "conversation_detail_id": candidate.conversation_detail_id,
        "held_reason": candidate.held_reason, "now": now,
    }).scalar_one_or_none()
    if inserted is not None:
        return inserted
    existing = find_pending_candidate(conn, candidate.run_id, candidate.scope,
                                      candidate.content_hash)
    assert existing is not None, "conflicting pending candidate vanished under the run lock"
    return existing


def get_candidate(conn: Connection, candidate_id: uuid.UUID, *, for_update: bool = False
                  ) -> dict[str, Any] | None:
    statement = _SELECT_FOR_UPDATE if for_update else _SELECT_ONE
    row = conn.execute(statement, {"id": candidate_id}).mappings().first()
    return dict(row) if row else None


def select_candidates(conn: Connection, *, agent_id: str | None = None, run_id: str | None = None,
                      status: str | None = "candidate", limit: int = 100) -> list[dict[str, Any]]:
    rows = conn.execute(_LIST, {"agent_id": agent_id, "run_id": run_id, "status": status,
                                "limit": limit}).mappings()
    return [dict(row) for row in rows]


def decide_candidate(conn: Connection, candidate_id: uuid.UUID, *, status: str,
                     reason: str | None, actor: str, now: datetime,
                     note_id: uuid.UUID | None = None) -> None:
    conn.execute(_DECIDE, {"id": candidate_id, "status": status, "reason": reason,
                           "actor": actor, "now": now, "note_id": note_id})


def note_candidate_decision(conn: Connection, candidate_id: uuid.UUID, reason: str,
                            now: datetime) -> None:
    """Record why a candidate stays a candidate (a promotion attempt that did not land)."""
    conn.execute(_NOTE_DECISION, {"id": candidate_id, "reason": reason, "now": now})


def add_persisted(conn: Connection, run_id: str, n: int, now: datetime) -> None:
    conn.execute(_ADD_PERSISTED, {"run_id": run_id, "n": n, "now": now})
