"""Conversations and their rated messages: ingestion, and what extraction reads.

Ordering: recording a batch and extracting from a conversation both lock its row, so an
extraction sees all of a recorded batch or none of it, and a message's `ingested_seq` can
never land below a watermark that extraction already set.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from db.enums import INJECTABLE_SQL
from db.queries.vectors import as_array
from db.scope import SAME_SCOPE_SQL, NoteScope

_UPSERT_CONVERSATION = text("""
INSERT INTO conversations (id, agent_id, user_id, company_id, primary_scope_entity,
    primary_scope_record_id, secondary_scopes, agent_run_id, context_digest, created_at,
    updated_at)
VALUES (:id, :agent_id, :user_id, :company_id, :primary_scope_entity, :primary_scope_record_id,
    CAST(:secondary_scopes AS jsonb), :agent_run_id, :context_digest, :now, :now)
ON CONFLICT (id) DO NOTHING
""")

_LOCK_CONVERSATION = text("""
SELECT id, agent_id, user_id, company_id, primary_scope_entity, primary_scope_record_id,
       secondary_scopes, agent_run_id, context_digest, extracted_through_seq, last_message_seq
FROM conversations WHERE id = :id FOR UPDATE
""")

_LOCK_CONVERSATION_NOWAIT = text("""
SELECT id, agent_id, user_id, company_id, primary_scope_entity, primary_scope_record_id,
       secondary_scopes, agent_run_id, context_digest, extracted_through_seq, last_message_seq
FROM conversations WHERE id = :id FOR UPDATE SKIP LOCKED
""")

# A message's text is immutable; its rating may arrive or change later, which makes it new
# again for extraction (a fresh ingested_seq).
_UPSERT_MESSAGE = text("""
INSERT INTO conversation_messages (id, conversation_id, role, text, rating, rating_comment,
    agent_run_id, created_at)
VALUES (:id, :conversation_id, :role, :text, :rating, :rating_comment, :agent_run_id, :now)
ON CONFLICT (id) DO UPDATE SET
    rating = EXCLUDED.rating, rating_comment = EXCLUDED.rating_comment,
    ingested_seq = nextval(pg_get_serial_sequence('conversation_messages', 'ingested_seq'))
WHERE conversation_messages.conversation_id = EXCLUDED.conversation_id
  AND conversation_messages.text = EXCLUDED.text
  AND (conversation_messages.rating, conversation_messages.rating_comment)
      IS DISTINCT FROM (EXCLUDED.rating, EXCLUDED.rating_comment)
RETURNING ingested_seq, (xmax = 0) AS inserted
""")

_MESSAGE_STATE = text("""
SELECT conversation_id, text FROM conversation_messages WHERE id = :id
""")

_SET_LAST_SEQ = text("""
UPDATE conversations SET last_message_seq = greatest(last_message_seq, :seq), updated_at = :now
WHERE id = :id
""")

_PENDING = text("""
SELECT id FROM conversations
WHERE last_message_seq > extracted_through_seq
ORDER BY last_message_seq
LIMIT :limit
""")

# The messages extraction reads: everything new, plus the earlier turns of the conversation
# as context (a rated reply needs the question it answered).
_MESSAGES = text("""
SELECT id, role, text, rating, rating_comment, agent_run_id, ingested_seq,
       ingested_seq > :watermark AS is_new
FROM (
    SELECT * FROM conversation_messages
    WHERE conversation_id = :id
    ORDER BY created_at DESC, ingested_seq DESC
    LIMIT :limit
) AS recent
ORDER BY created_at, ingested_seq
""")

_SET_WATERMARK = text("""
UPDATE conversations SET extracted_through_seq = greatest(extracted_through_seq, :seq)
WHERE id = :id
""")

# Injectable notes of one exact scope, newest first: the only notes extraction shows the
# judge (never another user's or tenant's).
_SCOPE_NOTES = text(f"""
SELECT n.id, n.note, n.content_hash, n.embedding, n.embedding_model
FROM notes n
WHERE {SAME_SCOPE_SQL} AND n.{INJECTABLE_SQL}
ORDER BY n.created_at DESC
LIMIT :limit
""")  # noqa: S608 - our own constants only

_EXAMPLE_EXISTS = text("""
SELECT 1 FROM examples
WHERE agent_id = :agent_id AND user_id IS NOT DISTINCT FROM :user_id
  AND company_id IS NOT DISTINCT FROM :company_id AND source_conversation_id = :conversation_id
  AND input_text = :input_text AND output_text = :output_text
LIMIT 1
""")

_INSERT_EXAMPLE = text("""
INSERT INTO examples (id, agent_id, user_id, company_id, primary_scope_entity,
    primary_scope_record_id, secondary_scopes, input_text, output_text, success_score, status,
    embedding, embedding_model, source_conversation_id, created_at, updated_at)
VALUES (:id, :agent_id, :user_id, :company_id, :primary_scope_entity, :primary_scope_record_id,
    CAST(:secondary_scopes AS jsonb), :input_text, :output_text, :success_score, 'Active',
    :embedding, :embedding_model, :conversation_id, :now, :now)
