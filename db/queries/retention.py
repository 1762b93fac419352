"""Retention pages (worker/manager/retention.py): each statement deletes (or, for retired
notes, erases) at most `limit` rows past a cutoff the caller computed from its injected
clock. Rows are picked with `FOR UPDATE SKIP LOCKED` (`FOR NO KEY UPDATE` where a row is
only changed), so a page never waits for a write and a write waits at most for one short
page on a row nobody has touched for the whole retention window."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, TextClause, text

from db.enums import INJECTABLE_SQL, CycleStatus, NoteStatus

# Retired: left the injectable set for good (the statuses whose content retention erases).
RETIRED_SQL = (f"status IN ('{NoteStatus.ARCHIVED.value}', "
               f"'{NoteStatus.REVOKED.value}')")
_PENDING_CANDIDATE = "candidate"
_RUNNING = CycleStatus.RUNNING.value
_SKIPPED = CycleStatus.SKIPPED.value

# --- runs and their write log ----------------------------------------------------------------

# Runs idle since the cutoff (created and last written before it), with no candidate still
# awaiting promotion, each under the write path's own run lock. `try` never waits: a run a
# write holds is skipped, and a write arriving now waits for this page's commit only.
# Idleness is checked again by the statements below: this statement's snapshot predates
# the locks it takes, so a write committed in between is seen only by a later statement.
_LOCK_IDLE_RUNS = text(f"""
SELECT run_id FROM (
    SELECT r.run_id FROM runs r
    WHERE r.created_at < :cutoff AND r.updated_at < :cutoff
      AND NOT EXISTS (SELECT 1 FROM memory_candidates c
                      WHERE c.run_id = r.run_id AND c.status = '{_PENDING_CANDIDATE}')
    ORDER BY r.created_at, r.run_id
    LIMIT :limit
) AS idle
WHERE pg_try_advisory_xact_lock(hashtextextended('memory.run:' || run_id, 0))
""")  # noqa: S608 - our own constants only

_DELETE_WRITE_LOG = text("""
WITH doomed AS (
    SELECT w.run_id, w.seq FROM write_log w JOIN runs r ON r.run_id = w.run_id
    WHERE w.run_id = ANY(CAST(:run_ids AS text[])) AND r.updated_at < :cutoff
      AND w.applied_at < :cutoff
    ORDER BY w.run_id, w.seq
    LIMIT :limit
    FOR UPDATE OF w SKIP LOCKED
)
DELETE FROM write_log w USING doomed d WHERE w.run_id = d.run_id AND w.seq = d.seq
""")

# Runs whose log is now empty. A decided candidate (promoted: its note has its own lineage;
# rejected: internal memory nobody wanted) goes with its run; deleting it here, not by the
# cascade, is what lets the page count it.
_EMPTY_RUNS = f"""
    SELECT r.run_id FROM runs r
    WHERE r.run_id = ANY(CAST(:run_ids AS text[])) AND r.updated_at < :cutoff
      AND NOT EXISTS (SELECT 1 FROM write_log w WHERE w.run_id = r.run_id)
      AND NOT EXISTS (SELECT 1 FROM memory_candidates c
                      WHERE c.run_id = r.run_id AND c.status = '{_PENDING_CANDIDATE}')
"""  # noqa: S608
_DELETE_DECIDED_CANDIDATES = text(f"""
DELETE FROM memory_candidates c
WHERE c.run_id IN ({_EMPTY_RUNS}) AND c.status <> '{_PENDING_CANDIDATE}'
""")  # noqa: S608
_DELETE_RUNS = text(f"DELETE FROM runs WHERE run_id IN ({_EMPTY_RUNS})")  # noqa: S608


def prune_runs_page(conn: Connection, *, cutoff: datetime,
                    limit: int) -> tuple[int, int, int, int]:
    """(runs locked, write-log rows, decided candidates, runs) of one page."""
    run_ids = [row.run_id for row in conn.execute(_LOCK_IDLE_RUNS,
                                                  {"cutoff": cutoff, "limit": limit})]
    if not run_ids:
        return 0, 0, 0, 0
    params = {"run_ids": run_ids, "cutoff": cutoff, "limit": limit}
    logged = conn.execute(_DELETE_WRITE_LOG, params).rowcount
    candidates = conn.execute(_DELETE_DECIDED_CANDIDATES, params).rowcount
    runs = conn.execute(_DELETE_RUNS, params).rowcount
    return len(run_ids), logged, candidates, runs


# --- trace events ----------------------------------------------------------------------------

def _delete_by_age(table: str) -> TextClause:
    """The oldest page of rows created before the cutoff (a `created_at` index serves it)."""
    return text(f"""
