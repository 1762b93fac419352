"""Forgetting on request (worker/erasure/): the subject's rows by table, deleted in bounded
batches; provenance in kept rows that names the subject, cleared. The fences are in
db/queries/fences.py, the audit records in db/queries/audit.py.

A subject is matched by a predicate per table, chosen from constants by the subject's kind
(and, for a user, whether it is narrowed to an agent and/or company); values are always
bound (`:sid`, `:s_agent`, `:s_company`). Batches select row ids with `FOR UPDATE` (never
SKIP LOCKED: a row a write holds is waited for, not left behind) and `LIMIT :limit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import Connection, TextClause, text

# --- predicates --------------------------------------------------------------------------------

def _user(agent: bool, company: bool) -> str:
    return ("user_id = :sid" + (" AND agent_id = :s_agent" if agent else "")
            + (" AND company_id = :s_company" if company else ""))


# What a predicate key is: ("user", narrowed to agent, narrowed to company) or (kind, F, F).
PredKey = tuple[str, bool, bool]


def _scoped(key: PredKey) -> str:
    """Rows that carry the subject in their own scope columns (agent, user, company)."""
    kind, agent, company = key
    if kind == "user":
        return _user(agent, company)
    return {"company": "company_id = :sid", "agent": "agent_id = :sid",
            "conversation": "false"}[kind]


def _runs(key: PredKey) -> str:
    if key[0] == "conversation":
        return "conversation_id = :sid"
    return _scoped(key)


def _conversations(key: PredKey) -> str:
    if key[0] == "conversation":
        return "id = :sid"
    return _scoped(key)


def _subject_runs(key: PredKey) -> str:
    return f"(SELECT run_id FROM runs WHERE {_runs(key)})"  # noqa: S608 - constants only


def _subject_conversations(key: PredKey) -> str:
    return f"(SELECT id FROM conversations WHERE {_conversations(key)})"  # noqa: S608


def _notes(key: PredKey) -> str:
    if key[0] == "conversation":
        # Everything derived from the conversation: extracted from it, or written by its runs.
        return (f"(source_conversation_id = :sid OR source_agent_run_id IN "
                f"{_subject_runs(key)})")
    return _scoped(key)


def _examples(key: PredKey) -> str:
    if key[0] == "conversation":
        return "source_conversation_id = :sid"
    return _scoped(key)


def _candidates(key: PredKey) -> str:
    own = "conversation_id = :sid" if key[0] == "conversation" else _scoped(key)
    return f"({own} OR run_id IN {_subject_runs(key)})"


def _trace(key: PredKey) -> str:
    agent = " OR agent_id = :sid" if key[0] == "agent" else ""
    return f"(run_id IN {_subject_runs(key)}{agent})"


def _run_payload(key: PredKey) -> str:
    """A chain step whose run payload (args[0]) is the subject's."""
    kind, agent, company = key
    if kind == "user":
        cond = "s->'args'->0->>'user_id' = :sid"
        cond += " AND s->'args'->0->>'agent_id' = :s_agent" if agent else ""
        cond += " AND s->'args'->0->>'company_id' = :s_company" if company else ""
    else:
        field = {"company": "company_id", "agent": "agent_id",
                 "conversation": "conversation_id"}[kind]
        cond = f"s->'args'->0->>'{field}' = :sid"
    return ("EXISTS (SELECT 1 FROM jsonb_array_elements(CASE jsonb_typeof(chain) WHEN 'array' "  # noqa: S608
            f"THEN chain ELSE '[]'::jsonb END) s WHERE {cond})")


# (table, id column, predicate builder): the rows deleted, in an order the foreign keys allow.
# Notes and candidates get their own statements (they are referenced from kept rows).
_PLAIN_TABLES: dict[str, tuple[str, Any]] = {
    "trace_events": ("id", _trace),
    "write_log": ("ctid", lambda k: f"run_id IN {_subject_runs(k)}"),
    "examples": ("id", _examples),
    "conversation_messages": ("id", lambda k: f"conversation_id IN {_subject_conversations(k)}"),
    "chain_continuations": ("id", _run_payload),
    # The raw message as received: matched on the id as a JSON string anywhere in it.
    "dead_letters": ("id", lambda k: "strpos(body, :sid_json) > 0"),
}


