"""The Memory Manager's records: cycles, note lineage events, judge memos."""

from __future__ import annotations

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Identity,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID

from db.enums import CycleStatus, sql_in
from db.models.base import EMPTY_OBJECT, metadata, ts

manager_cycles = Table(
    "manager_cycles",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("status", Text, nullable=False),
    Column("forced", Boolean, nullable=False, server_default=text("false")),
    Column("maintenance", Boolean, nullable=False, server_default=text("false")),
    ts("started_at", nullable=False),
    ts("finished_at"),
    Column("phases", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    Column("counts", JSONB, nullable=False, server_default=EMPTY_OBJECT),
    Column("watermarks", JSONB, nullable=False, server_default=EMPTY_OBJECT),
    Column("error", Text),
    Column("task_id", Text),
    Column("model_calls", Integer, nullable=False, server_default=text("0")),
    Column("model_tokens", Integer, nullable=False, server_default=text("0")),
    CheckConstraint(f"status IN ({sql_in(tuple(CycleStatus))})"),
)
Index("manager_cycles_started_idx", manager_cycles.c.started_at)
Index(
    "manager_cycles_maintenance_idx",
    manager_cycles.c.started_at,
    postgresql_where=text(f"maintenance AND status <> '{CycleStatus.SKIPPED.value}'"),
)

NOTE_EVENT_ACTIONS = (
    "hardened", "deduplicated", "reinforced", "revoked", "flagged", "consolidated", "created",
    "archived", "expired", "decayed", "scored", "pruned", "restored",
)

note_events = Table(
    "note_events",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("note_id", UUID(as_uuid=True), ForeignKey("notes.id", ondelete="CASCADE"),
           nullable=False),
    Column("action", Text, nullable=False),
    Column("from_status", Text),
    Column("to_status", Text),
    Column("actor", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("related_note_ids", ARRAY(UUID(as_uuid=True)), nullable=False,
           server_default=text("'{}'")),
    Column("cycle_id", BigInteger),
    Column("detail", JSONB, nullable=False, server_default=EMPTY_OBJECT),
    ts("created_at", defaultNOW=True, nullable=False),
    CheckConstraint(f"action IN ({sql_in(NOTE_EVENT_ACTIONS)})"),
)
Index("note_events_note_idx", note_events.c.note_id, note_events.c.id)

judge_memo = Table(
    "judge_memo",
    metadata,
    Column("kind", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("decision", Text, nullable=False),
    Column("judge", Text, nullable=False),
    ts("created_at", defaultNOW=True, nullable=False),
    # The content hashes of the texts it was decided on: erasing a text deletes its memos.
    Column("text_hashes", ARRAY(Text), nullable=False, server_default=text("'{}'")),
    PrimaryKeyConstraint("kind", "key"),
    CheckConstraint("kind IN ('pair', 'cluster')"),
)
Index("judge_memo_text_hashes_idx", judge_memo.c.text_hashes, postgresql_using="gin")
Index("judge_memo_created_idx", judge_memo.c.created_at)

# Messages moved aside instead of handled (worker/app/poison.py): `memory-worker dead-letters`.
