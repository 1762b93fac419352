"""The declared schema (SQLAlchemy Core).

Migrations in `db/migrations/` are the history; this module is the statement of what that
history must add up to. `tests/integration/test_schema.py` builds one database from each and
compares their catalogs, so neither can drift from the other.
"""

from __future__ import annotations

from pgvector.sqlalchemy import VECTOR
from sqlalchemy import (
    ARRAY,
    DDL,
    REAL,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Computed,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    event,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID

from db.enums import (
    IN_FLIGHT_NOTE_TYPES,
    INJECTABLE_SQL,
    MESSAGE_ROLES,
    AuthorType,
    CycleStatus,
    Disposition,
    ExampleStrategy,
    InjectionStrategy,
    NoteStatus,
    NoteType,
    ProtectionTier,
    sql_in,
)
from db.queries.lattice import LATTICE_REST_SQL, VECTOR_INDEXED_SQL

metadata = MetaData()

SCOPE_KEY_FUNCTION = """
CREATE FUNCTION memory_scope_key(
    agent_id text, user_id text, company_id text,
    primary_scope_entity text, primary_scope_record_id text, secondary_scopes jsonb
) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN md5(
    coalesce('a:' || agent_id, '-') || chr(31) ||
    coalesce('u:' || user_id, '-') || chr(31) ||
    coalesce('c:' || company_id, '-') || chr(31) ||
    coalesce('e:' || primary_scope_entity, '-') || chr(31) ||
    coalesce('r:' || primary_scope_record_id, '-') || chr(31) ||
    secondary_scopes::text
)::uuid
"""

event.listen(metadata, "before_create", DDL("CREATE EXTENSION IF NOT EXISTS vector"))
event.listen(metadata, "before_create", DDL(SCOPE_KEY_FUNCTION))

STATUSES = tuple(NoteStatus)
_now = text("now()")
_empty_object = text("'{}'::jsonb")


def _ts(name: str, *, default_now: bool = False, nullable: bool = True) -> Column:
    return Column(
        name,
        DateTime(timezone=True),
        nullable=nullable,
        server_default=_now if default_now else None,
    )


def _scope_columns() -> list[Column]:
    return [
        Column("user_id", Text),
        Column("company_id", Text),
        Column("primary_scope_entity", Text),
        Column("primary_scope_record_id", Text),
        Column("secondary_scopes", JSONB, nullable=False, server_default=_empty_object),
    ]


def _scope_key_column() -> Column:
    """The generated exact-scope key (memory_scope_key of the scope columns)."""
    return Column(
        "scope_key",
        UUID(as_uuid=True),
        Computed(
            "memory_scope_key(agent_id, user_id, company_id, primary_scope_entity, "
            "primary_scope_record_id, secondary_scopes)",
            persisted=True,
        ),
        nullable=False,
    )


agents = Table(
    "agents",
    metadata,
    Column("agent_id", Text, primary_key=True),
    Column("allow_memory_write", Boolean, nullable=False, server_default=text("true")),
    Column("inject_notes", Boolean, nullable=False, server_default=text("true")),
    Column("max_notes_to_inject", Integer, nullable=False, server_default=text("5")),
    Column("note_injection_strategy", Text, nullable=False, server_default=text("'Relevant'")),
    Column("inject_examples", Boolean, nullable=False, server_default=text("false")),
    Column("max_examples_to_inject", Integer, nullable=False, server_default=text("3")),
    Column("example_injection_strategy", Text, nullable=False, server_default=text("'Semantic'")),
    Column("per_run_cap", Integer),
    Column("reranker_config", JSONB),
    Column("scope_config", JSONB),
    Column("auto_archive_enabled", Boolean, nullable=False, server_default=text("true")),
    _ts("created_at", default_now=True, nullable=False),
    _ts("updated_at", default_now=True, nullable=False),
    Column("memory_policy", JSONB),
    CheckConstraint("length(agent_id) BETWEEN 1 AND 200"),
    CheckConstraint("max_notes_to_inject BETWEEN 0 AND 100"),
    CheckConstraint(f"note_injection_strategy IN ({sql_in(tuple(InjectionStrategy))})"),
    CheckConstraint("max_examples_to_inject BETWEEN 0 AND 50"),
    CheckConstraint(f"example_injection_strategy IN ({sql_in(tuple(ExampleStrategy))})"),
    CheckConstraint("per_run_cap BETWEEN 0 AND 1000"),
    CheckConstraint("memory_policy IS NULL OR jsonb_typeof(memory_policy) = 'object'"),
)

notes = Table(
    "notes",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True),
    Column("agent_id", Text),
    *_scope_columns(),
    _scope_key_column(),
    Column("type", Text, nullable=False),
    Column("note", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("author_type", Text, nullable=False, server_default=text("'MemoryManager'")),
    Column("protection_tier", Text, nullable=False, server_default=text("'Standard'")),
    Column("importance_score", REAL),
    Column("confidence", SmallInteger),
    Column("access_count", Integer, nullable=False, server_default=text("0")),
    _ts("last_accessed_at"),
    _ts("expires_at"),
    Column("embedding", VECTOR()),
    Column("embedding_model", Text),
    Column("source_conversation_id", Text),
    Column("source_conversation_detail_id", Text),
    Column("source_agent_run_id", Text),
    Column(
        "derived_from_note_ids",
        ARRAY(UUID(as_uuid=True)),
        nullable=False,
        server_default=text("'{}'"),
    ),
    Column("consolidated_into_note_id", UUID(as_uuid=True), ForeignKey("notes.id")),
    Column("consolidation_count", Integer, nullable=False, server_default=text("0")),
    Column("superseded_by", UUID(as_uuid=True), ForeignKey("notes.id")),
    Column("corrects_note_id", UUID(as_uuid=True), ForeignKey("notes.id")),
    Column("review_flag", Text),
    Column("retention", REAL, nullable=False, server_default=text("1")),
    _ts("retention_at"),
    Column("access_count_at_decay", Integer, nullable=False, server_default=text("0")),
    _ts("hardened_at"),
    _ts("valid_from", default_now=True, nullable=False),
    _ts("valid_to"),
    _ts("created_at", default_now=True, nullable=False),
    _ts("updated_at", default_now=True, nullable=False),
    CheckConstraint("jsonb_typeof(secondary_scopes) = 'object'"),
    CheckConstraint(f"type IN ({sql_in(tuple(NoteType))})"),
    CheckConstraint("length(note) > 0"),
    CheckConstraint(f"status IN ({sql_in(STATUSES)})"),
    CheckConstraint(f"author_type IN ({sql_in(tuple(AuthorType))})"),
    CheckConstraint(f"protection_tier IN ({sql_in(tuple(ProtectionTier))})"),
    CheckConstraint("importance_score BETWEEN 0 AND 10"),
    CheckConstraint("confidence BETWEEN 0 AND 100"),
    CheckConstraint("access_count >= 0"),
    CheckConstraint("consolidation_count >= 0"),
    CheckConstraint("(embedding IS NULL) = (embedding_model IS NULL)"),
    CheckConstraint("valid_to IS NULL OR valid_to >= valid_from"),
    CheckConstraint("retention BETWEEN 0 AND 1"),
)
Index(
    "notes_scope_content_idx",
    notes.c.scope_key,
    notes.c.content_hash,
    postgresql_where=text(INJECTABLE_SQL),
)
Index(
    "notes_expires_at_idx",
    notes.c.expires_at,
    postgresql_where=text(f"{INJECTABLE_SQL} AND expires_at IS NOT NULL"),
)
# Every injectable note is in exactly one of the two lattice indexes: notes_vector_idx
# (exact vector ranking and date order by index-only scans) when its row fits a btree row,
# else the rest index (db/migrations/0004 and 0007, db/queries/lattice.py).
Index(
    "notes_vector_idx",
    notes.c.agent_id,
    notes.c.user_id,
    notes.c.company_id,
    notes.c.embedding_model,
    postgresql_include=["status", "expires_at", "id", "created_at", "embedding"],
    postgresql_where=text(f"{INJECTABLE_SQL} AND {VECTOR_INDEXED_SQL}"),
)
Index(
    "notes_lattice_rest_idx",
    notes.c.agent_id,
    notes.c.user_id,
    notes.c.company_id,
    notes.c.created_at.desc(),
    postgresql_where=text(f"{INJECTABLE_SQL} AND {LATTICE_REST_SQL}"),
)
Index(
    "notes_hardening_idx",
    notes.c.created_at,
    notes.c.id,
    postgresql_where=text(
        f"status = '{NoteStatus.PROVISIONAL.value}' AND author_type = '{AuthorType.AGENT.value}'"
    ),
)
Index(
    "notes_corrects_idx",
    notes.c.corrects_note_id,
    postgresql_where=text("corrects_note_id IS NOT NULL"),
)
Index(
    "notes_source_run_idx",
    notes.c.source_agent_run_id,
    postgresql_where=text("source_agent_run_id IS NOT NULL"),
)

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
    Column("secondary_scopes", JSONB, nullable=False, server_default=_empty_object),
    Column("source", Text, nullable=False, server_default=text("'user'")),
    Column("context_digest", Text, nullable=False),
    Column("applied_seq", BigInteger, nullable=False, server_default=text("0")),
    Column("persisted_count", Integer, nullable=False, server_default=text("0")),
    _ts("gap_wait_started_at"),
    _ts("created_at", default_now=True, nullable=False),
    _ts("updated_at", default_now=True, nullable=False),
    CheckConstraint("length(run_id) BETWEEN 1 AND 200"),
    CheckConstraint("applied_seq >= 0"),
    Column("admitted_count", Integer, nullable=False, server_default=text("0")),
    CheckConstraint("persisted_count >= 0"),
    CheckConstraint("admitted_count >= 0"),
)

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
    _ts("applied_at", nullable=False),
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
    *_scope_columns(),
    _scope_key_column(),
    Column("source", Text, nullable=False),
    Column("type", Text, nullable=False),
    Column("note", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("conversation_id", Text),
    Column("conversation_detail_id", Text),
    Column("status", Text, nullable=False, server_default=text("'candidate'")),
    Column("decision_reason", Text),
    Column("decided_by", Text),
    _ts("decided_at"),
    Column("note_id", UUID(as_uuid=True), ForeignKey("notes.id")),
    _ts("created_at", default_now=True, nullable=False),
    _ts("updated_at", default_now=True, nullable=False),
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
    Column("detail", JSONB, nullable=False, server_default=_empty_object),
    Column("duration_ms", REAL),
    _ts("created_at", default_now=True, nullable=False),
)
Index(
    "trace_events_run_idx",
    trace_events.c.run_id,
    trace_events.c.id,
    postgresql_where=text("run_id IS NOT NULL"),
)
Index("trace_events_event_idx", trace_events.c.event, trace_events.c.created_at)

