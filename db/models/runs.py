"""The write path's ledger: runs, the write log, candidates held for promotion, trace events,
known principals, messages moved aside, chains outliving the broker."""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    REAL,
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Identity,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    event,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID

from db.enums import IN_FLIGHT_NOTE_TYPES, Disposition, sql_in
from db.models.base import EMPTY_OBJECT, metadata, scope_columns, scope_key_column, ts
from db.models.conversations import conversations

runs = Table(
    "runs",
    metadata,
    Column("run_id", Text, primary_key=True),
    Column("agent_id", Text, nullable=False),
    Column("user_id", Text),
    Column("company_id", Text),
    Column("conversation_id", Text),
    Column("conversation_detail_id", Text),
    Column("primary_scope_entity", Text),
    Column("primary_scope_record_id", Text),
    Column("secondary_scopes", JSONB, nullable=False, server_default=EMPTY_OBJECT),
    Column("source", Text, nullable=False, server_default=text("'user'")),
    Column("context_digest", Text, nullable=False),
    Column("applied_seq", BigInteger, nullable=False, server_default=text("0")),
    Column("persisted_count", Integer, nullable=False, server_default=text("0")),
    ts("gap_wait_started_at"),
    ts("created_at", defaultNOW=True, nullable=False),
    ts("updated_at", defaultNOW=True, nullable=False),
    CheckConstraint("length(run_id) BETWEEN 1 AND 200"),
    CheckConstraint("applied_seq >= 0"),
    Column("admitted_count", Integer, nullable=False, server_default=text("0")),
    CheckConstraint("persisted_count >= 0"),
    CheckConstraint("admitted_count >= 0"),
)
# Runs by age for retention (0013); created_at never changes, so writes keep HOT updates.
Index("runs_created_idx", runs.c.created_at, runs.c.run_id)

