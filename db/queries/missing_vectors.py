"""Injectable notes and examples stored without a vector (the embedder failed when they were
written, and the write failed open): the Memory Manager's `vectors` phase reads a page of
them and fills the vectors in (worker/manager/vectors.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import Connection, text

from db.enums import INJECTABLE_SQL, NoteStatus
from db.queries.lattice import LATTICE_REST_SQL

_PROVISIONAL = NoteStatus.PROVISIONAL.value

# Read through notes_lattice_rest_idx, whose predicate holds every injectable note without a
# vector (the lattice predicate spelled out so the planner can match it): a handful of rows,
# never a scan of the table. Provisional notes first: hardening judges them next, by vector.
# An erased note is never injectable (a CHECK constraint); the condition says so anyway.
_NOTES = text(f"""
SELECT id, note, content_hash
FROM notes
WHERE {INJECTABLE_SQL} AND {LATTICE_REST_SQL} AND embedding IS NULL
  AND content_erased_at IS NULL AND note IS NOT NULL
ORDER BY status = '{_PROVISIONAL}' DESC, created_at, id
LIMIT :limit
""")  # noqa: S608 - our own constants only

# Only if the note still says what was embedded and still has no vector: a write may have
# rewritten it (supersede-own, which embeds again) while the vectors were computed.
_SET_NOTE_VECTORS = text(f"""
UPDATE notes n
SET embedding = v.embedding, embedding_model = :model, updated_at = :now
FROM unnest(CAST(:ids AS uuid[]), CAST(:hashes AS text[]), CAST(:vectors AS vector[]))
     AS v(id, content_hash, embedding)
WHERE n.id = v.id AND n.content_hash = v.content_hash AND n.embedding IS NULL
  AND n.{INJECTABLE_SQL}
""")  # noqa: S608

# Examples are embedded by their input (what a run's input is compared with).
_EXAMPLES = text(f"""
SELECT id, input_text, md5(input_text) AS content_hash
FROM examples
WHERE {INJECTABLE_SQL} AND embedding IS NULL
ORDER BY created_at, id
LIMIT :limit
""")  # noqa: S608

_SET_EXAMPLE_VECTORS = text(f"""
UPDATE examples e
SET embedding = v.embedding, embedding_model = :model, updated_at = :now
FROM unnest(CAST(:ids AS uuid[]), CAST(:hashes AS text[]), CAST(:vectors AS vector[]))
     AS v(id, content_hash, embedding)
WHERE e.id = v.id AND md5(e.input_text) = v.content_hash AND e.embedding IS NULL
  AND e.{INJECTABLE_SQL}
""")  # noqa: S608


@dataclass(frozen=True)
class Unembedded:
    id: uuid.UUID
    text: str
    content_hash: str  # what the vector is computed from: the update checks it is unchanged


def notes_without_vector(conn: Connection, limit: int) -> list[Unembedded]:
    return [Unembedded(row.id, row.note, row.content_hash)
            for row in conn.execute(_NOTES, {"limit": limit})]


def examples_without_vector(conn: Connection, limit: int) -> list[Unembedded]:
    return [Unembedded(row.id, row.input_text, row.content_hash)
            for row in conn.execute(_EXAMPLES, {"limit": limit})]


def _set_vectors(conn: Connection, statement: object, rows: list[Unembedded],
                 vectors: list[np.ndarray], model: str, now: datetime) -> int:
    if not rows:
        return 0
    return int(conn.execute(statement, {  # type: ignore[call-overload]
        "ids": [row.id for row in rows], "hashes": [row.content_hash for row in rows],
        "vectors": [np.asarray(v, dtype=np.float32) for v in vectors], "model": model,
        "now": now,
    }).rowcount)


def set_note_vectors(conn: Connection, rows: list[Unembedded], vectors: list[np.ndarray],
                     model: str, now: datetime) -> int:
    """Stores the vectors; returns how many notes took one."""
    return _set_vectors(conn, _SET_NOTE_VECTORS, rows, vectors, model, now)


def set_example_vectors(conn: Connection, rows: list[Unembedded], vectors: list[np.ndarray],
                        model: str, now: datetime) -> int:
    return _set_vectors(conn, _SET_EXAMPLE_VECTORS, rows, vectors, model, now)