@cache
def _count_memos_sql(key: PredKey) -> TextClause:
    return text(f"""
SELECT count(*) FROM judge_memo
WHERE text_hashes && ARRAY(SELECT content_hash FROM notes
                          WHERE {_notes(key)} AND content_hash IS NOT NULL)
""")  # noqa: S608 - constants


def count_memos(conn: Connection, key: PredKey, params: dict[str, Any]) -> int:
    """Judge memos decided on a text of the subject's notes."""
    return int(conn.execute(_count_memos_sql(key), params).scalar_one())


# Every table a subject has rows in -> its predicate builder: the one scope rule erasure
# deletes by and export (db/queries/export.py) reads by.
_PREDICATES: dict[str, Any] = {
    **{t: b for t, (_, b) in _PLAIN_TABLES.items()}, "runs": _runs,
    "conversations": _conversations, "notes": _notes, "memory_candidates": _candidates}


def subject_predicate(table: str, key: PredKey) -> str:
    """The WHERE condition (over `table`'s own, unqualified columns; values bound as `:sid`,
    `:s_agent`, `:s_company`) matching the subject's rows of `table`."""
    return str(_PREDICATES[table](key))


@cache
def _count_sql(table: str, key: PredKey) -> TextClause:
    pred = subject_predicate(table, key)
    return text(f"SELECT count(*) FROM {table} WHERE {pred}")  # noqa: S608 - constants


ERASED_TABLES = ("trace_events", "write_log", "memory_candidates", "notes", "examples",
                 "conversation_messages", "conversations", "runs", "chain_continuations",
                 "dead_letters")


def count_rows(conn: Connection, table: str, key: PredKey, params: dict[str, Any]) -> int:
    return int(conn.execute(_count_sql(table, key), params).scalar_one())


@cache
def _delete_plain_sql(table: str, key: PredKey) -> TextClause:
    id_col, builder = _PLAIN_TABLES[table]
    returning = " RETURNING task_id" if table == "write_log" else ""
    return text(f"""
DELETE FROM {table} WHERE {id_col} = ANY(ARRAY(
    SELECT {id_col} FROM {table} WHERE {builder(key)} LIMIT :limit FOR UPDATE)){returning}
""")  # noqa: S608 - our own constants only


def delete_batch(conn: Connection, table: str, key: PredKey,
                 params: dict[str, Any]) -> list[Any]:
    """One batch of a plain table's subject rows; returns one value per row deleted
    (the write log's task ids, else None)."""
    result = conn.execute(_delete_plain_sql(table, key), params)
    if table == "write_log":
        return [row.task_id for row in result]
    return [None] * (result.rowcount or 0)


# --- notes and candidates: referenced from rows that stay ----------------------------------

@cache
def _select_ids_sql(table: str, key: PredKey) -> TextClause:
    pred = subject_predicate(table, key)
    id_col = "run_id" if table == "runs" else "id"
    return text(f"SELECT {id_col} FROM {table} WHERE {pred} ORDER BY {id_col} "  # noqa: S608
                "LIMIT :limit FOR UPDATE")


def select_batch(conn: Connection, table: str, key: PredKey,
                 params: dict[str, Any]) -> list[Any]:
    return list(conn.execute(_select_ids_sql(table, key), params).scalars())


_UNLINK_CANDIDATES = text("UPDATE write_log SET candidate_id = NULL WHERE candidate_id = ANY(:ids)")
_DELETE_CANDIDATES = text("""
DELETE FROM memory_candidates WHERE id = ANY(:ids) RETURNING user_id, company_id
""")

# Rows that stay and point at a note that goes: the pointer goes (a foreign key would refuse
# the delete otherwise; a kept note's history loses the link, never its own state).
_UNLINK_NOTES = (
    text("UPDATE notes SET consolidated_into_note_id = NULL "
         "WHERE consolidated_into_note_id = ANY(:ids) AND NOT id = ANY(:ids)"),
    text("UPDATE notes SET superseded_by = NULL "
         "WHERE superseded_by = ANY(:ids) AND NOT id = ANY(:ids)"),
    text("UPDATE notes SET corrects_note_id = NULL "
         "WHERE corrects_note_id = ANY(:ids) AND NOT id = ANY(:ids)"),
    text("UPDATE write_log SET note_id = NULL WHERE note_id = ANY(:ids)"),
    text("UPDATE memory_candidates SET note_id = NULL WHERE note_id = ANY(:ids)"),
)
_DELETE_NOTE_EVENTS = text("DELETE FROM note_events WHERE note_id = ANY(:ids)")
_DELETE_ACCESS = text("DELETE FROM note_access_pending WHERE note_id = ANY(:ids)")
_DELETE_NOTES = text("""
DELETE FROM notes WHERE id = ANY(:ids) RETURNING user_id, company_id, note, content_hash
""")
# Judge memos decided on a deleted text (another scope's note with the same text loses its
# memo too: it is a cache, asked again).
_DELETE_MEMOS = text("""
DELETE FROM judge_memo WHERE text_hashes && CAST(:hashes AS text[])
""")


