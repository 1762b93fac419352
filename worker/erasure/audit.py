"""The audit record of every erasure and export (`erasures`, `exports`; SQL in
db/queries/audit.py): written before the work starts and finished with its counts — `done`,
or `failed` with the error's type. Who asked, the subject's kind and keyed hash; never an id
or any text."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from db.connector import Database
from db.queries.audit import finish_audit, start_audit
from worker.erasure.subject import Subject

MAX_REQUESTED_BY = 200
REQUESTED_BY_ERROR = f"requested_by must name who asked (1-{MAX_REQUESTED_BY} characters)"


def valid_requester(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and len(value) <= MAX_REQUESTED_BY


@dataclass
class AuditRecord:
    id: int
    # What the record is finished with; the work replaces or updates it as it goes, so a
    # failure records what was done before it.
    counts: Mapping[str, int] = field(default_factory=dict)


@contextmanager
def audited(db: Database, table: str, subject: Subject,
            requested_by: str) -> Iterator[AuditRecord]:
    """An audit record around the work in the `with` block."""
    if not valid_requester(requested_by):
        raise ValueError(REQUESTED_BY_ERROR)
    with db.transaction() as conn:
        record = AuditRecord(start_audit(conn, subject.kind, subject.hash, requested_by,
                                         table=table))
    try:
        yield record
    except Exception as exc:
        with db.transaction() as conn:
            finish_audit(conn, record.id, "failed", json.dumps(dict(record.counts)),
                         type(exc).__name__, table=table)
        raise
    with db.transaction() as conn:
        finish_audit(conn, record.id, "done", json.dumps(dict(record.counts)), None,
                     table=table)
