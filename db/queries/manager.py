"""The Memory Manager's bookkeeping: cycles, single-flight, judge memo, and note changes
with their lineage events."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from db.enums import CycleStatus

# --- cycles ----------------------------------------------------------------------------------

# Session-level: held for the whole cycle on a dedicated connection, released when it closes
# (also when the worker process dies — the lock cannot outlive the cycle that took it).
_TRY_CYCLE_LOCK = text("SELECT pg_try_advisory_lock(hashtextextended('memory.manager.cycle', 0))")
_RELEASE_CYCLE_LOCK = text(
    "SELECT pg_advisory_unlock(hashtextextended('memory.manager.cycle', 0))")

_ABANDON_RUNNING = text("""
UPDATE manager_cycles SET status = 'failed', finished_at = :now,
    error = 'abandoned: the process running it stopped before it finished'
WHERE status = 'running'
""")

_INSERT_CYCLE = text("""
INSERT INTO manager_cycles (status, forced, maintenance, started_at, finished_at, error, task_id)
VALUES (:status, :forced, false, :now, :finished_at, :error, :task_id)
RETURNING id
""")

_UPDATE_CYCLE = text("""
UPDATE manager_cycles SET status = :status, maintenance = :maintenance,
    finished_at = :finished_at, phases = CAST(:phases AS jsonb),
    counts = CAST(:counts AS jsonb), watermarks = CAST(:watermarks AS jsonb), error = :error,
    model_calls = :model_calls, model_tokens = :model_tokens
WHERE id = :id
""")

_LAST_MAINTENANCE = text("""
SELECT id, started_at FROM manager_cycles
WHERE maintenance AND status <> 'skipped'
ORDER BY started_at DESC LIMIT 1
""")

# New notes that reached the pool (hardened or extracted) in the cycles after a maintenance
# cycle. The maintenance cycle's own new notes do not count: its maintenance phases ran after
# its hardening and extraction and have already seen them.
_NEW_NOTES_AFTER = text("""
SELECT coalesce(sum((counts ->> 'new_notes')::bigint), 0) AS new_notes
FROM manager_cycles
WHERE status <> 'skipped' AND id > :cycle_id
""")

_LAST_WATERMARKS = text("""
SELECT watermarks FROM manager_cycles
WHERE status <> 'skipped' AND watermarks <> '{}'::jsonb
ORDER BY id DESC LIMIT 1
""")

_LIST_CYCLES = text("""
SELECT id, status, forced, maintenance, started_at, finished_at, phases, counts, watermarks,
       error, task_id, model_calls, model_tokens
FROM manager_cycles ORDER BY id DESC LIMIT :limit
""")


def try_cycle_lock(conn: Connection) -> bool:
    return bool(conn.execute(_TRY_CYCLE_LOCK).scalar())


def release_cycle_lock(conn: Connection) -> None:
    conn.execute(_RELEASE_CYCLE_LOCK)


def abandon_running_cycles(conn: Connection, now: datetime) -> int:
    return conn.execute(_ABANDON_RUNNING, {"now": now}).rowcount


def insert_cycle(conn: Connection, *, status: CycleStatus, forced: bool, now: datetime,
                 task_id: str | None, error: str | None = None) -> int:
    finished = now if status is CycleStatus.SKIPPED else None
    return int(conn.execute(_INSERT_CYCLE, {
        "status": status.value, "forced": forced, "now": now, "finished_at": finished,
        "error": error, "task_id": task_id,
    }).scalar_one())


def update_cycle(conn: Connection, cycle_id: int, *, status: CycleStatus, maintenance: bool,
                 finished_at: datetime | None, phases: list[dict[str, Any]],
                 counts: dict[str, Any], watermarks: dict[str, Any], error: str | None,
                 model_calls: int, model_tokens: int) -> None:
    conn.execute(_UPDATE_CYCLE, {
        "id": cycle_id, "status": status.value, "maintenance": maintenance,
        "finished_at": finished_at, "phases": json.dumps(phases), "counts": json.dumps(counts),
        "watermarks": json.dumps(watermarks), "error": error, "model_calls": model_calls,
        "model_tokens": model_tokens,
    })


def last_maintenance(conn: Connection) -> tuple[int, datetime] | None:
    """The id and start of the last maintenance cycle, if any."""
    row = conn.execute(_LAST_MAINTENANCE).first()
    return None if row is None else (int(row.id), row.started_at)


def new_notes_after_cycle(conn: Connection, cycle_id: int) -> int:
    return int(conn.execute(_NEW_NOTES_AFTER, {"cycle_id": cycle_id}).scalar_one())


def last_watermarks(conn: Connection) -> dict[str, Any]:
    row = conn.execute(_LAST_WATERMARKS).first()
    return dict(row.watermarks) if row is not None else {}


def list_cycles(conn: Connection, limit: int) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in conn.execute(_LIST_CYCLES, {"limit": limit})]


# --- judge memo ------------------------------------------------------------------------------

_MEMO_GET = text("SELECT decision, judge FROM judge_memo WHERE kind = :kind AND key = :key")
_MEMO_PUT = text("""
INSERT INTO judge_memo (kind, key, decision, judge, created_at, text_hashes)
VALUES (:kind, :key, :decision, :judge, :now, CAST(:text_hashes AS text[]))
ON CONFLICT (kind, key) DO UPDATE SET decision = EXCLUDED.decision, judge = EXCLUDED.judge,
    created_at = EXCLUDED.created_at, text_hashes = EXCLUDED.text_hashes
