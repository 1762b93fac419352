"""Export a subject: everything held about it as JSON Lines, streamed; an audit record.

The subject is the one an erasure takes (worker/erasure/subject.py) and its rows are matched
by the same predicates (db/queries/erasure.py), so an export shows exactly what `forget`
would delete of notes, examples, conversations and memory candidates.

The file, one JSON object per line, each with a `type`:

- `header` — `format_version`, `exported_at` (the snapshot's time), `subject` (`kind`, `id`,
  `agent`, `company`: the subject in clear, it is the subject's own file) and `audit_id`;
- `note` — every status, its `note_type` (Preference, Context, …), scope, text, dates,
  scores, provenance and `history` (its note events, oldest first); never the vector;
- `example`; `conversation`, each followed by its `conversation_message`s;
- `candidate` — memory candidates of every status (pending, promoted, rejected);
- `trailer` — `counts` per table. A file without it is incomplete.

Everything is read in one REPEATABLE READ, read-only transaction (one consistent snapshot;
the counts match the lines) through server-side cursors, and Postgres renders each record
as its line (db/queries/export.py): memory stays bounded, and small, whatever the subject
holds. Timestamps are ISO 8601 in UTC.

The audit record (`exports`, 0015) is written when the export starts and finished with the
counts (or `failed` and the error's type); like `erasures`, it holds the subject's kind and
keyed hash, never its ids or any text.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TextIO

from db.connector import Database
from db.queries.export import EXPORTED, RECORD_TABLES, STREAM_BATCH, stream_subject_records
from worker.erasure.audit import audited
from worker.erasure.erase import predicate_key
from worker.erasure.subject import Subject

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
AUDIT_TABLE = "exports"
# The trailer's counts, in this order.
COUNTED = ("notes", "note_events", "examples", "conversations", "conversation_messages",
           "memory_candidates")


@dataclass
class ExportReport:
    subject_kind: str
    subject_hash: str
    counts: dict[str, int] = field(default_factory=dict)
    audit_id: int | None = None

    @property
    def lines(self) -> int:
        """Lines written: header, one per record (events are inside their note), trailer."""
        return 2 + sum(n for table, n in self.counts.items() if table != "note_events")

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "subject_kind": self.subject_kind,
                "subject_hash": self.subject_hash, "counts": dict(self.counts),
                "audit_id": self.audit_id}


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"cannot export a {type(value).__name__}")


def _line(out: TextIO, record: dict[str, Any]) -> None:
    out.write(json.dumps(record, ensure_ascii=False, default=_plain, separators=(",", ":"))
              + "\n")


def _write_records(conn: Any, subject: Subject, out: TextIO, counts: dict[str, int],
                   batch: int) -> None:
    key, params = predicate_key(subject), subject.sql_params()
    for what in EXPORTED:
        for kind, events, line in stream_subject_records(conn, what, key, params,
                                                         batch=batch):
            out.write(line)
            out.write("\n")
            counts[RECORD_TABLES[kind]] += 1
            counts["note_events"] += events


def export_subject(db: Database, subject: Subject, out: TextIO, *, requested_by: str,
                   batch: int = STREAM_BATCH) -> ExportReport:
    """Write everything held about `subject` to `out` as JSON Lines (see the module doc);
    the audit record's id and the counts per table come back."""
    report = ExportReport(subject.kind, subject.hash)
    counts = dict.fromkeys(COUNTED, 0)
    with audited(db, AUDIT_TABLE, subject, requested_by) as audit:
        report.audit_id, audit.counts = audit.id, counts
        with db.connect() as conn:
            conn.execution_options(isolation_level="REPEATABLE READ",
                                   postgresql_readonly=True)
            with conn.begin():
                # Records render their timestamps in the session's zone: UTC, always.
                conn.exec_driver_sql("SET LOCAL TIME ZONE 'UTC'")
                exported_at = conn.exec_driver_sql("SELECT now()").scalar_one()
                _line(out, {"type": "header", "format_version": FORMAT_VERSION,
                            "exported_at": exported_at,
                            "subject": {"kind": subject.kind, "id": subject.id,
                                        "agent": subject.agent_id,
                                        "company": subject.company_id},
                            "audit_id": report.audit_id})
                _write_records(conn, subject, out, counts, batch)
        _line(out, {"type": "trailer", "counts": counts})
        out.flush()
    report.counts = counts
    log.info("export %s of a %s done: %s", report.audit_id, subject.kind, counts)
    return report


def export_filename(subject: Subject, now: datetime) -> str:
    """A file name that says what it is without the subject's id (a directory listing is
    not the place for it): kind, a prefix of the keyed hash, the time, a random suffix."""
    return (f"export-{subject.kind}-{subject.hash[:16]}-{now:%Y%m%dT%H%M%SZ}-"
            f"{secrets.token_hex(4)}.jsonl")


def export_to_file(db: Database, subject: Subject, path: Path, *,
                   requested_by: str) -> ExportReport:
    """Export into `path`, readable by its owner only. Written under a `.partial` name and
    renamed when complete, so a file under the final name is always a whole export; a
    failed export leaves no file."""
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)  # left by an export whose process died
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            report = export_subject(db, subject, out, requested_by=requested_by)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return report


def export_into(db: Database, subject: Subject, directory: Path, *,
                requested_by: str) -> tuple[Path, ExportReport]:
    """Export into a new file of `directory` (created, owner-only, when missing)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / export_filename(subject, datetime.now(UTC))
    return path, export_to_file(db, subject, path, requested_by=requested_by)


def prune_export_files(directory: Path, cutoff: datetime, *, limit: int) -> int:
    """Delete export files (and leftovers of interrupted exports) last written before
    `cutoff`: each is a subject's memory in clear, meant to be delivered, not kept. Only
    files named as `export_filename` names them are touched. Returns how many went."""
    if not directory.is_dir():
        return 0
    deleted = 0
    for path in sorted(directory.glob("export-*.jsonl*")):
        if deleted >= limit:
            break
        if not path.name.endswith((".jsonl", ".jsonl.partial")) or not path.is_file():
            continue
        try:
            if datetime.fromtimestamp(path.stat().st_mtime, UTC) < cutoff:
                path.unlink()
                deleted += 1
        except FileNotFoundError:
            continue
    return deleted