def delete_candidates(conn: Connection, ids: list[Any]) -> list[tuple[str | None, str | None]]:
    conn.execute(_UNLINK_CANDIDATES, {"ids": ids})
    return [(r.user_id, r.company_id) for r in conn.execute(_DELETE_CANDIDATES, {"ids": ids})]


@dataclass(frozen=True)
class DeletedNotes:
    events: int  # note events deleted with them
    access: int  # pending access rows
    memos: int  # judge memos decided on their texts
    owners_and_texts: list[tuple[str | None, str | None, str | None]]  # (user, company, text)


def delete_notes(conn: Connection, ids: list[Any]) -> DeletedNotes:
    for statement in _UNLINK_NOTES:
        conn.execute(statement, {"ids": ids})
    events = conn.execute(_DELETE_NOTE_EVENTS, {"ids": ids}).rowcount or 0
    access = conn.execute(_DELETE_ACCESS, {"ids": ids}).rowcount or 0
    rows = conn.execute(_DELETE_NOTES, {"ids": ids}).all()
    hashes = sorted({r.content_hash for r in rows if r.content_hash})
    memos = (conn.execute(_DELETE_MEMOS, {"hashes": hashes}).rowcount or 0) if hashes else 0
    return DeletedNotes(events, access, memos,
                        [(r.user_id, r.company_id, r.note) for r in rows])


# --- provenance in kept rows that names the subject's runs or conversations ----------------

@cache
def _conversation_ids_sql(key: PredKey) -> TextClause:
    # A conversation is the subject's when its row is, and also when only a run, note,
    # example or candidate of the subject names it: a run may name a conversation that was
    # never recorded (or was already deleted), and its notes carry that id all the same.
    return text(f"""
SELECT id FROM conversations WHERE {_conversations(key)}
UNION SELECT conversation_id FROM runs WHERE {_runs(key)} AND conversation_id IS NOT NULL
UNION SELECT source_conversation_id FROM notes
      WHERE {_notes(key)} AND source_conversation_id IS NOT NULL
UNION SELECT source_conversation_id FROM examples
      WHERE {_examples(key)} AND source_conversation_id IS NOT NULL
UNION SELECT conversation_id FROM memory_candidates
      WHERE {_candidates(key)} AND conversation_id IS NOT NULL
""")  # noqa: S608 - constants


def subject_conversation_ids(conn: Connection, key: PredKey, params: dict[str, Any]) -> set[str]:
    """Every conversation id the subject's rows hold, recorded or not."""
    return set(conn.execute(_conversation_ids_sql(key), params).scalars())


@cache
def _provenance_sql(key: PredKey) -> tuple[TextClause, ...]:
    runs = _subject_runs(key)

    def batch(table: str, set_: str, where: str) -> TextClause:
        id_col = "run_id" if table == "runs" else "id"
        return text(f"UPDATE {table} SET {set_} WHERE {id_col} = ANY(ARRAY("  # noqa: S608
                    f"SELECT {id_col} FROM {table} WHERE {where} LIMIT :limit FOR UPDATE))")

    convs = "= ANY(CAST(:conversation_ids AS text[]))"
    return (
        batch("notes", "source_conversation_id = NULL, source_conversation_detail_id = NULL",
              f"source_conversation_id {convs}"),
        batch("notes", "source_agent_run_id = NULL, source_conversation_detail_id = NULL",
              f"source_agent_run_id IN {runs}"),
        batch("examples", "source_conversation_id = NULL", f"source_conversation_id {convs}"),
        batch("conversation_messages", "agent_run_id = NULL", f"agent_run_id IN {runs}"),
        batch("conversations", "agent_run_id = NULL", f"agent_run_id IN {runs}"),
        batch("runs", "conversation_id = NULL, conversation_detail_id = NULL",
              f"conversation_id {convs} AND run_id NOT IN {runs}"),
        batch("memory_candidates", "conversation_id = NULL, conversation_detail_id = NULL",
              f"conversation_id {convs}"),
    )