""")


@dataclass(frozen=True)
class ConversationRow:
    id: str
    scope: NoteScope
    agent_run_id: str | None
    context_digest: str | None
    extracted_through_seq: int
    last_message_seq: int


@dataclass(frozen=True)
class MessageRow:
    id: str
    role: str
    text: str
    rating: int | None
    rating_comment: str | None
    agent_run_id: str | None
    ingested_seq: int
    is_new: bool


@dataclass(frozen=True)
class ScopeNote:
    id: uuid.UUID
    note: str
    content_hash: str
    embedding: np.ndarray | None
    embedding_model: str | None


def _conversation(row: Any) -> ConversationRow:
    return ConversationRow(row.id, NoteScope.from_row(row), row.agent_run_id,
                           row.context_digest, int(row.extracted_through_seq),
                           int(row.last_message_seq))


def upsert_conversation(conn: Connection, *, conversation_id: str, scope: NoteScope,
                        agent_run_id: str | None, context_digest: str,
                        now: datetime) -> ConversationRow:
    conn.execute(_UPSERT_CONVERSATION, {
        "id": conversation_id, "agent_id": scope.agent_id, "user_id": scope.user_id,
        "company_id": scope.company_id, "primary_scope_entity": scope.primary_scope_entity,
        "primary_scope_record_id": scope.primary_scope_record_id,
        "secondary_scopes": json.dumps(scope.secondary_scopes, sort_keys=True),
        "agent_run_id": agent_run_id, "context_digest": context_digest, "now": now,
    })
    return _conversation(conn.execute(_LOCK_CONVERSATION, {"id": conversation_id}).one())


def upsert_message(conn: Connection, *, conversation_id: str, message_id: str, role: str,
                   text_: str, rating: int | None, rating_comment: str | None,
                   agent_run_id: str | None, now: datetime) -> tuple[str, int | None]:
    """("recorded" | "updated" | "unchanged" | "conflict", ingested_seq)."""
    row = conn.execute(_UPSERT_MESSAGE, {
        "id": message_id, "conversation_id": conversation_id, "role": role, "text": text_,
        "rating": rating, "rating_comment": rating_comment, "agent_run_id": agent_run_id,
        "now": now,
    }).first()
    if row is not None:
        return ("recorded" if row.inserted else "updated"), int(row.ingested_seq)
    existing = conn.execute(_MESSAGE_STATE, {"id": message_id}).one()
    if existing.conversation_id != conversation_id or existing.text != text_:
        return "conflict", None
    return "unchanged", None


def set_last_message_seq(conn: Connection, conversation_id: str, seq: int,
                         now: datetime) -> None:
    conn.execute(_SET_LAST_SEQ, {"id": conversation_id, "seq": seq, "now": now})


def pending_conversations(conn: Connection, limit: int) -> list[str]:
    return [row.id for row in conn.execute(_PENDING, {"limit": limit})]


def lock_conversation_for_extraction(conn: Connection,
                                     conversation_id: str) -> ConversationRow | None:
    """None when a recording holds it right now (it is picked up next cycle)."""
    row = conn.execute(_LOCK_CONVERSATION_NOWAIT, {"id": conversation_id}).first()
    return None if row is None else _conversation(row)


def conversation_messages(conn: Connection, conversation_id: str, *, watermark: int,
                          limit: int) -> list[MessageRow]:
    return [
        MessageRow(row.id, row.role, row.text, row.rating, row.rating_comment,
                   row.agent_run_id, int(row.ingested_seq), bool(row.is_new))
        for row in conn.execute(_MESSAGES, {"id": conversation_id, "watermark": watermark,
                                            "limit": limit})
    ]


def set_extraction_watermark(conn: Connection, conversation_id: str, seq: int) -> None:
    conn.execute(_SET_WATERMARK, {"id": conversation_id, "seq": seq})


def scope_notes(conn: Connection, scope: NoteScope, limit: int) -> list[ScopeNote]:
    return [
        ScopeNote(row.id, row.note, row.content_hash, as_array(row.embedding),
                  row.embedding_model)
        for row in conn.execute(_SCOPE_NOTES, {**scope.sql_params(), "limit": limit})
    ]


def insert_example_once(conn: Connection, *, scope: NoteScope, conversation_id: str,
                        input_text: str, output_text: str, success_score: float,
                        embedding: np.ndarray | None, embedding_model: str | None,
                        now: datetime) -> bool:
    params = {
        "agent_id": scope.agent_id, "user_id": scope.user_id, "company_id": scope.company_id,
        "conversation_id": conversation_id, "input_text": input_text,
        "output_text": output_text,
    }
    if conn.execute(_EXAMPLE_EXISTS, params).first() is not None:
        return False
    conn.execute(_INSERT_EXAMPLE, {
        **params, "id": uuid.uuid4(), "primary_scope_entity": scope.primary_scope_entity,
        "primary_scope_record_id": scope.primary_scope_record_id,
        "secondary_scopes": json.dumps(scope.secondary_scopes, sort_keys=True),
        "success_score": success_score, "embedding": embedding,
        "embedding_model": embedding_model if embedding is not None else None, "now": now,
    })
    return True
