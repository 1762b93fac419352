"""Notes: the exact-scope neighbourhood the guards compare against, and note changes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from db.enums import INJECTABLE_SQL, AuthorType
from db.scope import SAME_SCOPE_SQL, SCOPE_KEY_SQL, NoteScope

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
#  - own: every injectable note this run wrote in the scope (a run writes a handful), with
#    its text and similarity, for the correction detector;
#  - related: the most similar other injectable notes of the scope (same embedding model) at
#    or above :related_floor, with their text: what a write may be correcting.
# Similarities are computed over a MATERIALIZED scope subset: an approximate vector index
# must never be scanned first and filtered after (that returns too few rows).
# Only our own constant fragments are spliced into this statement.
_SCOPE_NEIGHBOURS = text(f"""
WITH within_run AS (
    SELECT n.id, 'within_run' AS kind, 1.0::float8 AS similarity, NULL::text AS note
    FROM write_log w JOIN notes n ON n.id = w.note_id
    WHERE w.run_id = :run_id AND {SAME_SCOPE_SQL}
      AND n.content_hash = :content_hash AND n.{INJECTABLE_SQL}
    LIMIT 1
), exact AS (
    SELECT n.id, 'exact' AS kind, 1.0::float8 AS similarity, NULL::text AS note
    FROM notes n
    WHERE {SAME_SCOPE_SQL} AND n.content_hash = :content_hash
      AND n.{INJECTABLE_SQL}
    ORDER BY n.created_at
    LIMIT 1
), scoped AS MATERIALIZED (
    SELECT n.id, n.note, coalesce({_OWN}, false) AS own, n.created_at,
        CASE WHEN :has_vector AND n.embedding_model = :embedding_model
                  AND vector_dims(n.embedding) = :dims
             THEN 1 - (n.embedding <=> CAST(:vector AS vector)) END AS similarity
    FROM notes n
    WHERE {SAME_SCOPE_SQL} AND n.{INJECTABLE_SQL}
), own AS (
    SELECT id, 'own' AS kind, similarity, note FROM scoped WHERE own
    ORDER BY similarity DESC NULLS LAST, created_at DESC
    LIMIT 50
), related AS (
    SELECT id, 'related' AS kind, similarity, note FROM scoped
    WHERE NOT own AND similarity >= :related_floor
    ORDER BY similarity DESC
    LIMIT :shortlist
)
SELECT id, kind, similarity, note FROM within_run
UNION ALL SELECT id, kind, similarity, note FROM exact
UNION ALL SELECT id, kind, similarity, note FROM own
UNION ALL SELECT id, kind, similarity, note FROM related
""")  # noqa: S608


@dataclass(frozen=True)
class Neighbour:
    note_id: uuid.UUID
    similarity: float | None  # None when either side has no comparable vector
    note: str = ""


@dataclass(frozen=True)
class ScopeNeighbours:
    within_run: uuid.UUID | None
    exact: Neighbour | None
    own: list[Neighbour]  # the run's own notes in the scope, most similar first
    related: list[Neighbour]  # other notes of the scope, most similar first


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
    related_floor: float,
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
        "related_floor": related_floor,
    }
    within_run = None
    exact = None
    own: list[Neighbour] = []
    related: list[Neighbour] = []
    for row in conn.execute(_SCOPE_NEIGHBOURS, params):
        similarity = None if row.similarity is None else float(row.similarity)
        if row.kind == "within_run":
            within_run = row.id
        elif row.kind == "exact":
            exact = Neighbour(row.id, 1.0)
        elif row.kind == "own":
            own.append(Neighbour(row.id, similarity, row.note))
        else:
            related.append(Neighbour(row.id, similarity, row.note))
    return ScopeNeighbours(within_run=within_run, exact=exact, own=own, related=related)


# --- note changes ---------------------------------------------------------------------------

# Each is also run as the first part of the statement that records the write that made it
# (db/queries/runs.py: `record_write` with a `NoteChange`), so that the note change, the
# write log, the run's sequence and the trace step are one statement, one round trip.
INSERT_NOTE_SQL = """
INSERT INTO notes (id, agent_id, user_id, company_id, primary_scope_entity,
    primary_scope_record_id, secondary_scopes, type, note, content_hash, status, author_type,
    protection_tier, access_count, last_accessed_at, expires_at, embedding, embedding_model,
    source_conversation_id, source_conversation_detail_id, source_agent_run_id,
    confidence, corrects_note_id, hardened_at, retention_at, valid_from, created_at, updated_at)