def clear_provenance_batch(conn: Connection, key: PredKey, params: dict[str, Any],
                           conversation_ids: list[str]) -> int:
    """One batch of each kept-row provenance clearing (the subject's runs, and the
    conversations `conversation_ids`); the number of rows changed."""
    bound = {**params, "conversation_ids": conversation_ids}
    return sum(conn.execute(s, bound).rowcount or 0 for s in _provenance_sql(key))


# --- conversations and runs -------------------------------------------------------------------

_DELETE_CONVERSATIONS = text("""
DELETE FROM conversations WHERE id = ANY(:ids) RETURNING user_id, company_id
""")
# The delete trigger leaves a tombstone with the id in clear; provenance naming these
# conversations was cleared above, so nothing needs the tombstone.
_DELETE_TOMBSTONES = text("DELETE FROM conversation_tombstones WHERE conversation_id = ANY(:ids)")
_DELETE_RUNS = text("DELETE FROM runs WHERE run_id = ANY(:ids) RETURNING user_id, company_id")


def delete_conversations(conn: Connection, ids: list[str]) -> list[tuple[Any, Any]]:
    deleted = [(r.user_id, r.company_id) for r in conn.execute(_DELETE_CONVERSATIONS,
                                                                {"ids": ids})]
    conn.execute(_DELETE_TOMBSTONES, {"ids": ids})
    return deleted


def delete_runs(conn: Connection, ids: list[str]) -> list[tuple[Any, Any]]:
    return [(r.user_id, r.company_id) for r in conn.execute(_DELETE_RUNS, {"ids": ids})]


_DELETE_AGENT = text("DELETE FROM agents WHERE agent_id = :sid")


def delete_agent_row(conn: Connection, agent_id: str) -> int:
    return conn.execute(_DELETE_AGENT, {"sid": agent_id}).rowcount or 0


_COUNT_AGENT = text("SELECT count(*) FROM agents WHERE agent_id = :sid")


def count_agent_row(conn: Connection, agent_id: str) -> int:
    return int(conn.execute(_COUNT_AGENT, {"sid": agent_id}).scalar_one())


# A principal stays while any row still holds that id (a narrowed erasure, another agent).
_DELETE_ORPHAN_PRINCIPALS = text("""
DELETE FROM principals p
WHERE p.kind = :kind AND p.folded_id = ANY(:folded)
  AND NOT EXISTS (SELECT 1 FROM runs WHERE lower(CASE :kind WHEN 'user' THEN user_id
                                                  ELSE company_id END) = p.folded_id)
  AND NOT EXISTS (SELECT 1 FROM conversations WHERE lower(CASE :kind WHEN 'user' THEN user_id
                                                  ELSE company_id END) = p.folded_id)
  AND NOT EXISTS (SELECT 1 FROM notes WHERE lower(CASE :kind WHEN 'user' THEN user_id
                                                  ELSE company_id END) = p.folded_id)
""")


def delete_orphan_principals(conn: Connection, kind: str, folded: list[str]) -> int:
    if not folded:
        return 0
    return conn.execute(_DELETE_ORPHAN_PRINCIPALS, {"kind": kind, "folded": folded}).rowcount or 0


_COUNT_PRINCIPALS = text("""
SELECT count(*) FROM principals WHERE kind = :kind AND folded_id = ANY(:folded)
""")


def count_principals(conn: Connection, kind: str, folded: list[str]) -> int:
    return int(conn.execute(_COUNT_PRINCIPALS, {"kind": kind, "folded": folded}).scalar_one())


@cache
def _run_ids_sql(key: PredKey) -> TextClause:
    return text(f"SELECT run_id FROM runs WHERE {_runs(key)} ORDER BY run_id "  # noqa: S608
                "LIMIT :limit OFFSET :offset")


def subject_run_ids(conn: Connection, key: PredKey, params: dict[str, Any], *,
                    limit: int, offset: int) -> list[str]:
    """A page of the subject's run ids (the dry run's Redis counts)."""
    return list(conn.execute(_run_ids_sql(key), {**params, "limit": limit,
                                                 "offset": offset}).scalars())
