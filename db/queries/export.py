"""Reading everything held about a subject (worker/erasure/export.py): its notes with their
history, examples, conversations with their messages, memory candidates — each row as the
JSON record the export writes.

A subject's rows are matched by exactly the predicates an erasure deletes by
(`db.queries.erasure.subject_predicate`): what an export shows is what an erasure would
take. Every read streams through a server-side cursor (`stream_results`, `yield_per`), so a
subject with 100k notes is read in batches, never held whole; a note's history is
aggregated per note in the same statement. Postgres renders each record (`row_to_json`:
one line, keys in the order below, timestamps ISO 8601 in the session's time zone), so the
worker handles one string per row. Vectors are never read.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from sqlalchemy import Connection, TextClause, text

from db.queries.erasure import PredKey, subject_predicate

STREAM_BATCH = 500  # rows fetched per round trip

# A record's fields, in order: its `type`, then these columns (a note's and a candidate's own
# `type` as `note_type`), the scope columns nested under `scope`, then any extra (a note's
# `history`, a message's `conversation_id`). Not exported: vectors, the generated scope key,
# the decay bookkeeping (`retention*`, `access_count_at_decay`), content hashes.
NOTE_COLUMNS = (
    "id", "status", "type", "note", "author_type", "protection_tier", "importance_score",
    "confidence", "access_count", "last_accessed_at", "expires_at", "embedding_model",
    "source_conversation_id", "source_conversation_detail_id", "source_agent_run_id",
    "derived_from_note_ids", "consolidated_into_note_id", "consolidation_count",
    "superseded_by", "corrects_note_id", "review_flag", "hardened_at", "valid_from",
    "valid_to", "created_at", "updated_at", "content_erased_at",
)
EXAMPLE_COLUMNS = (
    "id", "status", "input_text", "output_text", "success_score", "embedding_model",
    "source_conversation_id", "access_count", "last_accessed_at", "created_at", "updated_at",
)
CANDIDATE_COLUMNS = (
    "id", "status", "type", "note", "source", "run_id", "seq", "conversation_id",
    "conversation_detail_id", "decision_reason", "decided_by", "decided_at", "note_id",
    "created_at", "updated_at",
)
CONVERSATION_COLUMNS = ("id", "agent_run_id", "created_at", "updated_at")
MESSAGE_COLUMNS = ("id", "conversation_id", "role", "text", "rating", "rating_comment",
                   "agent_run_id", "created_at", "ingested_seq")
SCOPE_COLUMNS = ("agent_id", "user_id", "company_id", "primary_scope_entity",
                 "primary_scope_record_id", "secondary_scopes")
# A note event in a note's `history` (with its `id` first and `at`, when, last).
EVENT_FIELDS = ("action", "from_status", "to_status", "actor", "reason", "related_note_ids",
                "cycle_id", "detail")


def _fields(alias: str, columns: tuple[str, ...]) -> str:
    return ", ".join(f"{alias}.{c} AS note_type" if c == "type" else f"{alias}.{c}"
                     for c in columns)


def _scope(alias: str) -> str:
    return (f"(SELECT row_to_json(s) FROM (SELECT {_fields(alias, SCOPE_COLUMNS)}) s) "  # noqa: S608
            "AS scope")


def _record(kind: str, alias: str, columns: tuple[str, ...], *, scoped: bool = True,
            extra: str = "") -> str:
    """`SELECT`-list of the record of one row of `alias`: its fields then `extra`."""
    parts = [f"'{kind}'::text AS type", _fields(alias, columns)]
    if scoped:
        parts.append(_scope(alias))
    if extra:
        parts.append(extra)
    return ", ".join(parts)


# Every statement yields (record type, note events in it, the record as one line of JSON)
# in the file's order.

@cache
def _notes_sql(key: PredKey) -> TextClause:
    # A JSON array of the events' rows (row_to_json keeps the fields' order; json_agg would
    # put line breaks between elements, and a record must stay on one line).
    event = ", ".join(f"e.{f}" for f in EVENT_FIELDS)
    history = ("(SELECT CAST('[' || coalesce(string_agg(row_to_json(v)::text, ',' "  # noqa: S608
               "ORDER BY v.id), '') || ']' AS json) "
               f"FROM (SELECT e.id, {event}, e.created_at AS at FROM note_events e "
               "WHERE e.note_id = n.id) v) AS history")
    return text(f"""