conversations = Table(
    "conversations",
    metadata,
    Column("id", Text, primary_key=True),
    Column("agent_id", Text),
    *_scope_columns(),
    Column("agent_run_id", Text),
    Column("context_digest", Text),
    Column("extracted_through_seq", BigInteger, nullable=False, server_default=text("0")),
    Column("last_message_seq", BigInteger, nullable=False, server_default=text("0")),
    _ts("created_at", default_now=True, nullable=False),
    _ts("updated_at", default_now=True, nullable=False),
)
Index(
    "conversations_pending_idx",
    conversations.c.last_message_seq,
    postgresql_where=text("last_message_seq > extracted_through_seq"),
)

# A deleted conversation leaves its id behind, whoever deleted it: only such a conversation
# makes a note's source reference stale (stale-reference pruning).
conversation_tombstones = Table(
    "conversation_tombstones",
    metadata,
    Column("conversation_id", Text, primary_key=True),
    _ts("deleted_at", default_now=True, nullable=False),
)

TOMBSTONE_FUNCTION = """
CREATE FUNCTION memory_conversation_tombstone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO conversation_tombstones (conversation_id) VALUES (OLD.id)
    ON CONFLICT (conversation_id) DO UPDATE SET deleted_at = EXCLUDED.deleted_at;
    RETURN OLD;
END
$$"""
event.listen(metadata, "before_create", DDL(TOMBSTONE_FUNCTION))
event.listen(conversations, "after_create", DDL(
    "CREATE TRIGGER conversations_tombstone AFTER DELETE ON conversations "
    "FOR EACH ROW EXECUTE FUNCTION memory_conversation_tombstone()"))

