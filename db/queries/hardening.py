"""The hardening pass's reads: the queue of agent-written provisional notes and, for each,
its candidates among the Active notes of the same exact scope."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import Connection, text

from db.enums import AuthorType, NoteStatus
from db.queries.vectors import as_array

_PROVISIONAL = NoteStatus.PROVISIONAL.value
_ACTIVE = NoteStatus.ACTIVE.value

# Keyset-paged, oldest first (notes_hardening_idx): sequential by design, so a later note is
# judged against everything hardened before it, in this batch or earlier ones.
_QUEUE = text(f"""
SELECT id, scope_key, created_at
FROM notes
WHERE status = '{_PROVISIONAL}' AND author_type = '{AuthorType.AGENT.value}'
  AND (created_at, id) > (:after_created, :after_id)
ORDER BY created_at, id
LIMIT :limit
""")  # noqa: S608 - our own constants only

# Re-read under the scope locks: the text may have changed (supersede-own) since the queue
# was read, and only this version may be judged.
_BATCH = text(f"""
SELECT id, scope_key, note, content_hash, type, protection_tier, embedding, embedding_model,
       corrects_note_id, expires_at, created_at, access_count, importance_score
FROM notes
WHERE id = ANY(CAST(:ids AS uuid[])) AND status = '{_PROVISIONAL}'
ORDER BY created_at, id
""")  # noqa: S608

# Per provisional note: the k nearest Active notes of its exact scope (same embedding model,
# never itself), any Active exact restatement, and the note it was recorded as correcting.
# Exact cosine over the scope's rows (a scope is one user's notes, not the table).
_CANDIDATES = text(f"""
SELECT p.id AS provisional_id, c.kind, c.similarity, a.id, a.note, a.content_hash,
       a.protection_tier, a.created_at, a.importance_score, a.access_count
FROM notes p
CROSS JOIN LATERAL (
    (SELECT x.id, 'near' AS kind, 1 - (x.embedding <=> p.embedding) AS similarity
     FROM notes x
     WHERE p.embedding IS NOT NULL AND x.scope_key = p.scope_key AND x.status = '{_ACTIVE}'
       AND x.id <> p.id AND x.embedding_model = p.embedding_model
     ORDER BY x.embedding <=> p.embedding
     LIMIT :k)
    UNION ALL
    (SELECT x.id, 'exact', 1.0::float8
     FROM notes x
     WHERE x.scope_key = p.scope_key AND x.content_hash = p.content_hash
       AND x.status = '{_ACTIVE}' AND x.id <> p.id
     ORDER BY x.created_at LIMIT 1)
    UNION ALL
    (SELECT x.id, 'corrects', NULL::float8
     FROM notes x
     WHERE x.id = p.corrects_note_id AND x.scope_key = p.scope_key
       AND x.status = '{_ACTIVE}')
) AS c
JOIN notes a ON a.id = c.id
WHERE p.id = ANY(CAST(:ids AS uuid[]))
""")  # noqa: S608


@dataclass(frozen=True)
class ProvisionalNote:
    id: uuid.UUID
    scope_key: uuid.UUID
    note: str
    content_hash: str
    type: str
    protection_tier: str
    embedding: np.ndarray | None
    embedding_model: str | None
    corrects_note_id: uuid.UUID | None
    expires_at: datetime | None
    created_at: datetime


@dataclass(frozen=True)
class HardenedCandidate:
    id: uuid.UUID
    kind: str  # near | exact | corrects
    similarity: float | None
    note: str
    content_hash: str
    protection_tier: str
    created_at: datetime
    importance_score: float | None
    access_count: int


@dataclass(frozen=True)
class QueuedNote:
    id: uuid.UUID
    scope_key: uuid.UUID
    created_at: datetime


def hardening_queue(conn: Connection, *, after: tuple[datetime, uuid.UUID], limit: int
                    ) -> list[QueuedNote]:
    rows = conn.execute(_QUEUE, {"after_created": after[0], "after_id": after[1],
                                 "limit": limit})
    return [QueuedNote(row.id, row.scope_key, row.created_at) for row in rows]


def load_provisional(conn: Connection, ids: list[uuid.UUID]) -> list[ProvisionalNote]:
    return [
        ProvisionalNote(row.id, row.scope_key, row.note, row.content_hash, row.type,
                        row.protection_tier, as_array(row.embedding), row.embedding_model,
                        row.corrects_note_id, row.expires_at, row.created_at)
        for row in conn.execute(_BATCH, {"ids": ids})
    ]


def active_candidates(conn: Connection, ids: list[uuid.UUID], k: int
                      ) -> dict[uuid.UUID, list[HardenedCandidate]]:
    found: dict[uuid.UUID, list[HardenedCandidate]] = {}
    for row in conn.execute(_CANDIDATES, {"ids": ids, "k": k}):
        found.setdefault(row.provisional_id, []).append(HardenedCandidate(
            row.id, row.kind, None if row.similarity is None else float(row.similarity),
            row.note, row.content_hash, row.protection_tier, row.created_at,
            row.importance_score, row.access_count))
    return found
