"""The declared schema (SQLAlchemy Core).

Migrations in `db/migrations/` are the history; this package is the statement of what that
history must add up to. `tests/integration/test_schema.py` builds one database from each and
compares their catalogs, so neither can drift from the other.

Modules: `base` (the metadata, scope columns and key, timestamps) · `memory` (agents, notes,
examples, pending access counts) · `runs` (runs, write log, candidates, trace events,
principals, dead letters, chain continuations) · `conversations` (conversations, messages,
tombstones) · `manager` (cycles, note events, judge memos) · `erasure` (erasure fences and
the audit records of erasures and exports).
"""

from db.models import (  # noqa: F401  (registers the tables)
    conversations,
    erasure,
    manager,
    memory,
    runs,
)
from db.models.base import metadata

__all__ = ["metadata"]
