"""Forgetting on request: the fences that keep an erased subject's late writes out, and the
audit records of every erasure (0012) and export (0015). None holds a subject's id in clear."""

from __future__ import annotations

from sqlalchemy import BigInteger, CheckConstraint, Column, Identity, Index, Table, Text
from sqlalchemy.dialects.postgresql import JSONB

from db.models.base import EMPTY_OBJECT, metadata, ts

ERASURE_SUBJECT_KINDS = ("user", "company", "agent", "conversation")
ERASURE_STATUSES = ("running", "done", "failed")

erasure_fences = Table(
    "erasure_fences",
    metadata,
    Column("subject_hash", Text, primary_key=True),
    ts("erased_at", nullable=False),
    Column("seq_floor", BigInteger, nullable=False),
)


def _audit_table(name: str) -> Table:
    """`erasures` and `exports`: who asked, the subject's kind and keyed hash, the status,
    counts per table, when."""
    table = Table(
        name,
        metadata,
        Column("id", BigInteger, Identity(always=False), primary_key=True),
        Column("subject_kind", Text, nullable=False),
        Column("subject_hash", Text, nullable=False),
        Column("requested_by", Text, nullable=False),
        Column("status", Text, nullable=False),
        Column("counts", JSONB, nullable=False, server_default=EMPTY_OBJECT),
        Column("error", Text),
        ts("started_at", nullable=False),
        ts("finished_at"),
        CheckConstraint("subject_kind IN ('user', 'company', 'agent', 'conversation')"),
        CheckConstraint("length(requested_by) BETWEEN 1 AND 200"),
        CheckConstraint("status IN ('running', 'done', 'failed')"),
    )
    Index(f"{name}_subject_idx", table.c.subject_hash, table.c.started_at)
    return table


erasures = _audit_table("erasures")
exports = _audit_table("exports")
