"""`memory.conversation.record`: store a conversation and its (rated) messages, the source
the Memory Manager's extraction mines.

Payload: `{"conversation": {id, agent_id, user_id?, company_id?, primary_scope_entity?,
primary_scope_record_id?, secondary_scopes?, agent_run_id?}, "messages": [{id, role, text,
rating?, rating_comment?, agent_run_id?}]}`. Idempotent per message id: a redelivered batch
changes nothing; a later rating on a known message updates it (and makes it new for
extraction). Each message gets its own disposition; one bad message never drops the others.
A conversation's identity (agent, user, company, tenant) is fixed by its first record.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db.connector import Database
from db.enums import MESSAGE_ROLES
from db.queries.conversations import set_last_message_seq, upsert_conversation, upsert_message
from db.scope import NoteScope
from worker.erasure.fence import ERASED_CONVERSATION_REASON, conversation_fence
from worker.writes.payloads import (
    Invalid,
    parse_identifier,
    parse_scope_fields,
    parse_secondary_scopes,
    stable_digest,
    unencodable_reason,
)

MAX_MESSAGES = 500
MAX_MESSAGE_LENGTH = 20_000
MAX_COMMENT_LENGTH = 2_000

CONVERSATION_IDENTIFIERS = (
    ("id", True), ("agent_id", True), ("user_id", False), ("company_id", False),
    ("primary_scope_entity", False), ("primary_scope_record_id", False),
    ("agent_run_id", False),
)


@dataclass(frozen=True)
class ParsedConversation:
    conversation_id: str
    scope: NoteScope
    agent_run_id: str | None

    def digest(self) -> str:
        return stable_digest(self.scope.as_dict())


@dataclass(frozen=True)
class ParsedMessage:
    id: str
    role: str
    text: str
    rating: int | None
    rating_comment: str | None
    agent_run_id: str | None


def parse_conversation(payload: Any) -> ParsedConversation | Invalid:
    if not isinstance(payload, dict):
        return Invalid("conversation must be an object with id and agent_id")
    fields = parse_scope_fields(payload, "conversation", CONVERSATION_IDENTIFIERS)
    if isinstance(fields, Invalid):
        return fields
    secondary = parse_secondary_scopes(payload.get("secondary_scopes"), prefix="conversation")
    if isinstance(secondary, Invalid):
        return secondary
    scope = NoteScope(fields["agent_id"], fields.get("user_id"), fields.get("company_id"),
                      fields.get("primary_scope_entity"), fields.get("primary_scope_record_id"),
                      secondary)
    return ParsedConversation(fields["id"], scope, fields.get("agent_run_id"))


def parse_message(payload: Any, index: int) -> ParsedMessage | Invalid:
    where = f"messages[{index}]"
    if not isinstance(payload, dict):
        return Invalid(f"{where} must be an object with id, role and text")
    message_id = parse_identifier(payload, "id", required=True, prefix=where)
    if isinstance(message_id, Invalid) or message_id is None:
        return message_id or Invalid(f"{where}.id is required")
    role = payload.get("role")
    if role not in MESSAGE_ROLES:
        return Invalid(f"{where}.role must be one of {', '.join(MESSAGE_ROLES)}")
    text = payload.get("text")
    if not isinstance(text, str) or not text.strip():
        return Invalid(f"{where}.text must be a non-empty string")
    if len(text) > MAX_MESSAGE_LENGTH or unencodable_reason(text):
        return Invalid(f"{where}.text is too long or not valid text")
    rating = payload.get("rating")
    if rating is not None and (isinstance(rating, bool) or not isinstance(rating, int)
                               or not 1 <= rating <= 10):
        return Invalid(f"{where}.rating must be an integer from 1 to 10")
    comment = payload.get("rating_comment")
    if comment is not None and (not isinstance(comment, str) or len(comment) > MAX_COMMENT_LENGTH
                                or unencodable_reason(comment)):
        return Invalid(f"{where}.rating_comment must be text of at most "
                       f"{MAX_COMMENT_LENGTH} characters")
    run_id = parse_identifier(payload, "agent_run_id", required=False, prefix=where)
    if isinstance(run_id, Invalid):
        return run_id
    return ParsedMessage(message_id, role, text, rating, comment or None, run_id)


def record_conversation(db: Database, payload: Any, now: datetime) -> dict[str, Any]:
    """Store what can be stored; say what happened to every message."""
    if not isinstance(payload, dict):
        return {"ok": False, "error": "payload must be an object with conversation and messages"}
    conversation = parse_conversation(payload.get("conversation"))
    if isinstance(conversation, Invalid):
        return {"ok": False, "error": conversation.reason}
    raw_messages = payload.get("messages")
    if not isinstance(raw_messages, list) or len(raw_messages) > MAX_MESSAGES:
        return {"ok": False, "conversation_id": conversation.conversation_id,
                "error": f"messages must be a list of at most {MAX_MESSAGES} messages"}
    dispositions: list[dict[str, Any]] = []
    with db.transaction() as conn:
        scope = conversation.scope
        if conversation_fence(conn, conversation_id=conversation.conversation_id,
                              agent_id=scope.agent_id, user_id=scope.user_id,
                              company_id=scope.company_id, now=now) is not None:
            # Queued or redelivered after an erasure of its subject: nothing lands, and the
            # answer (kept in Redis) does not name the conversation.
            return {"ok": False, "disposition": "rejected-erased",
                    "error": ERASED_CONVERSATION_REASON}
        row = upsert_conversation(conn, conversation_id=conversation.conversation_id,
                                  scope=conversation.scope,
                                  agent_run_id=conversation.agent_run_id,
                                  context_digest=conversation.digest(), now=now)
        if row.context_digest != conversation.digest():
            return {"ok": False, "conversation_id": conversation.conversation_id,
                    "error": "conversation was first recorded with another agent, user, "
                             "company or tenant scope; nothing was stored"}
        top_seq = 0
        for index, raw in enumerate(raw_messages):
            message = parse_message(raw, index)
            if isinstance(message, Invalid):
                dispositions.append({"index": index, "disposition": "rejected",
                                     "reason": message.reason})
                continue
            disposition, seq = upsert_message(
                conn, conversation_id=conversation.conversation_id, message_id=message.id,
                role=message.role, text_=message.text, rating=message.rating,
                rating_comment=message.rating_comment,
                agent_run_id=message.agent_run_id or conversation.agent_run_id, now=now)
            entry: dict[str, Any] = {"index": index, "id": message.id,
                                     "disposition": disposition}
            if disposition == "conflict":
                entry["reason"] = "message id already used with other text or conversation"
            dispositions.append(entry)
            top_seq = max(top_seq, seq or 0)
        if top_seq:
            set_last_message_seq(conn, conversation.conversation_id, top_seq, now)
    return {"ok": True, "conversation_id": conversation.conversation_id,
            "messages": dispositions}
