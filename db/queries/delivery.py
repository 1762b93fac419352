"""What the redelivery pass asks Postgres (worker/delivery/redelivery.py)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, text

# Applied for good: any logged outcome but `error` (an error is delivered again).
_APPLIED = text("""
SELECT w.run_id, w.seq
FROM unnest(CAST(:run_ids AS text[]), CAST(:seqs AS bigint[])) AS d(run_id, seq)
JOIN write_log w ON w.run_id = d.run_id AND w.seq = d.seq
WHERE w.disposition <> 'error'
""")


def applied_writes(conn: Connection, writes: Iterable[tuple[str, int]]
                   ) -> set[tuple[str, int]]:
    pairs = list(writes)
    if not pairs:
        return set()
    rows = conn.execute(_APPLIED, {"run_ids": [run_id for run_id, _ in pairs],
                                   "seqs": [seq for _, seq in pairs]})
    return {(row.run_id, int(row.seq)) for row in rows}