VALUES (:id, :scope_agent_id, :scope_user_id, :scope_company_id, :scope_entity,
    :scope_record_id, CAST(:scope_secondary AS jsonb), :type, :note, :content_hash, :status,
    :author_type, :protection_tier, :access_count, :last_accessed_at, :expires_at, :embedding,
    :embedding_model, :source_conversation_id, :source_conversation_detail_id,
    :source_agent_run_id, :confidence, :corrects_note_id, :hardened_at, :hardened_at,
    :now, :now, :now)
"""

SUPERSEDE_OWN_SQL = """
UPDATE notes SET note = :note, type = :type, content_hash = :content_hash,
    embedding = :embedding, embedding_model = :embedding_model, updated_at = :now
WHERE id = :id
"""

REINFORCE_SQL = """
UPDATE notes SET access_count = access_count + 1, last_accessed_at = :now, updated_at = :now
WHERE id = :id
"""

# kind -> statement; the parameters of each are `NoteChange.params`.
NOTE_CHANGE_SQL = {"insert": INSERT_NOTE_SQL, "supersede": SUPERSEDE_OWN_SQL,
                   "reinforce": REINFORCE_SQL}
_NOTE_CHANGES = {kind: text(sql) for kind, sql in NOTE_CHANGE_SQL.items()}


@dataclass(frozen=True)
class NoteChange:
    """One note change of the write path, not yet made: `apply_note_change` makes it alone,
    `record_write` (db/queries/runs.py) in the statement that records its write."""

    kind: str  # a key of NOTE_CHANGE_SQL
    note_id: uuid.UUID
    params: dict[str, Any]
    now: datetime


def apply_note_change(conn: Connection, change: NoteChange) -> None:
    conn.execute(_NOTE_CHANGES[change.kind], change.params)


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
    confidence: int | None = None
    corrects_note_id: uuid.UUID | None = None
    # An in-flight write counts as the note's first access; an extracted note starts unread.
    first_access: bool = True
    # Notes that enter the pool already vetted (extraction) start their decay clock now.
    hardened: bool = False


def new_note_change(note: NewNote, now: datetime) -> NoteChange:
    """Inserting `note` (its id is made here)."""
    note_id = uuid.uuid4()
    return NoteChange("insert", note_id, {
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
        "confidence": note.confidence,
        "corrects_note_id": note.corrects_note_id,
        "access_count": 1 if note.first_access else 0,
        "last_accessed_at": now if note.first_access else None,
        "hardened_at": now if note.hardened else None,
        "now": now,
    }, now)


def supersede_own_change(
    note_id: uuid.UUID, *, note: str, type: str, content_hash: str,
    embedding: np.ndarray | None, embedding_model: str | None, now: datetime,
) -> NoteChange:
    """A run's own note taking the text (and vector) of the write that replaces it."""
    return NoteChange("supersede", note_id, {
        "id": note_id, "note": note, "type": type, "content_hash": content_hash,
        "embedding": embedding,
        "embedding_model": embedding_model if embedding is not None else None,
        "now": now,
    }, now)


def reinforce_change(note_id: uuid.UUID, now: datetime) -> NoteChange:
    """A note restated exactly: one more access."""
    return NoteChange("reinforce", note_id, {"id": note_id, "now": now}, now)


def insert_note(conn: Connection, note: NewNote, now: datetime) -> uuid.UUID:
    change = new_note_change(note, now)
    apply_note_change(conn, change)
    return change.note_id


def supersede_own_note(
    conn: Connection, note_id: uuid.UUID, *, note: str, type: str, content_hash: str,
    embedding: np.ndarray | None, embedding_model: str | None, now: datetime,
) -> None:
    apply_note_change(conn, supersede_own_change(
        note_id, note=note, type=type, content_hash=content_hash, embedding=embedding,
        embedding_model=embedding_model, now=now))


def reinforce_note(conn: Connection, note_id: uuid.UUID, now: datetime) -> None:
    apply_note_change(conn, reinforce_change(note_id, now))