WITH doomed AS (
    SELECT id FROM {table} WHERE created_at < :cutoff
    ORDER BY created_at, id LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
DELETE FROM {table} t USING doomed d WHERE t.id = d.id
""")  # noqa: S608 - table names are constants


_DELETE_TRACE = _delete_by_age("trace_events")


def prune_trace_page(conn: Connection, *, cutoff: datetime, limit: int) -> int:
    return conn.execute(_DELETE_TRACE, {"cutoff": cutoff, "limit": limit}).rowcount


# --- conversation messages -------------------------------------------------------------------

# Only messages extraction has read (at or below their conversation's watermark). The
# conversation row always stays: deleting it would leave a tombstone, and stale-reference
# pruning would then archive every note extracted from it.
_DELETE_MESSAGES = text("""
WITH doomed AS (
    SELECT m.id FROM conversation_messages m JOIN conversations c ON c.id = m.conversation_id
    WHERE m.created_at < :cutoff AND m.ingested_seq <= c.extracted_through_seq
    ORDER BY m.ingested_seq LIMIT :limit
    FOR UPDATE OF m SKIP LOCKED
)
DELETE FROM conversation_messages m USING doomed d WHERE m.id = d.id
""")


def prune_messages_page(conn: Connection, *, cutoff: datetime, limit: int) -> int:
    return conn.execute(_DELETE_MESSAGES, {"cutoff": cutoff, "limit": limit}).rowcount


# --- retired notes' content ------------------------------------------------------------------

# The row stays (id, scope, status, validity, superseded/consolidated references: the
# lineage); text, content hash and vector go. `FOR NO KEY UPDATE` leaves the key-share
# locks of concurrent inserts that reference the note (note_events, write_log) unblocked.
_ERASE_CONTENT = text(f"""
WITH doomed AS (
    SELECT id, content_hash FROM notes
    WHERE {RETIRED_SQL} AND content_erased_at IS NULL
      AND coalesce(valid_to, updated_at) < :cutoff
    ORDER BY coalesce(valid_to, updated_at), id LIMIT :limit
    FOR NO KEY UPDATE SKIP LOCKED
), erased AS (
    UPDATE notes n SET note = NULL, content_hash = NULL, embedding = NULL,
        embedding_model = NULL, content_erased_at = :now, updated_at = :now
    FROM doomed d WHERE n.id = d.id AND n.{RETIRED_SQL}
    RETURNING n.id
), memos AS (
    -- Judge memos decided on an erased text (a live note with the same text loses its memo
    -- too: it is a cache, asked again).
    DELETE FROM judge_memo
    WHERE text_hashes && ARRAY(SELECT content_hash FROM doomed WHERE content_hash IS NOT NULL)
    RETURNING 1
)
SELECT (SELECT count(*) FROM erased) AS erased, (SELECT count(*) FROM memos) AS memos
""")  # noqa: S608


def erase_retired_content_page(conn: Connection, *, cutoff: datetime, now: datetime,
                               limit: int) -> tuple[int, int]:
    """(notes whose content was erased, judge memos deleted with it)."""
    row = conn.execute(_ERASE_CONTENT, {"cutoff": cutoff, "now": now, "limit": limit}).one()
    return int(row.erased), int(row.memos)


# --- judge memos and dead letters, by age ----------------------------------------------------

_DELETE_OLD_MEMOS = text("""
WITH doomed AS (
    SELECT kind, key FROM judge_memo WHERE created_at < :cutoff
    ORDER BY created_at LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
DELETE FROM judge_memo j USING doomed d WHERE j.kind = d.kind AND j.key = d.key
""")

# A dead letter is the raw message (memory text included) kept for an operator to look at.
_DELETE_DEAD_LETTERS = _delete_by_age("dead_letters")


def prune_memos_page(conn: Connection, *, cutoff: datetime, limit: int) -> int:
    return conn.execute(_DELETE_OLD_MEMOS, {"cutoff": cutoff, "limit": limit}).rowcount


def prune_dead_letters_page(conn: Connection, *, cutoff: datetime, limit: int) -> int:
    return conn.execute(_DELETE_DEAD_LETTERS, {"cutoff": cutoff, "limit": limit}).rowcount


# --- note events -----------------------------------------------------------------------------

# A page of events by id from a cursor: of those older than the cutoff, the ones of notes
# retired for longer than the window go, except each note's latest event (why it is
# retired); a note retired recently keeps its whole history for the window. Events of
# injectable notes are kept whatever their age, so they would sit at the head of any
# age-ordered scan forever; the cursor visits every event in turn instead (wrapping around),
# so each page costs its own rows only.
_TRIM_EVENTS = text(f"""
WITH page AS (
    SELECT id, note_id, created_at FROM note_events
    WHERE id > :after ORDER BY id LIMIT :limit
), doomed AS (
    SELECT e.id FROM page p
    JOIN note_events e ON e.id = p.id
    JOIN notes n ON n.id = p.note_id
    WHERE p.created_at < :cutoff AND NOT n.{INJECTABLE_SQL}
      AND coalesce(n.valid_to, n.updated_at) < :cutoff
      AND EXISTS (SELECT 1 FROM note_events l WHERE l.note_id = p.note_id AND l.id > p.id)
    FOR UPDATE OF e SKIP LOCKED
), deleted AS (
    DELETE FROM note_events e USING doomed d WHERE e.id = d.id RETURNING e.id
)
SELECT (SELECT max(id) FROM page) AS last_id, (SELECT count(*) FROM page) AS seen,
       (SELECT bool_and(created_at >= :cutoff) FROM page) AS all_young,
       (SELECT count(*) FROM deleted) AS deleted
""")  # noqa: S608


def trim_note_events_page(conn: Connection, *, after: int, cutoff: datetime,
                          limit: int) -> tuple[int | None, int, bool, int]:
    """(last id seen, events seen, whether all of them were inside the window, deleted)."""
    row = conn.execute(_TRIM_EVENTS, {"after": after, "cutoff": cutoff,
                                      "limit": limit}).one()
    last = int(row.last_id) if row.last_id is not None else None
    return last, int(row.seen), bool(row.all_young), int(row.deleted)


# --- manager cycles --------------------------------------------------------------------------

# The newest `keep` rows always stay, and so do the rows the next cycle reads: the last
# maintenance (when maintenance is next due, and the new notes counted since) and the last
# watermarks (where paged phases continue). A running cycle's row is never touched.
_DELETE_CYCLES = text(f"""
WITH kept AS (
    (SELECT id FROM manager_cycles ORDER BY id DESC LIMIT :keep)
    UNION ALL
    (SELECT id FROM manager_cycles WHERE maintenance AND status <> '{_SKIPPED}'
     ORDER BY started_at DESC LIMIT 1)
    UNION ALL
    (SELECT id FROM manager_cycles WHERE status <> '{_SKIPPED}' AND watermarks <> '{{}}'::jsonb
     ORDER BY id DESC LIMIT 1)
), doomed AS (
    SELECT id FROM manager_cycles
    WHERE started_at < :cutoff AND status <> '{_RUNNING}' AND id NOT IN (SELECT id FROM kept)
    ORDER BY id LIMIT :limit
    FOR UPDATE SKIP LOCKED
)
DELETE FROM manager_cycles c USING doomed d WHERE c.id = d.id
""")  # noqa: S608


def prune_cycles_page(conn: Connection, *, cutoff: datetime, keep: int, limit: int) -> int:
    return conn.execute(_DELETE_CYCLES, {"cutoff": cutoff, "keep": keep,
                                         "limit": limit}).rowcount
