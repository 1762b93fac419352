"""Access statistics: recorded by the read path beside the notes, folded into them by the
Memory Manager cycle (migration 0006 says why they are not written into `notes` per read)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Connection, text

_RECORD = text("""
INSERT INTO note_access_pending AS p (note_id, hits, last_accessed_at)
SELECT id, hits, CAST(:at AS timestamptz)
FROM unnest(CAST(:ids AS uuid[]), CAST(:hits AS integer[])) AS u(id, hits)
ORDER BY id
ON CONFLICT (note_id) DO UPDATE
SET hits = p.hits + excluded.hits,
    last_accessed_at = greatest(p.last_accessed_at, excluded.last_accessed_at)
""")

# A page of rows is taken and applied in one statement: a bump recorded meanwhile either
# lands before the DELETE (and is moved) or after it (a row for the next fold) — never lost,
# never counted twice. Rows of notes deleted since are dropped with the rest.
_FOLD = text("""
WITH moved AS (
    DELETE FROM note_access_pending
    WHERE note_id IN (SELECT note_id FROM note_access_pending ORDER BY note_id LIMIT :limit)
    RETURNING note_id, hits, last_accessed_at
), applied AS (
    UPDATE notes AS n
    SET access_count = n.access_count + m.hits,
        last_accessed_at = greatest(n.last_accessed_at, m.last_accessed_at)
    FROM moved m WHERE n.id = m.note_id
    RETURNING n.id, m.hits
)
SELECT (SELECT count(*) FROM moved) AS taken, (SELECT count(*) FROM applied) AS notes,
       (SELECT coalesce(sum(hits), 0) FROM applied) AS hits
""")


def record_access(conn: Connection, hits: dict[uuid.UUID, int], at: datetime) -> None:
    if hits:
        ids = sorted(hits)  # a stable order keeps concurrent flushes from deadlocking
        conn.execute(_RECORD, {"ids": ids, "hits": [hits[i] for i in ids], "at": at})


def fold_access_page(conn: Connection, limit: int) -> tuple[int, int, int]:
    """Move up to `limit` notes' recorded accesses into notes; returns (rows taken, notes
    updated, accesses added to them). Fewer than `limit` rows taken: nothing was left."""
    row = conn.execute(_FOLD, {"limit": limit}).one()
    return int(row.taken), int(row.notes), int(row.hits)
