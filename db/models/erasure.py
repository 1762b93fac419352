"""Forgetting on request: the fences that keep an erased subject's late writes out, and the
audit record of every erasure (0012). Neither holds an erased id in clear."""

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

erasures = Table(
    "erasures",
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
Index("erasures_subject_idx", erasures.c.subject_hash, erasures.c.started_at)
