"""Reading everything held about a subject (worker/erasure/export.py): its notes with their
history, examples, conversations with their messages, memory candidates.

A subject's rows are matched by exactly the predicates an erasure deletes by
(`db.queries.erasure.subject_predicate`): what an export shows is what an erasure would
take. Every read streams through a server-side cursor (`stream_results`, `yield_per`), so a
subject with 100k notes is read in batches, never held whole; a note's history is
aggregated per note in the same statement. Vectors are never read.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from sqlalchemy import Connection, RowMapping, TextClause, text

from db.queries.erasure import PredKey, subject_predicate

STREAM_BATCH = 500  # rows fetched per round trip

# What a note's record holds: every column but the vector, the generated scope key and
# the decay bookkeeping (`retention*`, `access_count_at_decay`).
NOTE_COLUMNS = (
    "id", "status", "type", "note", "agent_id", "user_id", "company_id",
    "primary_scope_entity", "primary_scope_record_id", "secondary_scopes", "author_type",
    "protection_tier", "importance_score", "confidence", "access_count", "last_accessed_at",
    "expires_at", "embedding_model", "source_conversation_id", "source_conversation_detail_id",
    "source_agent_run_id", "derived_from_note_ids", "consolidated_into_note_id",
    "consolidation_count", "superseded_by", "corrects_note_id", "review_flag", "hardened_at",
    "valid_from", "valid_to", "created_at", "updated_at", "content_erased_at",
)
EXAMPLE_COLUMNS = (
    "id", "status", "agent_id", "user_id", "company_id", "primary_scope_entity",
    "primary_scope_record_id", "secondary_scopes", "input_text", "output_text",
    "success_score", "embedding_model", "source_conversation_id", "access_count",
    "last_accessed_at", "created_at", "updated_at",
)
CANDIDATE_COLUMNS = (
    "id", "status", "type", "note", "source", "run_id", "seq", "agent_id", "user_id",
    "company_id", "primary_scope_entity", "primary_scope_record_id", "secondary_scopes",
    "conversation_id", "conversation_detail_id", "decision_reason", "decided_by",
    "decided_at", "note_id", "created_at", "updated_at",
)
CONVERSATION_COLUMNS = (
    "id", "agent_id", "user_id", "company_id", "primary_scope_entity",
    "primary_scope_record_id", "secondary_scopes", "agent_run_id", "created_at", "updated_at",
)
MESSAGE_COLUMNS = ("id", "role", "text", "rating", "rating_comment", "agent_run_id",
                   "created_at", "ingested_seq")


def _columns(alias: str, columns: tuple[str, ...], prefix: str = "") -> str:
    return ", ".join(f"{alias}.{c} AS {prefix}{c}" for c in columns)


@cache
def _notes_sql(key: PredKey) -> TextClause:
    # The history in the note's own row: one note's events at a time, in their order.
    return text(f"""
SELECT {_columns("n", NOTE_COLUMNS)},
       (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'action', e.action, 'from_status', e.from_status,
                   'to_status', e.to_status, 'actor', e.actor, 'reason', e.reason,
                   'related_note_ids', e.related_note_ids, 'cycle_id', e.cycle_id,
                   'at', e.created_at, 'detail', e.detail) ORDER BY e.id), '[]'::jsonb)
        FROM note_events e WHERE e.note_id = n.id) AS history
FROM notes n
WHERE {subject_predicate("notes", key)}
ORDER BY n.created_at, n.id
""")  # noqa: S608 - constants only; values are bound


@cache
def _examples_sql(key: PredKey) -> TextClause:
    return text(f"""
SELECT {_columns("x", EXAMPLE_COLUMNS)} FROM examples x
WHERE {subject_predicate("examples", key)}
ORDER BY x.created_at, x.id
""")  # noqa: S608 - constants only


@cache
def _candidates_sql(key: PredKey) -> TextClause:
    return text(f"""
SELECT {_columns("k", CANDIDATE_COLUMNS)} FROM memory_candidates k
WHERE {subject_predicate("memory_candidates", key)}
ORDER BY k.created_at, k.id
""")  # noqa: S608 - constants only


@cache
def _conversations_sql(key: PredKey) -> TextClause:
    # Each conversation's rows come together, its messages in the order they were received;
    # a conversation without messages has one row with m_id NULL. The predicate is applied
    # inside the subquery, where its unqualified columns are the conversation's.
    return text(f"""
SELECT {_columns("c", CONVERSATION_COLUMNS)}, {_columns("m", MESSAGE_COLUMNS, "m_")}
FROM (SELECT * FROM conversations WHERE {subject_predicate("conversations", key)}) c
LEFT JOIN conversation_messages m ON m.conversation_id = c.id
ORDER BY c.id, m.ingested_seq
""")  # noqa: S608 - constants only


_SQL = {"notes": _notes_sql, "examples": _examples_sql,
        "memory_candidates": _candidates_sql, "conversations": _conversations_sql}

# What an export reads, in the order its file holds them.
EXPORTED = tuple(_SQL)


def stream_subject_rows(conn: Connection, what: str, key: PredKey, params: dict[str, Any],
                        *, batch: int = STREAM_BATCH) -> Iterator[RowMapping]:
    """The subject's rows of `what` (one of EXPORTED), `batch` at a time from a server-side
    cursor. Call inside a transaction (a named cursor lives in one)."""
    result = conn.execution_options(stream_results=True, yield_per=batch).execute(
        _SQL[what](key), params)
    try:
        yield from result.mappings()
    finally:
        result.close()
