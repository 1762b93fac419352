"""An agent forgets one fact on its user's request (worker/erasure/fact.py): the notes and
pending candidates it may retire, the retirement, and the forgotten notes extraction checks
before learning a fact again.

What a run may forget is the one scope predicate (`db.scope.visibility_sql`: what the run can
be shown) narrowed to notes that are its user's with its agent — never an agent-wide or
company-wide note (no user), another user's, or another agent's."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from db.queries.retention import RETIRED_SQL
from db.queries.vectors import as_array
from db.scope import RequestScope, ScopeConfig, visibility_sql

# The note_events actor of a revocation by a forget request: how extraction tells a fact the
# user asked to forget from one retired for any other reason.
FORGET_REQUEST_ACTOR = "forget-request"

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


def forgettable_candidates(conn: Connection, request: RequestScope, config: ScopeConfig, *,
                           limit: int) -> list[dict[str, Any]]:
    """The run's user's pending memory candidates with the run's agent that the run could be
    shown once promoted (the same predicate as for notes), newest first. A candidate promoted
    later would bring a forgotten fact back, so a forget request decides them too."""
    if request.user_id is None or request.shared_only:
        return []
    predicate, params = visibility_sql(request, config, alias="c")
    query = text(f"""
SELECT c.id, c.type, c.note, c.run_id
FROM memory_candidates c
WHERE c.status = 'candidate' AND c.agent_id = :vis_agent AND c.user_id = :vis_user
  AND {predicate}
ORDER BY c.created_at DESC, c.id
LIMIT :limit
""")  # noqa: S608 - the predicate binds every value; only constants are spliced
    return [dict(row._mapping) for row in conn.execute(query, {**params, "limit": limit})]


# `status = 'candidate'` is re-checked on the locked row: a promotion that won the race has
# written its note, which the caller's note query (run after this) then finds.
_REJECT_CANDIDATES = text("""
UPDATE memory_candidates SET status = 'rejected', decision_reason = :reason,
    decided_by = :actor, decided_at = :now, updated_at = :now
WHERE id = ANY(CAST(:ids AS uuid[])) AND status = 'candidate'
RETURNING id
""")


def reject_candidates(conn: Connection, candidate_ids: list[uuid.UUID], *, reason: str,
                      actor: str, now: Any) -> set[uuid.UUID]:
    """Reject the candidates still pending; the ones that were."""
    if not candidate_ids:
        return set()
    return {row.id for row in conn.execute(_REJECT_CANDIDATES, {
        "ids": candidate_ids, "reason": reason, "actor": actor, "now": now})}


@dataclass(frozen=True)
class ForgottenNote:
    note: str
    content_hash: str | None
    embedding: np.ndarray | None
    embedding_model: str | None


_FORGOTTEN = text("""
SELECT n.note, n.content_hash, n.embedding, n.embedding_model
FROM notes n
WHERE n.agent_id = :agent_id AND n.user_id = :user_id AND n.status = 'Revoked'
  AND n.content_erased_at IS NULL AND n.note IS NOT NULL
  AND EXISTS (SELECT 1 FROM note_events e
              WHERE e.note_id = n.id AND e.action = 'revoked'
                AND e.actor = :actor)
ORDER BY n.updated_at DESC, n.id
LIMIT :limit
""")


def forgotten_notes(conn: Connection, agent_id: str, user_id: str, *,
                    limit: int) -> list[ForgottenNote]:
    """Notes of a user with an agent that a forget request revoked and that still hold their
    text: what extraction must not learn again."""
    return [ForgottenNote(row.note, row.content_hash, as_array(row.embedding),
                          row.embedding_model)
            for row in conn.execute(_FORGOTTEN, {"agent_id": agent_id, "user_id": user_id,
                                                 "actor": FORGET_REQUEST_ACTOR, "limit": limit})]
