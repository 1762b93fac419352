"""Counts for operators: `memory-worker stats` and the metrics gauges."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from db.enums import AuthorType, NoteStatus

_OLDEST_PROVISIONAL = text(f"""
SELECT coalesce(extract(epoch FROM (now() - min(created_at))), 0) AS age
FROM notes
WHERE status = '{NoteStatus.PROVISIONAL.value}' AND author_type = '{AuthorType.AGENT.value}'
""")  # noqa: S608 - our own constants only

_BY_STATUS = text("SELECT status, count(*) AS n FROM notes GROUP BY status")

# Metrics are scraped every few seconds from every worker: above this many rows, counting by
# status (a scan of the whole table: ~0.65 s at 1M notes) gives way to the planner's
# statistics (autovacuum's ANALYZE keeps them within a few percent).
EXACT_COUNT_MAX_ROWS = 100_000

_ESTIMATED_ROWS = text("SELECT reltuples::bigint FROM pg_class WHERE oid = 'notes'::regclass")

_ESTIMATED_BY_STATUS = text("""
SELECT v.status, round(v.freq * c.reltuples)::bigint AS n
FROM pg_stats s
CROSS JOIN LATERAL unnest(s.most_common_vals::text::text[], s.most_common_freqs)
    AS v(status, freq)
CROSS JOIN (SELECT reltuples FROM pg_class WHERE oid = 'notes'::regclass) AS c
WHERE s.schemaname = current_schema() AND s.tablename = 'notes' AND s.attname = 'status'
""")

_BREAKDOWN = text("""
SELECT status, author_type, type, count(*) AS n
FROM notes GROUP BY status, author_type, type
ORDER BY status, author_type, type
""")

_LAST_CYCLE = text("""
SELECT id, status, maintenance, started_at, finished_at, error
FROM manager_cycles WHERE status <> 'skipped'
ORDER BY id DESC LIMIT 1
""")

_SKIPPED_CYCLES = text("SELECT count(*) FROM manager_cycles WHERE status = 'skipped'")

_WAITING_CONTINUATIONS = text("SELECT count(*) FROM chain_continuations")

_DEAD_LETTERS = text("SELECT count(*) FROM dead_letters")


def note_gauges(conn: Connection) -> tuple[float, dict[str, int]]:
    """The oldest provisional note's age, and notes by status: exact up to
    EXACT_COUNT_MAX_ROWS notes, estimated from the planner's statistics above."""
    age = float(conn.execute(_OLDEST_PROVISIONAL).scalar_one())
    estimated = int(conn.execute(_ESTIMATED_ROWS).scalar_one())  # -1: never analyzed
    by_status: dict[str, int] = {}
    if estimated > EXACT_COUNT_MAX_ROWS:
        by_status = {row.status: int(row.n) for row in conn.execute(_ESTIMATED_BY_STATUS)}
    if not by_status:
        by_status = {row.status: int(row.n) for row in conn.execute(_BY_STATUS)}
    for status in NoteStatus:
        by_status.setdefault(status.value, 0)
    return age, by_status


def overview(conn: Connection) -> dict[str, Any]:
    age, by_status = note_gauges(conn)
    breakdown = [dict(row._mapping) for row in conn.execute(_BREAKDOWN)]
    by_author: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for row in breakdown:
        by_author[row["author_type"]] = by_author.get(row["author_type"], 0) + row["n"]
        by_type[row["type"]] = by_type.get(row["type"], 0) + row["n"]
    last = conn.execute(_LAST_CYCLE).first()
    return {
        "notes_by_status": by_status,
        "notes_by_author": by_author,
        "notes_by_type": by_type,
        "oldest_provisional_age_s": round(age, 1),
        "last_cycle": dict(last._mapping) if last is not None else None,
        "skipped_cycles": int(conn.execute(_SKIPPED_CYCLES).scalar_one()),
        "waiting_continuations": int(conn.execute(_WAITING_CONTINUATIONS).scalar_one()),
        "dead_letters": int(conn.execute(_DEAD_LETTERS).scalar_one()),
    }