SELECT r.type, json_array_length(r.history) AS events, row_to_json(r)::text AS line
FROM (SELECT {_record("note", "n", NOTE_COLUMNS, extra=history)}
      FROM notes n WHERE {subject_predicate("notes", key)}) r
ORDER BY r.created_at, r.id
""")  # noqa: S608 - constants only; values are bound


def _flat_sql(kind: str, table: str, alias: str, columns: tuple[str, ...],
              key: PredKey) -> TextClause:
    """One record per row of `table`, no history, oldest first."""
    return text(f"""
SELECT r.type, 0 AS events, row_to_json(r)::text AS line
FROM (SELECT {_record(kind, alias, columns)}
      FROM {table} {alias} WHERE {subject_predicate(table, key)}) r
ORDER BY r.created_at, r.id
""")  # noqa: S608 - constants only


@cache
def _examples_sql(key: PredKey) -> TextClause:
    return _flat_sql("example", "examples", "x", EXAMPLE_COLUMNS, key)


@cache
def _candidates_sql(key: PredKey) -> TextClause:
    return _flat_sql("candidate", "memory_candidates", "k", CANDIDATE_COLUMNS, key)


@cache
def _conversations_sql(key: PredKey) -> TextClause:
    # Each conversation, then its messages in the order they were received (a message's
    # ingested_seq is at least 1, so the conversation's 0 comes first).
    chosen = ("SELECT id FROM conversations WHERE "  # noqa: S608 - constants
              f"{subject_predicate('conversations', key)}")
    return text(f"""
SELECT type, 0 AS events, line FROM (
    SELECT r.type, r.id AS conversation, 0::bigint AS seq, row_to_json(r)::text AS line
    FROM (SELECT {_record("conversation", "c", CONVERSATION_COLUMNS)}
          FROM conversations c WHERE c.id IN ({chosen})) r
    UNION ALL
    SELECT r.type, r.conversation_id, r.ingested_seq, row_to_json(r)::text
    FROM (SELECT {_record("conversation_message", "m", MESSAGE_COLUMNS, scoped=False)}
          FROM conversation_messages m WHERE m.conversation_id IN ({chosen})) r
) records
ORDER BY conversation, seq
""")  # noqa: S608 - constants only


_SQL = {"notes": _notes_sql, "examples": _examples_sql,
        "conversations": _conversations_sql, "memory_candidates": _candidates_sql}

# What an export reads, in the order its file holds them.
EXPORTED = tuple(_SQL)
# A record type -> the table it comes from (the trailer's counts are per table).
RECORD_TABLES = {"note": "notes", "example": "examples", "conversation": "conversations",
                 "conversation_message": "conversation_messages",
                 "candidate": "memory_candidates"}


def stream_subject_records(conn: Connection, what: str, key: PredKey, params: dict[str, Any],
                           *, batch: int = STREAM_BATCH) -> Iterator[tuple[str, int, str]]:
    """(record type, note events, JSON line) of the subject's rows of `what` (one of
    EXPORTED), `batch` rows at a time from a server-side cursor. Call inside a transaction
    (a named cursor lives in one)."""
    result = conn.execution_options(stream_results=True, yield_per=batch).execute(
        _SQL[what](key), params)
    try:
        for kind, events, line in result:  # noqa: UP028 - plain tuples, not Rows
            yield kind, events, line
    finally:
        result.close()