# The users and companies this system holds memory for (foreign-identity admission check).
principals = Table(
    "principals",
    metadata,
    Column("kind", Text, CheckConstraint("kind IN ('user', 'company')"), nullable=False),
    Column("folded_id", Text, nullable=False),
    _ts("first_seen", default_now=True, nullable=False),
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

conversation_messages = Table(
    "conversation_messages",
    metadata,
    Column("id", Text, primary_key=True),
    Column(
        "conversation_id",
        Text,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("role", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("rating", SmallInteger),
    Column("rating_comment", Text),
    Column("agent_run_id", Text),
    _ts("created_at", default_now=True, nullable=False),
    Column("ingested_seq", BigInteger, Identity(always=False), nullable=False),
    CheckConstraint(f"role IN ({sql_in(MESSAGE_ROLES)})"),
    CheckConstraint("rating BETWEEN 1 AND 10"),
)
Index(
    "conversation_messages_conv_idx",
    conversation_messages.c.conversation_id,
    conversation_messages.c.created_at,
)
Index("conversation_messages_ingested_idx", conversation_messages.c.ingested_seq)
Index(
    "conversation_messages_seq_idx",
    conversation_messages.c.conversation_id,
    conversation_messages.c.ingested_seq,
)

# Access bumps from the read path, folded into notes by each Memory Manager cycle (0006).
note_access_pending = Table(
    "note_access_pending",
    metadata,
    Column("note_id", UUID(as_uuid=True), primary_key=True),
    Column("hits", Integer, nullable=False),
    _ts("last_accessed_at", nullable=False),
    CheckConstraint("hits > 0"),
)

examples = Table(
    "examples",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True),
    Column("agent_id", Text, nullable=False),
    *_scope_columns(),
    Column("input_text", Text, nullable=False),
    Column("output_text", Text, nullable=False),
    Column("success_score", REAL),
    Column("status", Text, nullable=False, server_default=text("'Active'")),
    Column("embedding", VECTOR()),
    Column("embedding_model", Text),
    Column("source_conversation_id", Text),
    Column("access_count", Integer, nullable=False, server_default=text("0")),
    _ts("last_accessed_at"),
    _ts("created_at", default_now=True, nullable=False),
    _ts("updated_at", default_now=True, nullable=False),
    CheckConstraint("success_score BETWEEN 0 AND 10"),
    CheckConstraint(f"status IN ({sql_in(STATUSES)})"),
    CheckConstraint("(embedding IS NULL) = (embedding_model IS NULL)"),
)
Index(
    "examples_lattice_idx",
    examples.c.agent_id,
    examples.c.user_id,
    examples.c.company_id,
    examples.c.created_at.desc(),
    postgresql_where=text(INJECTABLE_SQL),
)
Index(
    "examples_agent_idx",
    examples.c.agent_id,
    examples.c.created_at,
    postgresql_where=text(INJECTABLE_SQL),
)

manager_cycles = Table(
    "manager_cycles",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("status", Text, nullable=False),
    Column("forced", Boolean, nullable=False, server_default=text("false")),
    Column("maintenance", Boolean, nullable=False, server_default=text("false")),
    _ts("started_at", nullable=False),
    _ts("finished_at"),
    Column("phases", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    Column("counts", JSONB, nullable=False, server_default=_empty_object),
    Column("watermarks", JSONB, nullable=False, server_default=_empty_object),
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
    Column("detail", JSONB, nullable=False, server_default=_empty_object),
    _ts("created_at", default_now=True, nullable=False),
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
    _ts("created_at", default_now=True, nullable=False),
    PrimaryKeyConstraint("kind", "key"),
    CheckConstraint("kind IN ('pair', 'cluster')"),
)

# Messages moved aside instead of handled (worker/app/poison.py): `memory-worker dead-letters`.
dead_letters = Table(
    "dead_letters",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("task_id", Text),
    Column("task_name", Text),
    Column("reason", Text, nullable=False),
    Column("deliveries", Integer),
    Column("body", Text),
    _ts("created_at", default_now=True, nullable=False),
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
    _ts("created_at", default_now=True, nullable=False),
)

