"""Conversations as recorded for the Memory Manager: the conversation, its messages, and the
tombstones of conversations deleted while a record of them was still in flight."""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Identity,
    Index,
    SmallInteger,
    Table,
    Text,
    event,
    text,
)

from db.enums import MESSAGE_ROLES, sql_in
from db.models.base import metadata, scope_columns, ts

conversations = Table(
    "conversations",
    metadata,
    Column("id", Text, primary_key=True),
    Column("agent_id", Text),
    *scope_columns(),
    Column("agent_run_id", Text),
    Column("context_digest", Text),
    Column("extracted_through_seq", BigInteger, nullable=False, server_default=text("0")),
    Column("last_message_seq", BigInteger, nullable=False, server_default=text("0")),
    ts("created_at", defaultNOW=True, nullable=False),
    ts("updated_at", defaultNOW=True, nullable=False),
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
    ts("deleted_at", defaultNOW=True, nullable=False),
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
    ts("created_at", defaultNOW=True, nullable=False),
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
