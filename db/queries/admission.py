"""Write admission state (SPEC 5): earlier admitted writes of a run, by fingerprint.

Read under the run's advisory lock (the write path holds it), so two worker processes can
never both see "no earlier write" for the same fingerprint.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from db.enums import INJECTABLE_SQL, Disposition

# An earlier admitted write of the run with the same fingerprint still stands unless a later
# write of the run replaced the note it produced (A → B → A: the third write is not a
# duplicate, it restores A) or that note has since left the injectable set. Writes that
# produced no note (a candidate, a cap skip) always stand.
_EARLIER_DUPLICATE = text(f"""
SELECT w.seq
FROM write_log w
LEFT JOIN notes n ON n.id = w.note_id
WHERE w.run_id = :run_id AND w.admission_fingerprint = :fingerprint
  AND (w.note_id IS NULL OR (n.{INJECTABLE_SQL} AND NOT EXISTS (
        SELECT 1 FROM write_log later
        WHERE later.run_id = w.run_id AND later.seq > w.seq AND later.note_id = w.note_id
          AND later.disposition = '{Disposition.SUPERSEDED_OWN.value}')))
ORDER BY w.seq
LIMIT 1
""")  # noqa: S608 - constant fragments only


def earlier_duplicate_write(conn: Connection, run_id: str, fingerprint: str) -> int | None:
    """The seq of an earlier admitted write of the run that this one duplicates, or None."""
    return conn.execute(_EARLIER_DUPLICATE,
                        {"run_id": run_id, "fingerprint": fingerprint}).scalar_one_or_none()


# A user or company this system holds memory for, among the ids a note names (principals,
# registered by triggers on runs and conversations). Users first: the likelier meaning.
# The write path asks it with its run's state (db/queries/runs.py), with its own parameter.
def known_principal_sql(ids_param: str) -> str:
    return f"""
SELECT kind FROM principals
WHERE folded_id = ANY(SELECT lower(x) FROM unnest(CAST(:{ids_param} AS text[])) AS x)
ORDER BY kind DESC
LIMIT 1
"""  # noqa: S608 - a parameter name of ours only


_KNOWN_PRINCIPAL = text(known_principal_sql("ids"))


def known_principal(conn: Connection, ids: list[str]) -> str | None:
    """The kind of the first known principal among `ids` ("user", "company"), or None."""
    return conn.execute(_KNOWN_PRINCIPAL, {"ids": ids}).scalar_one_or_none()
