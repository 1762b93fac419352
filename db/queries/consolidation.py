"""Reads and writes of consolidation and contradiction resolution: similar pairs of Active
notes within one exact scope, and the note a consolidation creates."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import Connection, text

from db.enums import AuthorType, NoteStatus

_ACTIVE = NoteStatus.ACTIVE.value

# Scopes where something changed since the last maintenance: only there can a new cluster or
# a new contradiction have appeared (everything else was examined then).
_CHANGED_SCOPES = text(f"""
SELECT DISTINCT scope_key FROM notes
WHERE status = '{_ACTIVE}' AND (created_at > :since OR hardened_at > :since)
""")  # noqa: S608

# Every Active note of the given scopes with its k nearest Active neighbours in the same exact
# scope (same embedding model, never itself) at or above the threshold.
_SCOPE_PAIRS = text(f"""
SELECT a.id AS a_id, b.id AS b_id, b.similarity
FROM notes a
CROSS JOIN LATERAL (
    SELECT x.id, 1 - (x.embedding <=> a.embedding) AS similarity
    FROM notes x
    WHERE x.scope_key = a.scope_key AND x.status = '{_ACTIVE}' AND x.id <> a.id
      AND x.embedding_model = a.embedding_model
    ORDER BY x.embedding <=> a.embedding
    LIMIT :k
) AS b
WHERE a.scope_key = ANY(CAST(:scopes AS uuid[])) AND a.status = '{_ACTIVE}'
  AND a.embedding IS NOT NULL AND b.similarity >= :threshold
""")  # noqa: S608

_NOTES = text("""
SELECT id, scope_key, note, type, status, protection_tier, created_at, importance_score,
       access_count, consolidation_count, derived_from_note_ids, confidence, review_flag
FROM notes WHERE id = ANY(CAST(:ids AS uuid[]))
""")

_INSERT_CONSOLIDATED = text(f"""
INSERT INTO notes (id, agent_id, user_id, company_id, primary_scope_entity,
    primary_scope_record_id, secondary_scopes, type, note, content_hash, status, author_type,
    protection_tier, importance_score, confidence, access_count, embedding, embedding_model,
    derived_from_note_ids, consolidation_count, hardened_at, retention, retention_at,
    valid_from, created_at, updated_at)
SELECT :id, agent_id, user_id, company_id, primary_scope_entity, primary_scope_record_id,
    secondary_scopes, :type, :note, :content_hash, '{_ACTIVE}',
    '{AuthorType.MEMORY_MANAGER.value}', 'Standard', :importance, :confidence, :access_count,
    :embedding, :embedding_model, CAST(:derived AS uuid[]), :generation, :now, 1, :now,
    :now, :now, :now
FROM notes WHERE id = :template_id
""")  # noqa: S608


@dataclass(frozen=True)
class PoolNote:
    id: uuid.UUID
    scope_key: uuid.UUID
    note: str
    type: str
    status: str
    protection_tier: str
    created_at: datetime
    importance_score: float | None
    access_count: int
    consolidation_count: int
    derived_from: tuple[uuid.UUID, ...]
    confidence: int | None
    review_flag: str | None


def changed_scopes(conn: Connection, since: datetime) -> list[uuid.UUID]:
    return sorted(row.scope_key for row in conn.execute(_CHANGED_SCOPES, {"since": since}))


def scope_pairs(conn: Connection, scopes: list[uuid.UUID], *, threshold: float, k: int
                ) -> dict[tuple[uuid.UUID, uuid.UUID], float]:
    """Unordered pairs (smaller id first) → cosine similarity."""
    pairs: dict[tuple[uuid.UUID, uuid.UUID], float] = {}
    if not scopes:
        return pairs
    for row in conn.execute(_SCOPE_PAIRS, {"scopes": scopes, "threshold": threshold, "k": k}):
        key = (row.a_id, row.b_id) if row.a_id < row.b_id else (row.b_id, row.a_id)
        pairs[key] = float(row.similarity)
    return pairs


def load_pool(conn: Connection, ids: list[uuid.UUID]) -> dict[uuid.UUID, PoolNote]:
    return {
        row.id: PoolNote(row.id, row.scope_key, row.note, row.type, row.status,
                         row.protection_tier, row.created_at, row.importance_score,
                         row.access_count, row.consolidation_count,
                         tuple(row.derived_from_note_ids or ()), row.confidence,
                         row.review_flag)
        for row in conn.execute(_NOTES, {"ids": ids})
    }


def insert_consolidated_note(
    conn: Connection, *, template_id: uuid.UUID, note: str, type: str, content_hash: str,
    importance: float | None, confidence: int | None, access_count: int,
    embedding: np.ndarray | None, embedding_model: str | None,
    derived_from: list[uuid.UUID], generation: int, now: datetime,
) -> uuid.UUID:
    """A new Active note in the exact scope of `template_id` (a member of the cluster)."""
    note_id = uuid.uuid4()
    conn.execute(_INSERT_CONSOLIDATED, {
        "id": note_id, "template_id": template_id, "type": type, "note": note,
        "content_hash": content_hash, "importance": importance, "confidence": confidence,
        "access_count": access_count, "embedding": embedding,
        "embedding_model": embedding_model if embedding is not None else None,
        "derived": "{" + ",".join(str(i) for i in derived_from) + "}",
        "generation": generation, "now": now,
    })
    return note_id
