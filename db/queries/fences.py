"""The erasure fence (worker/erasure/fence.py): what keeps an erased subject's queued and
redelivered writes from landing. Holds keyed hashes only, never an id."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

# Writes take this lock shared (every write, under its run's lock); setting a fence takes it
# exclusive. So once the fence commits, every write that did not see it has committed (its
# rows are found by the batches that follow) and every later write sees it.
# The write path takes it, with its run's lock, in one statement (db/queries/runs.py).
FENCE_LOCK_KEY_SQL = "hashtextextended('memory.erasure-fence', 0)"
LOCK_FENCE_SHARED_SQL = f"pg_advisory_xact_lock_shared({FENCE_LOCK_KEY_SQL})"
_LOCK_FENCE_SHARED = text(f"SELECT {LOCK_FENCE_SHARED_SQL}")
_LOCK_FENCE_EXCLUSIVE = text(f"SELECT pg_advisory_xact_lock({FENCE_LOCK_KEY_SQL})")

# The fences of a set of subject hashes (:fence_hashes), as parallel arrays in one row; the
# write path reads them with its run's state (db/queries/runs.py).
FENCES_OF_SQL = """
SELECT array_agg(subject_hash ORDER BY subject_hash) AS fence_hashes,
       array_agg(erased_at ORDER BY subject_hash) AS fence_erased_at,
       array_agg(seq_floor ORDER BY subject_hash) AS fence_seq_floors
FROM erasure_fences WHERE subject_hash = ANY(:fence_hashes)
"""
_FENCES = text(FENCES_OF_SQL)

_SET_FENCE = text("""
INSERT INTO erasure_fences (subject_hash, erased_at, seq_floor)
VALUES (:hash, now(), :seq_floor)
ON CONFLICT (subject_hash) DO UPDATE
SET erased_at = greatest(erasure_fences.erased_at, EXCLUDED.erased_at),
    seq_floor = greatest(erasure_fences.seq_floor, EXCLUDED.seq_floor)
RETURNING erased_at
""")

_CONVERSATION_BEGAN = text("SELECT created_at FROM conversations WHERE id = :id")


def lock_fences_shared(conn: Connection) -> None:
    conn.execute(_LOCK_FENCE_SHARED)


def fences_for(conn: Connection, hashes: list[str]) -> list[dict[str, Any]]:
    """The fences of these subject hashes. Call after `lock_fences_shared`, in a statement
    of its own (READ COMMITTED takes the snapshot when a statement starts)."""
    if not hashes:
        return []
    return fence_rows(conn.execute(_FENCES, {"fence_hashes": hashes}).mappings().one())


def fence_rows(row: Any) -> list[dict[str, Any]]:
    """The fences of a row with `FENCES_OF_SQL`'s columns, one dict each."""
    hashes = row["fence_hashes"]
    if not hashes:  # no fence: the aggregates are NULL
        return []
    return [{"subject_hash": h, "erased_at": at, "seq_floor": floor} for h, at, floor
            in zip(hashes, row["fence_erased_at"], row["fence_seq_floors"], strict=True)]


def conversation_began_at(conn: Connection, conversation_id: str) -> datetime | None:
    return conn.execute(_CONVERSATION_BEGAN, {"id": conversation_id}).scalar()


def set_fence(conn: Connection, subject_hash: str, seq_floor: int) -> datetime:
    """Set (or move forward) a subject's fence; waits for writes in flight to commit."""
    conn.execute(_LOCK_FENCE_EXCLUSIVE)
    return conn.execute(_SET_FENCE, {"hash": subject_hash, "seq_floor": seq_floor}).scalar_one()