""")


def memo_get(conn: Connection, kind: str, key: str) -> tuple[str, str] | None:
    row = conn.execute(_MEMO_GET, {"kind": kind, "key": key}).first()
    return None if row is None else (row.decision, row.judge)


def memo_put(conn: Connection, kind: str, key: str, decision: str, judge: str,
             now: datetime, text_hashes: list[str]) -> None:
    """`text_hashes`: the content hashes of the texts decided on (so erasing one of them
    deletes the memo)."""
    conn.execute(_MEMO_PUT, {"kind": kind, "key": key, "decision": decision, "judge": judge,
                             "now": now, "text_hashes": sorted(set(text_hashes))})


# --- note changes and lineage ----------------------------------------------------------------

# Row locks in id order before any multi-row update: the read path's access-stat bumps lock
# rows in the same order, so the two can never deadlock.
_LOCK_NOTES = text("""
SELECT id, status FROM notes WHERE id = ANY(CAST(:ids AS uuid[])) ORDER BY id FOR UPDATE
""")

# Serializes with the write path, which changes notes of a scope only under this lock.
# The sorted subquery makes every holder of several scope locks take them in one order.
_LOCK_SCOPES = text("""
SELECT count(pg_advisory_xact_lock(hashtextextended('memory.scope:' || k::text, 0)))
FROM (SELECT DISTINCT k FROM unnest(CAST(:keys AS uuid[])) AS k ORDER BY k) AS s
""")

# One row per note. A note leaving the injectable set ends its validity; a note becoming
# Active loses its TTL and starts its decay clock.
_APPLY_CHANGES = text("""
WITH t AS (
    SELECT * FROM unnest(
        CAST(:ids AS uuid[]), CAST(:expected AS text[]), CAST(:statuses AS text[]),
        CAST(:into AS uuid[]), CAST(:superseded AS uuid[]), CAST(:flags AS text[]),
        CAST(:reinforce AS integer[]), CAST(:hardened AS boolean[]))
        AS t(id, expected, status, into_id, superseded_by, flag, reinforce, hardened)
)
UPDATE notes n SET
    status = coalesce(t.status, n.status),
    consolidated_into_note_id = coalesce(t.into_id, n.consolidated_into_note_id),
    superseded_by = coalesce(t.superseded_by, n.superseded_by),
    review_flag = coalesce(t.flag, n.review_flag),
    valid_to = CASE WHEN t.status IN ('Archived', 'Revoked')
                    THEN greatest(n.valid_from, :now) ELSE n.valid_to END,
    expires_at = CASE WHEN t.status = 'Active' THEN NULL ELSE n.expires_at END,
    hardened_at = CASE WHEN t.hardened THEN :now ELSE n.hardened_at END,
    retention = CASE WHEN t.hardened THEN 1 ELSE n.retention END,
    retention_at = CASE WHEN t.hardened THEN :now ELSE n.retention_at END,
    access_count = n.access_count + t.reinforce,
    access_count_at_decay = CASE WHEN t.hardened THEN n.access_count + t.reinforce
                                 ELSE n.access_count_at_decay END,
    last_accessed_at = CASE WHEN t.reinforce > 0 THEN :now ELSE n.last_accessed_at END,
    updated_at = :now
