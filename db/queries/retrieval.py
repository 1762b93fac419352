"""The read path: candidate notes and examples for a request, and access statistics.

Every query scans the lattice levels the request may see (one exact index range each, see
`db.scope.visible_levels`), keeps only unexpired injectable rows, then applies the one scope
predicate (`db.scope.visibility_sql`). Vector ranking is an exact top-N over that scoped set:
an approximate index is never scanned first and filtered after, so a selective scope can
never starve the result, whatever plan (custom or generic) Postgres picks.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from db.enums import INJECTABLE_SQL
from db.scope import (
    RequestScope,
    ScopeConfig,
    level_condition,
    specificity_sql,
    visibility_sql,
    visible_levels,
)

NOTE_COLUMNS = (
    "id, type, note, status, author_type, protection_tier, agent_id, user_id, company_id, "
    "primary_scope_entity, primary_scope_record_id, secondary_scopes, created_at, expires_at"
)
EXAMPLE_COLUMNS = (
    "id, input_text, output_text, success_score, agent_id, user_id, company_id, "
    "primary_scope_entity, primary_scope_record_id, secondary_scopes, created_at"
)


@dataclass(frozen=True)
class NoteCandidate:
    id: uuid.UUID
    type: str
    note: str
    status: str
    author_type: str
    protection_tier: str
    agent_id: str | None
    user_id: str | None
    company_id: str | None
    primary_scope_entity: str | None
    primary_scope_record_id: str | None
    secondary_scopes: dict[str, Any]
    created_at: datetime
    expires_at: datetime | None
    similarity: float | None = None


@dataclass(frozen=True)
class ExampleCandidate:
    id: uuid.UUID
    input_text: str
    output_text: str
    success_score: float | None
    agent_id: str | None
    user_id: str | None
    company_id: str | None
    primary_scope_entity: str | None
    primary_scope_record_id: str | None
    secondary_scopes: dict[str, Any]
    created_at: datetime
    similarity: float | None = None


def _visible_rows(table: str, levels: list[tuple[bool, bool, bool]], *, expiring: bool) -> str:
    """UNION ALL of one index range per lattice level: unexpired injectable rows."""
    alive = " AND (n.expires_at IS NULL OR n.expires_at > :now)" if expiring else ""
    return "\nUNION ALL\n".join(
        f"SELECT n.* FROM {table} n WHERE {level_condition(level)} AND n.{INJECTABLE_SQL}{alive}"
        for level in levels
    )


def _scoped(table: str, request: RequestScope, config: ScopeConfig, *,
            expiring: bool) -> tuple[str, dict[str, Any]]:
    levels = visible_levels(request)
    if table == "examples":  # examples are always agent-scoped: 4 levels, agent required
        levels = [level for level in levels if level[0]]
    predicate, params = visibility_sql(request, config)
    rows = _visible_rows(table, levels, expiring=expiring)
    return (f"visible AS MATERIALIZED ({rows}),\n"
            f"scoped AS (SELECT n.* FROM visible n WHERE {predicate})"), params


def _ranked_notes(request: RequestScope, config: ScopeConfig, *, order: str, extra: str,
                  select_extra: str, per_status: int, params: dict[str, Any],
                  conn: Connection) -> list[NoteCandidate]:
    scoped, scope_params = _scoped("notes", request, config, expiring=True)
    sql = f"""
