"""The rows a request may see, read as exact index ranges: one range per lattice level it may
see (`db.scope.visible_levels`) and per lattice index, then the one scope predicate.

Injectable notes are split between two lattice indexes, exactly once each: rows whose
embedding fits a btree row are in `notes_vector_idx` (it also carries status, expiry, id and
the vector, so ranking reads no heap row), the rest (no embedding, a large model's vector,
very long ids) in `notes_lattice_rest_idx`. Every query over a request's notes — ranking,
Recent/All, the policy filters' counts — scans these ranges, never the table: a scope is
never found by scanning a million rows, and an approximate index is never scanned first and
filtered after. Examples have one lattice index.
"""

from __future__ import annotations

from typing import Any

from db.enums import INJECTABLE_SQL
from db.scope import RequestScope, ScopeConfig, level_condition, visibility_sql, visible_levels

# Bytes a note's row takes in `notes_vector_idx`, less fixed overhead: its key texts and its
# vector (4 bytes a dimension). Rows up to VECTOR_INDEX_MAX_BYTES (384-dim MiniLM vectors
# with ids of up to ~850 bytes) are in that index: btree rows are capped at 2,704 bytes and
# the fixed part (tuple header, null bitmap, varlena headers, status, expiry, id, created_at,
# alignment) is under 130. NULL without an embedding (embedding_model is NULL exactly then).
# The index predicates (db/migrations/0004 and 0007, db/models/) and the queries use these
# exact texts, so the planner can prove which index a branch may use, under custom and
# generic plans.
VECTOR_ROW_BYTES_SQL = (
    "(octet_length(coalesce(agent_id, '')) + octet_length(coalesce(user_id, '')) + "
    "octet_length(coalesce(company_id, '')) + octet_length(embedding_model) + "
    "4 * vector_dims(embedding))"
)
VECTOR_INDEX_MAX_BYTES = 2400
VECTOR_INDEXED_SQL = f"{VECTOR_ROW_BYTES_SQL} <= {VECTOR_INDEX_MAX_BYTES}"
LATTICE_REST_SQL = f"(embedding IS NULL OR {VECTOR_ROW_BYTES_SQL} > {VECTOR_INDEX_MAX_BYTES})"
# Together exactly the injectable rows, each once: one index range per part and lattice level.
NOTE_LATTICE_PARTS = (VECTOR_INDEXED_SQL, LATTICE_REST_SQL)

# The columns the scope predicate reads (db.scope.visibility_sql).
SCOPE_COLUMNS = ("agent_id, user_id, company_id, primary_scope_entity, primary_scope_record_id, "
                 "secondary_scopes")


def visible_rows(table: str, levels: list[tuple[bool, bool, bool]], columns: str, *,
                 expiring: bool) -> str:
    """UNION ALL of one index range per lattice level (two for notes, one per lattice index)
    over injectable rows; `expiring`: unexpired ones only (:now)."""
    alive = " AND (n.expires_at IS NULL OR n.expires_at > :now)" if expiring else ""
    parts = [f" AND {part}" for part in NOTE_LATTICE_PARTS] if table == "notes" else [""]
    return "\nUNION ALL\n".join(
        f"SELECT {columns} FROM {table} n WHERE {level_condition(level)} "
        f"AND n.{INJECTABLE_SQL}{part}{alive}"
        for level in levels for part in parts
    )


def scoped_rows(table: str, request: RequestScope, config: ScopeConfig, columns: str, *,
                expiring: bool) -> tuple[str, dict[str, Any]]:
    """CTEs `visible` (the ranges) and `scoped` (the predicate applied) for a WITH clause.
    `columns` (qualified with `n.`) must include SCOPE_COLUMNS."""
    levels = visible_levels(request)
    if table == "examples":  # examples are always agent-scoped: 4 levels, agent required
        levels = [level for level in levels if level[0]]
    predicate, params = visibility_sql(request, config)
    rows = visible_rows(table, levels, columns, expiring=expiring)
    return (f"visible AS MATERIALIZED ({rows}),\n"
            f"scoped AS (SELECT n.* FROM visible n WHERE {predicate})"), params


def qualified(columns: str) -> str:
    """"a, b" -> "n.a, n.b"."""
    return ", ".join(f"n.{c.strip()}" for c in columns.split(","))
