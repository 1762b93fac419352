"""Operator reads: list, show and find notes (CLI `notes`, `explain`). Never on a hot path."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

_COLUMNS = """id, agent_id, user_id, company_id, primary_scope_entity, primary_scope_record_id,
    secondary_scopes, type, note, status, author_type, protection_tier, importance_score,
    confidence, notes.access_count + coalesce(pending.hits, 0) AS access_count,
    greatest(notes.last_accessed_at, pending.last_accessed_at) AS last_accessed_at,
    expires_at, embedding_model,
    source_conversation_id, source_conversation_detail_id, source_agent_run_id,
    derived_from_note_ids, consolidated_into_note_id, consolidation_count, superseded_by,
    corrects_note_id, review_flag, retention, valid_from, valid_to, created_at, updated_at,
    hardened_at, content_erased_at"""
# Accesses recorded since the last cycle's fold count too: operators see current numbers.
_PENDING = ("LEFT JOIN LATERAL (SELECT p.hits, p.last_accessed_at FROM note_access_pending p "
            "WHERE p.note_id = notes.id) AS pending ON true")

# Filters are optional: a NULL parameter means "any"; the value "-" asks for notes without
# a user / company (operators need to see agent-wide notes too).
_LIST = text(f"""
SELECT {_COLUMNS} FROM notes {_PENDING}
WHERE (CAST(:agent_id AS text) IS NULL OR agent_id = :agent_id)
  AND (CAST(:user_id AS text) IS NULL OR user_id = :user_id
       OR (:user_id = '-' AND user_id IS NULL))
  AND (CAST(:company_id AS text) IS NULL OR company_id = :company_id
       OR (:company_id = '-' AND company_id IS NULL))
  AND (CAST(:status AS text) IS NULL OR status = :status)
  AND (CAST(:author_type AS text) IS NULL OR author_type = :author_type)
ORDER BY created_at DESC, id
LIMIT :limit
""")  # noqa: S608 - column list is a constant

_SHOW = text(f"SELECT {_COLUMNS} FROM notes {_PENDING} WHERE id = :id")  # noqa: S608

# Notes an operator may mean by "X": containing the words, or close in meaning (same
# embedding model). Any status and any user: explaining why a note is *not* injected needs
# the notes of other users and the archived ones too.
_FIND = text(f"""
SELECT {_COLUMNS},
    CASE WHEN CAST(:vector AS vector) IS NOT NULL AND embedding_model = :model
              AND vector_dims(embedding) = :dims
         THEN 1 - (embedding <=> CAST(:vector AS vector)) END AS similarity
FROM notes {_PENDING}
WHERE (agent_id = :agent_id OR agent_id IS NULL)
  AND (note ILIKE '%' || :needle || '%'
       OR (CAST(:vector AS vector) IS NOT NULL AND embedding_model = :model
           AND vector_dims(embedding) = :dims
           AND 1 - (embedding <=> CAST(:vector AS vector)) >= :min_similarity))
ORDER BY similarity DESC NULLS LAST, created_at DESC
LIMIT :limit
""")  # noqa: S608


def list_notes(conn: Connection, *, agent_id: str | None, user_id: str | None,
               company_id: str | None, status: str | None, author_type: str | None,
               limit: int) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in conn.execute(_LIST, {
        "agent_id": agent_id, "user_id": user_id, "company_id": company_id, "status": status,
        "author_type": author_type, "limit": limit})]


# Ids in a UUID range: a prefix as `notes list` prints it, found through the primary key.
_IDS_IN_RANGE = text("SELECT id FROM notes WHERE id BETWEEN :low AND :high ORDER BY id "
                     "LIMIT :limit")


def note_ids_with_prefix(conn: Connection, prefix: str, *, limit: int = 2) -> list[uuid.UUID]:
    """Notes whose id starts with these hex digits (dashes ignored), at most `limit`."""
    digits = prefix.replace("-", "").lower()
    low = uuid.UUID(digits.ljust(32, "0"))
    high = uuid.UUID(digits.ljust(32, "f"))
    return [row[0] for row in conn.execute(_IDS_IN_RANGE,
                                           {"low": low, "high": high, "limit": limit})]


def show_note(conn: Connection, note_id: uuid.UUID) -> dict[str, Any] | None:
    row = conn.execute(_SHOW, {"id": note_id}).first()
    return None if row is None else dict(row._mapping)


def find_notes(conn: Connection, *, agent_id: str, needle: str, vector: np.ndarray | None,
               model: str | None, min_similarity: float, limit: int) -> list[dict[str, Any]]:
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return [dict(row._mapping) for row in conn.execute(_FIND, {
        "agent_id": agent_id, "needle": escaped, "vector": vector, "model": model,
        "dims": 0 if vector is None else int(vector.shape[0]),
        "min_similarity": min_similarity, "limit": limit})]
