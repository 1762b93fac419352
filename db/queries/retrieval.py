"""The read path: candidate notes and examples for a request.

Every query scans the lattice levels the request may see (exact index ranges, two per level,
see below and `db.scope.visible_levels`), keeps only unexpired injectable rows, then applies
the one scope predicate (`db.scope.visibility_sql`). Vector ranking is an exact top-N over
that scoped set: an approximate index is never scanned first and filtered after, so a
selective scope can never starve the result, whatever plan (custom or generic) Postgres picks.

`relevant_notes` ranks in two steps, because at 1M notes the cost was reading and copying
whole rows (text, jsonb, the 1.5 kB vector; one random heap page each) for every note a
request may see — ~1,300 with shared notes — to keep five:

1. rank: every visible-level row's similarity, computed from `notes_vector_idx`, a btree on
   the lattice columns and the embedding model that also carries status, expiry, id and the
   vector, read by index-only scans (no heap access, no text decoded); rows below the
   similarity floor are dropped here;
2. fetch: per status, walk that ranking best first and read the heap row only to apply the
   full scope predicate (tenant record, secondary dimensions) and return it, until
   `per_status` rows qualified. Typically that is exactly `per_status` heap reads.

Step 1 is a superset of what the predicate admits (the lattice levels only), step 2 filters
in rank order before the limit, so the result is the exact top-N of the scoped set.

Injectable notes are split between two lattice indexes, exactly once each: rows with an
embedding that fits a btree row (`VECTOR_INDEXED_SQL`: a btree row is capped at ~2.7 kB; a
384-dim vector is 1.5 kB) are in `notes_vector_idx`; the rest (no embedding, a large model's
vector, very long ids: `LATTICE_REST_SQL`) in `notes_lattice_rest_idx`. So every query scans
two ranges per lattice level, no row is unreachable and no insert can fail on index size. The
split also takes the choice from the planner: with one general lattice index it preferred that
index plus heap reads for the ranking (its cost model takes the constant `agent_id` column for
physical order), which is several times slower on a cold cache.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np
from sqlalchemy import Connection, TextClause, text

from db.enums import INJECTABLE_SQL, INJECTABLE_STATUSES
from db.queries.injection import CORRECTED_SQL
from db.queries.lattice import NOTE_LATTICE_PARTS, SCOPE_COLUMNS, qualified, scoped_rows
from db.scope import (
    LEVEL_RANK,
    RequestScope,
    ScopeConfig,
    level_condition,
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
    corrected: bool = False  # a live newer note of its scope was recorded as correcting it


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


def _ranked_notes(request: RequestScope, config: ScopeConfig, *, by_scope: bool,
                  per_status: int, now: datetime, conn: Connection) -> list[NoteCandidate]:
    predicate, params = visibility_sql(request, config)
    sql = _ordered_sql(tuple(visible_levels(request)), predicate, by_scope)
    rows = conn.execute(_statement(sql), {**params, "now": now, "per_status": per_status})
    return [NoteCandidate(**{k: v for k, v in row._mapping.items() if k != "rank_level"})
            for row in rows]


def _lattice_branches(levels: tuple[tuple[bool, bool, bool], ...], select: str,
                      where: str = "") -> str:
    """Step 1 of every candidate query: one branch per (lattice level, lattice index) over
    unexpired injectable rows — index-only from notes_vector_idx, then the rest index
    (normally no row with an embedding). `select` may use {rank}, the level's rank. Flat on
    purpose: nesting the parts over a shared level list makes a shorter text but adds
    projection layers that cost more (~0.3 ms at 1,300 rows) than the longer text."""
    return "\nUNION ALL\n".join(
        f"SELECT {select.format(rank=LEVEL_RANK[level])} FROM notes n "
        f"WHERE {level_condition(level)} AND {INJECTABLE_SQL} AND {part}{where} "
        "AND (n.expires_at IS NULL OR n.expires_at > :now)"
        for level in levels for part in NOTE_LATTICE_PARTS
    )


def _fetch_in_order(source: str, carried: str, output: str, key: str, predicate: str) -> str:
    """Step 2, per status: walk `source` in `key` order, read each row and apply the scope
    predicate until :per_status qualified. LATERAL makes it a nested loop over the sorted
    rows, so the heap is read only for the rows walked; the ORDER BY makes the limit exact
    whatever the plan."""
    return "\nUNION ALL\n".join(f"""(
    SELECT {qualified(NOTE_COLUMNS)}, {output}, {CORRECTED_SQL} AS corrected
    FROM (SELECT {carried} FROM {source} c WHERE c.status = '{status.value}'
          ORDER BY {key}) AS c
    CROSS JOIN LATERAL (SELECT n.* FROM notes n WHERE n.id = c.id AND {predicate}) AS n
    ORDER BY {key}
    LIMIT :per_status)""" for status in INJECTABLE_STATUSES)


@lru_cache(maxsize=256)
def _ordered_sql(levels: tuple[tuple[bool, bool, bool], ...], predicate: str,
                 by_scope: bool) -> str:
    """Recent (newest first) or All (most specific scope first, then newest), in the ranking's
    two steps: (id, status, created_at, level) of every visible-level row from the lattice
    indexes (notes_vector_idx carries created_at), then the rows in order per status."""
    key = "c.rank_level, c.created_at DESC, c.id" if by_scope else "c.created_at DESC, c.id"
    ordered = _lattice_branches(levels, "n.id, n.status, n.created_at, {rank} AS rank_level")
    fetch = _fetch_in_order("ordered", "c.id, c.created_at, c.rank_level",
                            "NULL::float8 AS similarity, c.rank_level", key, predicate)
    final = "rank_level, created_at DESC, id" if by_scope else "created_at DESC, id"
    return f"WITH ordered AS MATERIALIZED (\n{ordered}\n)\n{fetch}\nORDER BY {final}"


@lru_cache(maxsize=256)
def _statement(sql: str) -> TextClause:
    """Parsing bind parameters out of a 2-4 kB statement costs ~0.3 ms a call; the text is
    fixed per request shape (lattice levels, tenant dimensions), so it is parsed once."""
    return text(sql)


@lru_cache(maxsize=256)
def _relevant_sql(levels: tuple[tuple[bool, bool, bool], ...], predicate: str) -> str:
    # Step 1: (id, status, similarity) of every row in the visible lattice levels.
    rank = _lattice_branches(
        levels, "n.id, n.status, 1 - (n.embedding <=> CAST(:query AS vector)) AS similarity",
        " AND n.embedding_model = :model AND vector_dims(n.embedding) = :dims")
    # Only rows at or above the similarity floor are kept (typically a handful of ~1,300).
    # OFFSET 0 keeps the filter above the union: pushed into each branch, Postgres would
    # compute every distance twice (filter and output).
    ranked = (f"SELECT * FROM ({rank}\nOFFSET 0) AS r "
              "WHERE r.similarity >= :min_similarity")
    fetch = _fetch_in_order("ranked", "c.id, c.similarity", "c.similarity",
                            "c.similarity DESC, c.id", predicate)
    return f"WITH ranked AS MATERIALIZED (\n{ranked}\n)\n{fetch}\nORDER BY similarity DESC, id"


def relevant_notes(conn: Connection, request: RequestScope, config: ScopeConfig, *,
                   query: np.ndarray, embedding_model: str, min_similarity: float,
                   per_status: int, now: datetime) -> list[NoteCandidate]:
    """Up to `per_status` most similar notes of each status, similarity >= min_similarity."""
    predicate, params = visibility_sql(request, config)
    sql = _relevant_sql(tuple(visible_levels(request)), predicate)
    rows = conn.execute(_statement(sql), {
        **params, "query": query, "model": embedding_model, "dims": int(query.shape[0]),
        "min_similarity": min_similarity, "per_status": per_status, "now": now,
    })
    return [NoteCandidate(**row._mapping) for row in rows]


def recent_notes(conn: Connection, request: RequestScope, config: ScopeConfig, *,
                 per_status: int, now: datetime) -> list[NoteCandidate]:
    return _ranked_notes(request, config, by_scope=False, per_status=per_status, now=now,
                         conn=conn)


def all_notes(conn: Connection, request: RequestScope, config: ScopeConfig, *,
              per_status: int, now: datetime) -> list[NoteCandidate]:
    """No relevance filter: most specific scope first, then newest."""
    return _ranked_notes(request, config, by_scope=True, per_status=per_status, now=now,
                         conn=conn)


def visible_note_ids(conn: Connection, request: RequestScope, config: ScopeConfig,
                     now: datetime) -> set[uuid.UUID]:
    """Every note the request may see (the SQL form of the predicate, for checks)."""
    scoped, params = scoped_rows("notes", request, config, qualified(f"id, {SCOPE_COLUMNS}"),
                                 expiring=True)
    rows = conn.execute(text(f"WITH {scoped} SELECT id FROM scoped"), {**params, "now": now})
    return {row.id for row in rows}


_EXAMPLE_ORDER = {
    "Semantic": "similarity DESC, n.id",
    "Recent": "n.created_at DESC, n.id",
    "Rated": "n.success_score DESC NULLS LAST, n.created_at DESC, n.id",
}


def select_examples(conn: Connection, request: RequestScope, config: ScopeConfig, *, strategy: str,
                    limit: int, query: np.ndarray | None, embedding_model: str | None
                    ) -> list[ExampleCandidate]:
    scoped, params = scoped_rows(
        "examples", request, config,
        qualified(f"{EXAMPLE_COLUMNS}, embedding, embedding_model"), expiring=False)
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
