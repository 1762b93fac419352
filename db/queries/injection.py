"""What the read path checks about its candidates beyond scope and rank: which of them a
newer note was recorded as correcting (`CORRECTED_SQL`: never injected side by side with
it), the attribution and expiry facts SPEC 5's policy filters need, and the counts of what
those filters removed from a request's scoped set (the `memory_retrieve_filter` trace)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text

from db.enums import INJECTABLE_SQL, AuthorType
from db.queries.lattice import SCOPE_COLUMNS, qualified, scoped_rows
from db.scope import RequestScope, ScopeConfig

# Provenance: a source run or conversation, other notes it derives from, or the user.
ATTRIBUTED_SQL = (
    "(n.source_agent_run_id IS NOT NULL OR n.source_conversation_id IS NOT NULL "
    f"OR cardinality(n.derived_from_note_ids) > 0 OR n.author_type = '{AuthorType.USER.value}')"
)

# Whether a live injectable note was recorded as correcting candidate row `n` (same scope: the
# write path records corrections within one exact scope only). Evaluated in the candidate
# queries themselves, on the few rows they return: no extra round trip.
CORRECTED_SQL = f"""EXISTS (
    SELECT 1 FROM notes c
    WHERE c.corrects_note_id = n.id AND c.{INJECTABLE_SQL}
      AND (c.expires_at IS NULL OR c.expires_at > :now) AND c.scope_key = n.scope_key)"""  # noqa: S608

_FACTS = text(f"""
SELECT n.id, n.expires_at IS NULL AS expiry_missing,
       (n.expires_at IS NOT NULL AND NOT isfinite(n.expires_at)) AS expiry_malformed,
       {ATTRIBUTED_SQL} AS attributed
FROM notes n WHERE n.id = ANY(CAST(:ids AS uuid[]))
""")  # noqa: S608


@dataclass(frozen=True)
class InjectionFacts:
    expiry_missing: bool
    expiry_malformed: bool
    attributed: bool


def injection_facts(conn: Connection, ids: list[uuid.UUID]) -> dict[uuid.UUID, InjectionFacts]:
    if not ids:
        return {}
    return {row.id: InjectionFacts(row.expiry_missing, row.expiry_malformed, row.attributed)
            for row in conn.execute(_FACTS, {"ids": ids})}


def filtered_counts(conn: Connection, request: RequestScope, config: ScopeConfig, *,
                    now: datetime, enforce_expires_at: bool,
                    require_attribution: bool) -> dict[str, int]:
    """Per reason, how many notes of the request's scoped set the policy keeps out."""
    # The request's lattice ranges, never the table (a seq scan at 1M notes took ~0.6 s).
    scoped, params = scoped_rows(
        "notes", request, config,
        qualified(f"id, expires_at, author_type, source_agent_run_id, source_conversation_id, "
                  f"derived_from_note_ids, {SCOPE_COLUMNS}"), expiring=False)
    live = "(n.expires_at IS NULL OR n.expires_at > :now)"
    enforced = "(n.expires_at IS NOT NULL AND isfinite(n.expires_at) AND n.expires_at > :now)"
    sql = text(f"""
WITH {scoped}
SELECT count(*) FILTER (WHERE NOT {live}) AS expired,
       count(*) FILTER (WHERE :enforce AND n.expires_at IS NULL) AS expiry_missing,
       count(*) FILTER (WHERE :enforce AND n.expires_at IS NOT NULL
                        AND NOT isfinite(n.expires_at)) AS expiry_malformed,
       count(*) FILTER (WHERE :attribution AND NOT {ATTRIBUTED_SQL} AND {live}
                        AND (NOT :enforce OR {enforced})) AS unattributed
FROM scoped n
""")  # noqa: S608 - the scope predicate's own fragments, values bound
    row = conn.execute(sql, {**params, "now": now, "enforce": enforce_expires_at,
                             "attribution": require_attribution}).one()
    counts = {"expired": row.expired, "expiry_missing": row.expiry_missing,
              "expiry_malformed": row.expiry_malformed, "unattributed": row.unattributed}
    return {reason: int(n) for reason, n in counts.items() if n}
