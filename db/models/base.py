"""What every table shares: the metadata, the scope columns and their generated key, timestamps."""

from __future__ import annotations

from sqlalchemy import DDL, Column, Computed, DateTime, MetaData, Text, event, text
from sqlalchemy.dialects.postgresql import JSONB, UUID

from db.enums import NoteStatus

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

NOTE_STATUSES = tuple(NoteStatus)
NOW = text("now()")
EMPTY_OBJECT = text("'{}'::jsonb")


def ts(name: str, *, defaultNOW: bool = False, nullable: bool = True) -> Column:
    return Column(
        name,
        DateTime(timezone=True),
        nullable=nullable,
        server_default=NOW if defaultNOW else None,
    )


def scope_columns() -> list[Column]:
    return [
        Column("user_id", Text),
        Column("company_id", Text),
        Column("primary_scope_entity", Text),
        Column("primary_scope_record_id", Text),
        Column("secondary_scopes", JSONB, nullable=False, server_default=EMPTY_OBJECT),
    ]


def scope_key_column() -> Column:
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