FROM t
WHERE n.id = t.id AND n.status = t.expected
RETURNING n.id
""")

_INSERT_EVENTS = text("""
INSERT INTO note_events (note_id, action, from_status, to_status, actor, reason,
    related_note_ids, cycle_id, detail, created_at)
SELECT e.note_id, e.action, e.from_status, e.to_status, :actor, e.reason,
    CAST(e.related AS uuid[]), :cycle_id, CAST(e.detail AS jsonb), :now
FROM unnest(CAST(:note_ids AS uuid[]), CAST(:actions AS text[]), CAST(:from_statuses AS text[]),
    CAST(:to_statuses AS text[]), CAST(:reasons AS text[]), CAST(:related AS text[]),
    CAST(:details AS text[]))
    AS e(note_id, action, from_status, to_status, reason, related, detail)
""")


@dataclass
class NoteChange:
    """What one phase does to one note in one batch (merged when several decisions touch
    the same note, e.g. hardened and then reinforced by a later duplicate)."""

    note_id: uuid.UUID
    expected_status: str
    status: str | None = None
    consolidated_into: uuid.UUID | None = None
    superseded_by: uuid.UUID | None = None
    review_flag: str | None = None
    reinforce: int = 0
    hardened: bool = False


@dataclass(frozen=True)
class NoteEvent:
    note_id: uuid.UUID
    action: str
    reason: str
    from_status: str | None = None
    to_status: str | None = None
    related: tuple[uuid.UUID, ...] = ()
    detail: dict[str, Any] = field(default_factory=dict)


class ConcurrentChange(RuntimeError):
    """A note was not in the status the phase decided on (changed under it): retry the batch."""


def lock_scopes(conn: Connection, scope_keys: list[uuid.UUID]) -> None:
    if scope_keys:
        conn.execute(_LOCK_SCOPES, {"keys": scope_keys})


def lock_notes(conn: Connection, note_ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    if not note_ids:
        return {}
    return {row.id: row.status for row in conn.execute(_LOCK_NOTES, {"ids": note_ids})}


def apply_note_changes(conn: Connection, changes: list[NoteChange], now: datetime) -> int:
    if not changes:
        return 0
    updated = conn.execute(_APPLY_CHANGES, {
        "ids": [c.note_id for c in changes],
        "expected": [c.expected_status for c in changes],
        "statuses": [c.status for c in changes],
        "into": [c.consolidated_into for c in changes],
        "superseded": [c.superseded_by for c in changes],
        "flags": [c.review_flag for c in changes],
        "reinforce": [c.reinforce for c in changes],
        "hardened": [c.hardened for c in changes],
        "now": now,
    }).rowcount
    if updated != len(changes):
        raise ConcurrentChange(f"{len(changes) - updated} of {len(changes)} notes changed "
                               "under the phase")
    return updated


def insert_note_events(conn: Connection, events: list[NoteEvent], *, actor: str,
                       cycle_id: int | None, now: datetime) -> None:
    if not events:
        return
    conn.execute(_INSERT_EVENTS, {
        "note_ids": [e.note_id for e in events],
        "actions": [e.action for e in events],
        "from_statuses": [e.from_status for e in events],
        "to_statuses": [e.to_status for e in events],
        "reasons": [e.reason for e in events],
        "related": ["{" + ",".join(str(r) for r in e.related) + "}" for e in events],
        "details": [json.dumps(e.detail) for e in events],
        "actor": actor, "cycle_id": cycle_id, "now": now,
    })


_NOTE_HISTORY = text("""
SELECT 'event' AS source, e.created_at AS at, e.action, e.from_status, e.to_status, e.actor,
       e.reason, e.related_note_ids, e.cycle_id, e.detail, NULL::text AS run_id,
       NULL::bigint AS seq
FROM note_events e WHERE e.note_id = :id
UNION ALL
SELECT 'write' AS source, w.applied_at AS at, w.disposition AS action, NULL, NULL,
       'write' AS actor, w.reason, '{}'::uuid[], NULL, '{}'::jsonb, w.run_id, w.seq
FROM write_log w WHERE w.note_id = :id
ORDER BY at, source DESC
""")


def note_history(conn: Connection, note_id: uuid.UUID) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in conn.execute(_NOTE_HISTORY, {"id": note_id})]
