"""Migration 0008 gives back the notes that stale-reference pruning archived only because
their run named a conversation this system never held, and nothing else."""

from __future__ import annotations

import shutil

import psycopg
from psycopg.rows import dict_row

from db.connector import Database
from db.migrate import migrate
from db.migration_files import MIGRATIONS_DIR, split_statements
from tests.conftest import _database_url, _recreate_database
from tests.helpers import Writer, run_context
from worker.writes.apply import WriteDeps

# What stale-reference pruning ran before 0008 (db/queries/maintenance.py at 0007): a note
# whose source conversation was absent was archived, recorded or not.
OLD_PRUNE = """
WITH stale AS (
    SELECT n.id, n.status FROM notes n
    WHERE n.status IN ('Active', 'Provisional') AND n.source_conversation_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM conversations c WHERE c.id = n.source_conversation_id)
), archived AS (
    UPDATE notes n SET status = 'Archived', valid_to = greatest(n.valid_from, now()),
        updated_at = now()
    FROM stale s WHERE n.id = s.id
    RETURNING n.id, s.status AS from_status
)
INSERT INTO note_events (note_id, action, from_status, to_status, actor, reason, cycle_id,
    created_at)
SELECT id, 'pruned', from_status, 'Archived', 'stale_references', 'source conversation deleted',
    1, now()
FROM archived
"""


def _status(conn: psycopg.Connection, note_id: str) -> str:
    return conn.execute("SELECT status FROM notes WHERE id = %s", [note_id]).fetchone()["status"]


def test_0008_restores_exactly_the_wrongly_pruned_notes(services, settings, tmp_path):
    old_dir = tmp_path / "migrations"
    old_dir.mkdir()
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        if path.name < "0008":
            shutil.copy(path, old_dir / path.name)
    _recreate_database(services.admin_url, "memory_repair")
    url = _database_url(services.admin_url, "memory_repair")
    migrate(url, old_dir)
    # Today's write path reads the erasure fences (0012) and the known principals (0009) in
    # the statement that reads its run's state: give the 0007 schema those two tables.
    later = [next(statement.sql for statement in split_statements(
        (MIGRATIONS_DIR / migration).read_text()) if f"CREATE TABLE {table}" in statement.code)
        for migration, table in (("0012_erasure.sql", "erasure_fences"),
                                 ("0009_principals.sql", "principals"))]
    with psycopg.connect(url, autocommit=True) as conn:
        for create in later:
            conn.execute(create)

    db = Database(url)
    try:
        # Today's write path on the 0007 schema: without the checks that need later tables.
        old_settings = settings.model_copy(update={"reject_foreign_identities": False})
        write = Writer(WriteDeps(db=db, settings=old_settings, embedder=None))
        never = write(run_context("r-never", conversation_id="c-never"),
                      "User prefers tea over coffee.")["note_id"]
        provisional = write(run_context("r-never2", user="U2", conversation_id="c-never2"),
                            "User's timezone is UTC+1.")["note_id"]
        held = write(run_context("r-held", user="U3", conversation_id="c-held"),
                     "User lives in Lisbon.")["note_id"]
        restated = write(run_context("r-dup", user="U4", conversation_id="c-dup"),
                         "User likes jazz.")["note_id"]
        unrelated = write(run_context("r-plain", user="U5"), "User likes chess.")["note_id"]
        with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
            conn.execute("UPDATE notes SET status = 'Active' WHERE id = ANY(%s)",
                         [[never, held, restated]])
            # c-held was held: something was extracted from it before it was deleted.
            conn.execute("""
                INSERT INTO notes (id, agent_id, user_id, type, note, status, author_type,
                    protection_tier, content_hash, source_conversation_id)
                SELECT gen_random_uuid(), agent_id, user_id, type, 'User moved to Lisbon.',
                    'Active', 'MemoryManager', protection_tier, md5('x'), 'c-held'
                FROM notes WHERE id = %s""", [held])
            conn.execute(OLD_PRUNE)
            assert {_status(conn, n) for n in (never, provisional, held, restated)} == {
                "Archived"}
            # After the pruning, the same fact was written again in c-dup's scope.
            write(run_context("r-dup-again", user="U4"), "User likes jazz.")
            conn.execute("UPDATE notes SET status = 'Archived' WHERE id = %s", [unrelated])

            conn.execute("DROP TABLE erasure_fences, principals")  # created for real later
            assert migrate(url)[0] == "0008"  # and the later ones

            assert _status(conn, never) == "Active"
            assert _status(conn, provisional) == "Provisional"
            assert _status(conn, held) == "Archived", "its conversation was held, then deleted"
            assert _status(conn, restated) == "Archived", "restoring it would add a duplicate"
            assert _status(conn, unrelated) == "Archived"
            events = conn.execute(
                "SELECT note_id::text, from_status, to_status, actor FROM note_events "
                "WHERE action = 'restored' ORDER BY to_status").fetchall()
            assert events == [
                {"note_id": never, "from_status": "Archived", "to_status": "Active",
                 "actor": "migration 0008"},
                {"note_id": provisional, "from_status": "Archived", "to_status": "Provisional",
                 "actor": "migration 0008"}]
            valid_to = conn.execute("SELECT valid_to FROM notes WHERE id = %s",
                                    [never]).fetchone()["valid_to"]
            assert valid_to is None
            # 0009: the users and companies of existing runs and notes are known principals.
            known = {(r["kind"], r["folded_id"]) for r in conn.execute(
                "SELECT kind, folded_id FROM principals").fetchall()}
            assert {("user", "u2"), ("user", "u5"), ("company", "c")} <= known, known
    finally:
        db.dispose()
