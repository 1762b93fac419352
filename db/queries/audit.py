"""The audit records of erasures (0012) and exports (0015): one shape — who asked, the
subject's kind and keyed hash (never its ids or any text), the status, counts per table,
when."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Connection, TextClause, text

AUDIT_TABLES = ("erasures", "exports")


@cache
def _audit_sql(table: str) -> tuple[TextClause, TextClause, TextClause]:
    if table not in AUDIT_TABLES:
        raise ValueError(f"not an audit table: {table}")
    start = text(f"""
INSERT INTO {table} (subject_kind, subject_hash, requested_by, status, started_at)
VALUES (:kind, :hash, :requested_by, 'running', now()) RETURNING id
""")  # noqa: S608 - constants
    finish = text(f"""
UPDATE {table} SET status = :status, counts = CAST(:counts AS jsonb), error = :error,
    finished_at = now()
WHERE id = :id
""")  # noqa: S608 - constants
    listing = text(f"""
SELECT id, subject_kind, subject_hash, requested_by, status, counts, error, started_at,
       finished_at
FROM {table} ORDER BY id DESC LIMIT :limit
""")  # noqa: S608 - constants
    return start, finish, listing


def start_audit(conn: Connection, kind: str, subject_hash: str, requested_by: str, *,
                table: str = "erasures") -> int:
    return int(conn.execute(_audit_sql(table)[0], {
        "kind": kind, "hash": subject_hash, "requested_by": requested_by}).scalar_one())


def finish_audit(conn: Connection, audit_id: int, status: str, counts_json: str,
                 error: str | None, *, table: str = "erasures") -> None:
    conn.execute(_audit_sql(table)[1], {"id": audit_id, "status": status,
                                        "counts": counts_json, "error": error})


def list_audit(conn: Connection, limit: int, *, table: str = "erasures") -> list[dict[str, Any]]:
    return [dict(r._mapping) for r in conn.execute(_audit_sql(table)[2], {"limit": limit})]


@cache
def _interrupted_sql(table: str) -> TextClause:
    if table not in AUDIT_TABLES:
        raise ValueError(f"not an audit table: {table}")
    return text(f"""
UPDATE {table} SET status = 'failed', error = :error, finished_at = :now
WHERE status = 'running' AND started_at < :cutoff
""")  # noqa: S608 - constants


INTERRUPTED_ERROR = "interrupted: the process running it ended before it finished"


def close_interrupted_audits(conn: Connection, *, cutoff: Any, now: Any) -> int:
    """Records still `running` that started before `cutoff`: their process died (a
    redelivered erasure or export ran again under a new record). Marked `failed`, so the
    log never shows an erasure as forever in progress."""
    return sum(int(conn.execute(_interrupted_sql(table), {
        "error": INTERRUPTED_ERROR, "cutoff": cutoff, "now": now}).rowcount or 0)
        for table in AUDIT_TABLES)
