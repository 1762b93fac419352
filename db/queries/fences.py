"""The erasure fence (worker/erasure/fence.py): what keeps an erased subject's queued and
redelivered writes from landing. Holds keyed hashes only, never an id."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

# Writes take this lock shared (every write, under its run's lock); setting a fence takes it
# exclusive. So once the fence commits, every write that did not see it has committed (its
# rows are found by the batches that follow) and every later write sees it.
_FENCE_LOCK_KEY = "hashtextextended('memory.erasure-fence', 0)"
_LOCK_FENCE_SHARED = text(f"SELECT pg_advisory_xact_lock_shared({_FENCE_LOCK_KEY})")
_LOCK_FENCE_EXCLUSIVE = text(f"SELECT pg_advisory_xact_lock({_FENCE_LOCK_KEY})")

_FENCES = text("""
SELECT subject_hash, erased_at, seq_floor FROM erasure_fences
WHERE subject_hash = ANY(:hashes)
""")

_SET_FENCE = text("""
INSERT INTO erasure_fences (subject_hash, erased_at, seq_floor)
VALUES (:hash, now(), :seq_floor)
ON CONFLICT (subject_hash) DO UPDATE
SET erased_at = greatest(erasure_fences.erased_at, EXCLUDED.erased_at),
    seq_floor = greatest(erasure_fences.seq_floor, EXCLUDED.seq_floor)
RETURNING erased_at
""")

_RUN_BEGAN = text("SELECT created_at FROM runs WHERE run_id = :run_id")
_CONVERSATION_BEGAN = text("SELECT created_at FROM conversations WHERE id = :id")


def lock_fences_shared(conn: Connection) -> None:
    conn.execute(_LOCK_FENCE_SHARED)


def fences_for(conn: Connection, hashes: list[str]) -> list[dict[str, Any]]:
    """The fences of these subject hashes. Call after `lock_fences_shared`, in a statement
    of its own (READ COMMITTED takes the snapshot when a statement starts)."""
    if not hashes:
        return []
    return [dict(r._mapping) for r in conn.execute(_FENCES, {"hashes": hashes})]


def run_began_at(conn: Connection, run_id: str) -> datetime | None:
    return conn.execute(_RUN_BEGAN, {"run_id": run_id}).scalar()


def conversation_began_at(conn: Connection, conversation_id: str) -> datetime | None:
    return conn.execute(_CONVERSATION_BEGAN, {"id": conversation_id}).scalar()


def set_fence(conn: Connection, subject_hash: str, seq_floor: int) -> datetime:
    """Set (or move forward) a subject's fence; waits for writes in flight to commit."""
    conn.execute(_LOCK_FENCE_EXCLUSIVE)
    return conn.execute(_SET_FENCE, {"hash": subject_hash, "seq_floor": seq_floor}).scalar_one()
