"""What agents remember: agent configuration, notes, examples, pending access counts."""

from __future__ import annotations

from pgvector.sqlalchemy import VECTOR
from sqlalchemy import (
    ARRAY,
    REAL,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    Table,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID

from db.enums import (
    INJECTABLE_SQL,
    AuthorType,
    ExampleStrategy,
    InjectionStrategy,
    NoteStatus,
    NoteType,
    ProtectionTier,
    sql_in,
)
from db.models.base import NOTE_STATUSES, metadata, scope_columns, scope_key_column, ts
from db.queries.lattice import LATTICE_REST_SQL, VECTOR_INDEXED_SQL
from db.queries.retention import RETIRED_SQL

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
    ts("created_at", defaultNOW=True, nullable=False),
    ts("updated_at", defaultNOW=True, nullable=False),
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
    *scope_columns(),
    scope_key_column(),
    Column("type", Text, nullable=False),
    # NULL only once retention erased a retired note's content (content_erased_at; 0013).
    Column("note", Text),
    Column("content_hash", Text),
    Column("status", Text, nullable=False),
    Column("author_type", Text, nullable=False, server_default=text("'MemoryManager'")),
    Column("protection_tier", Text, nullable=False, server_default=text("'Standard'")),
    Column("importance_score", REAL),
    Column("confidence", SmallInteger),
    Column("access_count", Integer, nullable=False, server_default=text("0")),
    ts("last_accessed_at"),
    ts("expires_at"),
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
    ts("retention_at"),
    Column("access_count_at_decay", Integer, nullable=False, server_default=text("0")),
    ts("hardened_at"),
    ts("valid_from", defaultNOW=True, nullable=False),
    ts("valid_to"),
    ts("created_at", defaultNOW=True, nullable=False),
    ts("updated_at", defaultNOW=True, nullable=False),
    ts("content_erased_at"),
    CheckConstraint("jsonb_typeof(secondary_scopes) = 'object'"),
    CheckConstraint(f"type IN ({sql_in(tuple(NoteType))})"),
    CheckConstraint("length(note) > 0"),
    CheckConstraint(f"status IN ({sql_in(NOTE_STATUSES)})"),
    CheckConstraint(f"author_type IN ({sql_in(tuple(AuthorType))})"),
    CheckConstraint(f"protection_tier IN ({sql_in(tuple(ProtectionTier))})"),
    CheckConstraint("importance_score BETWEEN 0 AND 10"),
    CheckConstraint("confidence BETWEEN 0 AND 100"),
    CheckConstraint("access_count >= 0"),
    CheckConstraint("consolidation_count >= 0"),
    CheckConstraint("(embedding IS NULL) = (embedding_model IS NULL)"),
    CheckConstraint("valid_to IS NULL OR valid_to >= valid_from"),
    CheckConstraint("retention BETWEEN 0 AND 1"),
    # Text until erased, and only a retired note is ever erased: an erased note can never be
    # made injectable again.
    CheckConstraint(
        "(content_erased_at IS NULL AND note IS NOT NULL AND content_hash IS NOT NULL)"
        " OR (content_erased_at IS NOT NULL AND note IS NULL AND content_hash IS NULL"
        f" AND embedding IS NULL AND {RETIRED_SQL})",
        name="notes_content_erased_check",
    ),
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
# Retired notes whose content retention has yet to erase, oldest retirement first (0013).
Index(
    "notes_erasable_idx",
    func.coalesce(notes.c.valid_to, notes.c.updated_at),
    notes.c.id,
    postgresql_where=text(f"{RETIRED_SQL} AND content_erased_at IS NULL"),
)
Index(
    "notes_source_run_idx",
    notes.c.source_agent_run_id,
    postgresql_where=text("source_agent_run_id IS NOT NULL"),
)

note_access_pending = Table(
    "note_access_pending",
    metadata,
    Column("note_id", UUID(as_uuid=True), primary_key=True),
    Column("hits", Integer, nullable=False),
    ts("last_accessed_at", nullable=False),
    CheckConstraint("hits > 0"),
)

examples = Table(
    "examples",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True),
    Column("agent_id", Text, nullable=False),
    *scope_columns(),
    Column("input_text", Text, nullable=False),
    Column("output_text", Text, nullable=False),
    Column("success_score", REAL),
    Column("status", Text, nullable=False, server_default=text("'Active'")),
    Column("embedding", VECTOR()),
    Column("embedding_model", Text),
    Column("source_conversation_id", Text),
    Column("access_count", Integer, nullable=False, server_default=text("0")),
    ts("last_accessed_at"),
    ts("created_at", defaultNOW=True, nullable=False),
    ts("updated_at", defaultNOW=True, nullable=False),
    CheckConstraint("success_score BETWEEN 0 AND 10"),
    CheckConstraint(f"status IN ({sql_in(NOTE_STATUSES)})"),
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

# What erasing a subject looks up (0017): the foreign keys a note's delete checks, the
# subject's own notes, the provenance it clears.
Index("notes_consolidated_into_idx", notes.c.consolidated_into_note_id,
      postgresql_where=text("consolidated_into_note_id IS NOT NULL"))
Index("notes_superseded_by_idx", notes.c.superseded_by,
      postgresql_where=text("superseded_by IS NOT NULL"))
Index("notes_source_conversation_idx", notes.c.source_conversation_id,
      postgresql_where=text("source_conversation_id IS NOT NULL"))
Index("notes_user_idx", notes.c.user_id, postgresql_where=text("user_id IS NOT NULL"))
Index("notes_company_idx", notes.c.company_id, postgresql_where=text("company_id IS NOT NULL"))
