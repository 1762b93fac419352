"""Every SQL statement the domain runs, by name. Nothing outside `db/` writes SQL.

Statements take bound parameters only (never interpolated values); the literal fragments
spliced in (`INJECTABLE_SQL`, the scope predicate of `db.scope`) are our own constants.
Vectors are bound as numpy arrays and travel in pgvector's binary format. Modules: `agents`
(configuration), `runs` (sequencing, write log, trace), `notes` (scope neighbourhood, note
changes), `retrieval` (the read path).
"""

from db.queries.agents import select_agent, upsert_agent
from db.queries.notes import (
    Neighbour,
    NewNote,
    ScopeNeighbours,
    insert_note,
    lock_scope,
    reinforce_note,
    scope_neighbours,
    supersede_own_note,
)
from db.queries.runs import (
    WriteRecord,
    WriteState,
    insert_run,
    insert_trace,
    load_write_state,
    lock_run,
    record_write,
    skip_gap,
    start_gap_wait,
)

__all__ = [
    "Neighbour", "NewNote", "ScopeNeighbours", "WriteRecord", "WriteState",
    "insert_note", "insert_run", "insert_trace", "load_write_state", "lock_run", "lock_scope",
    "record_write", "reinforce_note", "scope_neighbours", "select_agent", "skip_gap",
    "start_gap_wait", "supersede_own_note", "upsert_agent",
]
