"""An agent forgets one fact on its user's request (worker/erasure/fact.py): the notes it may
revoke, and the revocation with its lineage.

What a run may forget is the one scope predicate (`db.scope.visibility_sql`: what the run can
be shown) narrowed to notes that are its user's with its agent — never an agent-wide or
company-wide note (no user), another user's, or another agent's."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from db.queries.retention import RETIRED_SQL
from db.scope import RequestScope, ScopeConfig, visibility_sql

_COLUMNS = """n.id, n.type, n.note, n.status, n.protection_tier, n.scope_key, n.created_at"""


def forgettable_notes(conn: Connection, request: RequestScope, config: ScopeConfig, *,
                      vector: np.ndarray | None, model: str | None,
                      named: list[uuid.UUID], limit: int) -> list[dict[str, Any]]:
    """The run's user's live notes with the run's agent that the run can see, the `named`
    ones first, then newest first, with their similarity to `vector` (None where the model
    or dimensions differ)."""
    if request.user_id is None or request.shared_only:
        return []
    predicate, params = visibility_sql(request, config)
    query = text(f"""
SELECT {_COLUMNS},
    CASE WHEN CAST(:vector AS vector) IS NOT NULL AND n.embedding_model = :model
              AND vector_dims(n.embedding) = :dims
         THEN 1 - (n.embedding <=> CAST(:vector AS vector)) END AS similarity
FROM notes n
WHERE n.agent_id = :vis_agent AND n.user_id = :vis_user AND {predicate}
  AND n.content_erased_at IS NULL AND NOT (n.{RETIRED_SQL})
ORDER BY n.id = ANY(CAST(:named AS uuid[])) DESC, n.created_at DESC, n.id
LIMIT :limit
""")  # noqa: S608 - the predicate binds every value; only constants are spliced
    rows = conn.execute(query, {
        **params, "vector": vector, "model": model,
        "dims": 0 if vector is None else int(vector.shape[0]), "named": named, "limit": limit,
    })
    return [dict(row._mapping) for row in rows]


_REVOKE = text(f"""
UPDATE notes n SET status = 'Revoked', valid_to = greatest(n.valid_from, :now),
    review_flag = NULL, updated_at = :now
WHERE n.id = ANY(CAST(:ids AS uuid[])) AND NOT (n.{RETIRED_SQL})
RETURNING n.id
""")  # noqa: S608


def revoke_notes(conn: Connection, note_ids: list[uuid.UUID], now: Any) -> set[uuid.UUID]:
    """Revoke the notes still live; the ones that are (the caller holds their locks)."""
    if not note_ids:
        return set()
    return {row.id for row in conn.execute(_REVOKE, {"ids": note_ids, "now": now})}