write_log = Table(
    "write_log",
    metadata,
    Column("run_id", Text, ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("payload_digest", Text, nullable=False),
    Column("disposition", Text, nullable=False),
    Column("note_id", UUID(as_uuid=True), ForeignKey("notes.id")),
    Column("reason", Text, nullable=False),
    Column("final_scope", JSONB),
    Column("duration_ms", REAL, nullable=False),
    Column("task_id", Text),
    ts("applied_at", nullable=False),
    Column("reason_code", Text),
    Column("candidate_id", UUID(as_uuid=True), ForeignKey("memory_candidates.id")),
    Column("admission_fingerprint", Text),
    PrimaryKeyConstraint("run_id", "seq"),
    CheckConstraint("seq >= 1"),
    CheckConstraint(f"disposition IN ({sql_in(tuple(Disposition))})"),
)
Index(
    "write_log_note_idx",
    write_log.c.note_id,
    postgresql_where=text("note_id IS NOT NULL"),
)
Index(
    "write_log_fingerprint_idx",
    write_log.c.run_id,
    write_log.c.admission_fingerprint,
    postgresql_where=text("admission_fingerprint IS NOT NULL"),
)

# Internal memory waiting for promotion (SPEC 5). Its own table: never injectable.

CANDIDATE_STATUSES = ("candidate", "promoted", "rejected")

memory_candidates = Table(
    "memory_candidates",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True),
    Column("run_id", Text, ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("agent_id", Text, nullable=False),
    *scope_columns(),
    scope_key_column(),
    Column("source", Text, nullable=False),
    Column("type", Text, nullable=False),
    Column("note", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("conversation_id", Text),
    Column("conversation_detail_id", Text),
    Column("status", Text, nullable=False, server_default=text("'candidate'")),
    # Why it is held: promotion-required, or the effect code a user write was quarantined for.
    Column("held_reason", Text),
    Column("decision_reason", Text),
    Column("decided_by", Text),
    ts("decided_at"),
    Column("note_id", UUID(as_uuid=True), ForeignKey("notes.id")),
    ts("created_at", defaultNOW=True, nullable=False),
    ts("updated_at", defaultNOW=True, nullable=False),
    CheckConstraint("seq >= 1"),
    CheckConstraint("jsonb_typeof(secondary_scopes) = 'object'"),
    CheckConstraint(f"type IN ({sql_in(IN_FLIGHT_NOTE_TYPES)})"),
    CheckConstraint("length(note) > 0"),
    CheckConstraint(f"status IN ({sql_in(CANDIDATE_STATUSES)})"),
)
Index(
    "memory_candidates_pending_idx",
    memory_candidates.c.run_id,
    memory_candidates.c.scope_key,
    memory_candidates.c.content_hash,
    unique=True,
    postgresql_where=text("status = 'candidate'"),
)
Index(
    "memory_candidates_agent_idx",
    memory_candidates.c.agent_id,
    memory_candidates.c.status,
    memory_candidates.c.created_at,
)
Index("memory_candidates_run_idx", memory_candidates.c.run_id, memory_candidates.c.created_at)

trace_events = Table(
    "trace_events",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("event", Text, nullable=False),
    Column("run_id", Text),
    Column("seq", BigInteger),
    Column("agent_id", Text),
    Column("disposition", Text),
    Column("note_id", UUID(as_uuid=True)),
    Column("reason", Text),
    Column("detail", JSONB, nullable=False, server_default=EMPTY_OBJECT),
    Column("duration_ms", REAL),
    ts("created_at", defaultNOW=True, nullable=False),
)
Index(
    "trace_events_run_idx",
    trace_events.c.run_id,
    trace_events.c.id,
    postgresql_where=text("run_id IS NOT NULL"),
)
Index("trace_events_event_idx", trace_events.c.event, trace_events.c.created_at)
Index("trace_events_created_idx", trace_events.c.created_at, trace_events.c.id)

principals = Table(
    "principals",
    metadata,
    Column("kind", Text, CheckConstraint("kind IN ('user', 'company')"), nullable=False),
    Column("folded_id", Text, nullable=False),
    ts("first_seen", defaultNOW=True, nullable=False),
    PrimaryKeyConstraint("folded_id", "kind"),
)

PRINCIPALS_FUNCTION = """
CREATE FUNCTION memory_register_principals() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.user_id IS NOT NULL THEN
        INSERT INTO principals (kind, folded_id) VALUES ('user', lower(NEW.user_id))
        ON CONFLICT DO NOTHING;
    END IF;
    IF NEW.company_id IS NOT NULL THEN
        INSERT INTO principals (kind, folded_id) VALUES ('company', lower(NEW.company_id))
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$"""
event.listen(metadata, "before_create", DDL(PRINCIPALS_FUNCTION))
for _table in (runs, conversations):
    event.listen(_table, "after_create", DDL(
        f"CREATE TRIGGER {_table.name}_register_principals AFTER INSERT ON {_table.name} "
        "FOR EACH ROW EXECUTE FUNCTION memory_register_principals()"))

dead_letters = Table(
    "dead_letters",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("task_id", Text),
    Column("task_name", Text),
    Column("reason", Text, nullable=False),
    Column("deliveries", Integer),
    Column("body", Text),
    ts("created_at", defaultNOW=True, nullable=False),
)
Index("dead_letters_created_idx", dead_letters.c.created_at)

# The rest of a chain whose publication failed (worker/app/continuations.py).

chain_continuations = Table(
    "chain_continuations",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("parent_task_id", Text, nullable=False, unique=True),
    Column("root_id", Text),
    Column("chain", JSONB, nullable=False),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("last_error", Text),
    ts("created_at", defaultNOW=True, nullable=False),
)

# What erasing a subject looks up (0017): the foreign keys a candidate's delete checks, and
# a user's runs.
Index("memory_candidates_note_idx", memory_candidates.c.note_id,
      postgresql_where=text("note_id IS NOT NULL"))
Index("write_log_candidate_idx", write_log.c.candidate_id,
      postgresql_where=text("candidate_id IS NOT NULL"))
Index("runs_user_idx", runs.c.user_id, postgresql_where=text("user_id IS NOT NULL"))