WITH {scoped},
ranked AS (
    SELECT n.*, row_number() OVER (PARTITION BY n.status ORDER BY {order}) AS status_rank
    FROM (SELECT n.*{select_extra} FROM scoped n {extra}) AS n
)
SELECT {NOTE_COLUMNS}, {'similarity' if select_extra else 'NULL::float8 AS similarity'}
FROM ranked n WHERE status_rank <= :per_status
ORDER BY {order}
"""
    rows = conn.execute(text(sql), {**scope_params, **params, "per_status": per_status})
    return [NoteCandidate(**row._mapping) for row in rows]


def relevant_notes(conn: Connection, request: RequestScope, config: ScopeConfig, *,
                   query: np.ndarray, embedding_model: str, min_similarity: float,
                   per_status: int, now: datetime) -> list[NoteCandidate]:
    """Up to `per_status` most similar notes of each status, similarity >= min_similarity."""
    similarity = "1 - (n.embedding <=> CAST(:query AS vector))"
    return _ranked_notes(
        request, config,
        order="similarity DESC, n.id",
        select_extra=f", {similarity} AS similarity",
        extra=("WHERE n.embedding_model = :model AND vector_dims(n.embedding) = :dims "
               f"AND {similarity} >= :min_similarity"),
        per_status=per_status,
        params={"query": query, "model": embedding_model, "dims": int(query.shape[0]),
                "min_similarity": min_similarity, "now": now},
        conn=conn,
    )


def recent_notes(conn: Connection, request: RequestScope, config: ScopeConfig, *,
                 per_status: int, now: datetime) -> list[NoteCandidate]:
    return _ranked_notes(request, config, order="n.created_at DESC, n.id", extra="",
                         select_extra="", per_status=per_status, params={"now": now},
                         conn=conn)


def all_notes(conn: Connection, request: RequestScope, config: ScopeConfig, *,
              per_status: int, now: datetime) -> list[NoteCandidate]:
    """No relevance filter: most specific scope first, then newest."""
    return _ranked_notes(request, config,
                         order=f"{specificity_sql()}, n.created_at DESC, n.id", extra="",
                         select_extra="", per_status=per_status, params={"now": now},
                         conn=conn)


def visible_note_ids(conn: Connection, request: RequestScope, config: ScopeConfig,
                     now: datetime) -> set[uuid.UUID]:
    """Every note the request may see (the SQL form of the predicate, for checks)."""
    scoped, params = _scoped("notes", request, config, expiring=True)
    rows = conn.execute(text(f"WITH {scoped} SELECT id FROM scoped"), {**params, "now": now})
    return {row.id for row in rows}


_EXAMPLE_ORDER = {
    "Semantic": "similarity DESC, n.id",
    "Recent": "n.created_at DESC, n.id",
    "Rated": "n.success_score DESC NULLS LAST, n.created_at DESC, n.id",
}


def examples(conn: Connection, request: RequestScope, config: ScopeConfig, *, strategy: str,
             limit: int, query: np.ndarray | None, embedding_model: str | None
             ) -> list[ExampleCandidate]:
    scoped, params = _scoped("examples", request, config, expiring=False)
    if strategy == "Semantic":
        if query is None:
            return []
        select = "1 - (n.embedding <=> CAST(:query AS vector)) AS similarity"
        where = "WHERE n.embedding_model = :model AND vector_dims(n.embedding) = :dims"
        params.update(query=query, model=embedding_model, dims=int(query.shape[0]))
    else:
        select, where = "NULL::float8 AS similarity", ""
    sql = (f"WITH {scoped} SELECT {EXAMPLE_COLUMNS}, {select} FROM scoped n {where} "
           f"ORDER BY {_EXAMPLE_ORDER[strategy]} LIMIT :limit")
    return [ExampleCandidate(**row._mapping)
            for row in conn.execute(text(sql), {**params, "limit": limit})]


_BUMP_ACCESS = text("""
UPDATE notes AS n
SET access_count = n.access_count + c.hits,
    last_accessed_at = greatest(n.last_accessed_at, CAST(:at AS timestamptz))
FROM (SELECT id, hits FROM unnest(CAST(:ids AS uuid[]), CAST(:hits AS integer[])) AS u(id, hits)
      ORDER BY id) AS c
WHERE n.id = c.id
""")


def bump_access(conn: Connection, hits: dict[uuid.UUID, int], at: datetime) -> None:
    if hits:
        ids = sorted(hits)  # a stable order keeps concurrent flushes from deadlocking
        conn.execute(_BUMP_ACCESS, {"ids": ids, "hits": [hits[i] for i in ids], "at": at})
