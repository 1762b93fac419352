"""Online migrations: a `-- migrate: no-transaction` file runs statement by statement in
autocommit, so CREATE INDEX CONCURRENTLY lets writes continue; its ledger row is written only
once every statement succeeded. Also: statement splitting, the lock under concurrent index
builds, progress lines and `migrate --status [--json]`.

Each test builds its own database from a temporary migrations directory."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from psycopg import errors as pg_errors
from typer.testing import CliRunner

from db.migrate import Progress, migrate, status
from db.migration_files import (
    MIGRATIONS_DIR,
    Migration,
    MigrationError,
    discover,
    split_statements,
)
from tests.conftest import _database_url, _recreate_database
from tests.integration.test_schema import CATALOG_QUERIES, _catalog
from worker.cli import cli

NO_TX = "-- migrate: no-transaction\n"
TABLE = """
CREATE TABLE items (id bigserial PRIMARY KEY, v int NOT NULL, note text NOT NULL);
INSERT INTO items (v, note) SELECT g, 'item ' || g FROM generate_series(1, 500) g;
"""
CONCURRENT_INDEX = NO_TX + """-- Re-runnable: a failed earlier run may have left an INVALID index.
DROP INDEX CONCURRENTLY IF EXISTS items_v_idx;
CREATE INDEX CONCURRENTLY items_v_idx ON items (v);
"""
PLAIN_INDEX = "CREATE INDEX items_v_idx ON items (v);\n"


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    """Threads for migrations that block. Requested by fresh_db, so it is shut down after
    the databases were dropped WITH (FORCE): a hung migration's session is killed, its
    thread ends, and a failing test fails instead of hanging."""
    executor = ThreadPoolExecutor(max_workers=2)
    yield executor
    executor.shutdown(wait=True)


@pytest.fixture
def fresh_db(services, pool) -> Iterator[Callable[[], str]]:
    """Makes empty databases (dropped afterwards, whatever still holds them)."""
    made: list[str] = []

    def make() -> str:
        name = f"memory_migr_{uuid.uuid4().hex[:10]}"
        _recreate_database(services.admin_url, name)
        made.append(name)
        return _database_url(services.admin_url, name)

    yield make
    with psycopg.connect(services.admin_url, autocommit=True) as conn:
        for name in made:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _write(directory: Path, name: str, sql: str) -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text(sql, encoding="utf-8")
    return path


def _ledger(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]


def _index_valid(url: str, name: str) -> bool | None:
    """indisvalid of index `name`, None when it does not exist."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)",
                           [name]).fetchone()
    return None if row is None else bool(row[0])


def _wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        time.sleep(0.05)


def _index_build_waits_on_a_lock(url: str) -> bool:
    """A CREATE INDEX in this database is blocked on a heavyweight lock (T1's)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query ILIKE %s", ["%CREATE INDEX%"]).fetchone()
    return bool(row and row[0])


def _timed_write(url: str, sql: str) -> float:
    """One write in a new session that gives up after 2 s of waiting for a lock."""
    began = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '2s'")
        conn.execute(sql)  # type: ignore[arg-type]
    return time.perf_counter() - began


class _Holding:
    """T1: an uncommitted INSERT into items, which any index build on items must wait for."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url)
        self.conn.execute("INSERT INTO items (v, note) VALUES (-1, 'held by T1')")

    def commit(self) -> None:
        if not self.conn.closed:
            self.conn.commit()
            self.conn.close()


def _migrate_in_thread(pool: ThreadPoolExecutor, url: str, directory: Path,
                       progress: Progress | None = None) -> Future[list[str]]:
    return pool.submit(migrate, url, directory, progress)


def _start_index_migration(url: str, directory: Path, index_sql: str,
                           pool: ThreadPoolExecutor) -> tuple[_Holding, Future[list[str]]]:
    _write(directory, "0001_items.sql", TABLE)
    assert migrate(url, directory) == ["0001"]
    _write(directory, "0002_items_v_idx.sql", index_sql)
    held = _Holding(url)
    running = _migrate_in_thread(pool, url, directory)
    _wait_until(lambda: _index_build_waits_on_a_lock(url), "the index build to wait for T1")
    return held, running


def test_a_concurrent_index_migration_runs_while_writes_continue(fresh_db, pool, tmp_path):
    url = fresh_db()
    directory = tmp_path / "migrations"
    held, running = _start_index_migration(url, directory, CONCURRENT_INDEX, pool)
    try:
        writes = [
            "INSERT INTO items (v, note) VALUES (1001, 'during the build')",
            "INSERT INTO items (v, note) SELECT g, 'batch' FROM generate_series(2000, 2099) g",
            "UPDATE items SET note = 'updated during the build' WHERE v BETWEEN 1 AND 50",
            "DELETE FROM items WHERE v = 7",
            "INSERT INTO items (v, note) VALUES (1002, 'still during the build')",
        ]
        took = [_timed_write(url, sql) for sql in writes]
        assert max(took) < 1.5, took
        assert not running.done(), "the build must still be waiting for T1"
        assert _index_build_waits_on_a_lock(url)
        assert _ledger(url) == ["0001"]
    finally:
        held.commit()
    assert running.result(timeout=60) == ["0002"]
    assert _index_valid(url, "items_v_idx") is True
    assert _ledger(url) == ["0001", "0002"]
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM items WHERE v >= 1001").fetchone()
        assert row is not None and row[0] == 102


def test_control_a_transactional_plain_index_blocks_writes(fresh_db, pool, tmp_path):
    """The same migration as a plain CREATE INDEX in a transaction: its ShareLock request,
    queued behind T1, blocks every new write to the table. This is what the test above
    proves does not happen."""
    url = fresh_db()
    directory = tmp_path / "migrations"
    held, running = _start_index_migration(url, directory, PLAIN_INDEX, pool)
    try:
        for sql in ("INSERT INTO items (v, note) VALUES (1001, 'during the build')",
                    "UPDATE items SET note = 'x' WHERE v = 1"):
            with pytest.raises(pg_errors.LockNotAvailable):
                _timed_write(url, sql)
        assert not running.done()
    finally:
        held.commit()
    assert running.result(timeout=60) == ["0002"]
    assert _index_valid(url, "items_v_idx") is True


class _Recorder(Progress):
    def __init__(self) -> None:
        self.waited = threading.Event()
        self.events: list[str] = []

    def waiting_for_lock(self) -> None:
        self.waited.set()

    def started(self, migration: Migration) -> None:
        self.events.append(f"start {migration.filename}")

    def finished(self, migration: Migration, seconds: float) -> None:
        self.events.append(f"done {migration.filename}")


def test_a_second_migrate_waits_without_deadlocking_a_concurrent_build(fresh_db, pool,
                                                                        tmp_path):
    """A second `migrate` starting while the first builds an index concurrently waits for the
    lock without holding a snapshot. (Blocked in pg_advisory_lock it would hold one, the
    build would wait for it in its last phase, and both would hang.)"""
    url = fresh_db()
    directory = tmp_path / "migrations"
    second = _Recorder()
    held, first = _start_index_migration(url, directory, CONCURRENT_INDEX, pool)
    try:
        later = _migrate_in_thread(pool, url, directory, second)
        assert second.waited.wait(timeout=15), "the second migrate should wait for the lock"
    finally:
        held.commit()
    assert first.result(timeout=30) == ["0002"]
    assert later.result(timeout=30) == []
    assert second.events == []
    assert _index_valid(url, "items_v_idx") is True


def test_the_ledger_row_is_written_only_after_the_last_statement(fresh_db, tmp_path):
    url = fresh_db()
    directory = tmp_path / "migrations"
    _write(directory, "0001_items.sql",
           TABLE + "INSERT INTO items (v, note) VALUES (0, 'item 1');\n")  # a duplicate note
    migrate(url, directory)
    _write(directory, "0002_indexes.sql", NO_TX + """
DROP INDEX CONCURRENTLY IF EXISTS items_v_idx;
CREATE INDEX CONCURRENTLY items_v_idx ON items (v);
DROP INDEX CONCURRENTLY IF EXISTS items_note_key;
CREATE UNIQUE INDEX CONCURRENTLY items_note_key ON items (note);
""")
    with pytest.raises(MigrationError) as failed:
        migrate(url, directory)
    message = str(failed.value)
    assert "0002_indexes.sql" in message and "statement 4 of 4 (line 6)" in message, message
    assert "could not create unique index" in message and "runs the whole file again" in message
    assert _ledger(url) == ["0001"]
    assert [s.state for s in status(url, directory)] == ["applied", "pending"]
    # What ran before the failure stays; the failed concurrent build left an INVALID index.
    assert _index_valid(url, "items_v_idx") is True
    assert _index_valid(url, "items_note_key") is False

    with psycopg.connect(url) as conn:
        conn.execute("DELETE FROM items WHERE v = 0")
    assert migrate(url, directory) == ["0002"]
    assert _ledger(url) == ["0001", "0002"]
    assert _index_valid(url, "items_note_key") is True


def test_an_invalid_index_skipped_by_if_not_exists_is_not_recorded(fresh_db, tmp_path):
    """IF NOT EXISTS alone is not re-runnable: the second run skips the INVALID index the
    first left, and the runner refuses to record that as applied."""
    url = fresh_db()
    directory = tmp_path / "migrations"
    _write(directory, "0001_items.sql",
           TABLE + "INSERT INTO items (v, note) VALUES (0, 'item 1');\n")
    migrate(url, directory)
    _write(directory, "0002_note_key.sql", NO_TX +
           "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS items_note_key ON items (note);\n")
    with pytest.raises(MigrationError, match="could not create unique index"):
        migrate(url, directory)
    with psycopg.connect(url) as conn:
        conn.execute("DELETE FROM items WHERE v = 0")
    with pytest.raises(MigrationError, match="items_note_key is INVALID"):
        migrate(url, directory)
    assert _ledger(url) == ["0001"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX CONCURRENTLY items_note_key")
    assert migrate(url, directory) == ["0002"]
    assert _index_valid(url, "items_note_key") is True


def test_a_failing_transactional_migration_leaves_nothing(fresh_db, tmp_path):
    url = fresh_db()
    directory = tmp_path / "migrations"
    _write(directory, "0001_items.sql", TABLE)
    _write(directory, "0002_broken.sql",
           "CREATE INDEX items_v_idx ON items (v);\nSELECT no_such_column FROM items;\n")
    with pytest.raises(MigrationError, match=r"0002_broken\.sql failed.*rolled back"):
        migrate(url, directory)
    assert _ledger(url) == ["0001"]
    assert _index_valid(url, "items_v_idx") is None


def test_concurrently_in_a_transactional_migration_names_the_marker(fresh_db, tmp_path):
    url = fresh_db()
    directory = tmp_path / "migrations"
    _write(directory, "0001_items.sql", TABLE)
    _write(directory, "0002_idx.sql", "CREATE INDEX CONCURRENTLY items_v_idx ON items (v);\n")
    with pytest.raises(MigrationError, match="-- migrate: no-transaction"):
        migrate(url, directory)


def test_an_unknown_directive_is_refused_before_anything_runs(fresh_db, tmp_path):
    url = fresh_db()
    directory = tmp_path / "migrations"
    _write(directory, "0001_items.sql", TABLE)
    _write(directory, "0002_idx.sql", "-- migrate: no-transactions\nSELECT 1;\n")
    with pytest.raises(MigrationError, match="unknown directive"):
        migrate(url, directory)
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT to_regclass('items')").fetchone()
    assert row == (None,)


SPLIT_ME = NO_TX + r"""-- A comment; with semicolons; that is not a statement.
CREATE TABLE words (id int PRIMARY KEY, w text NOT NULL);
/* a block comment; /* nested; */ still inside; */
CREATE FUNCTION shout(x text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    result text;  -- a semicolon in a body comment
BEGIN
    result := upper(x) || ';!';
    RETURN result;
END;
$$;
CREATE FUNCTION tagged() RETURNS text LANGUAGE sql AS $body$ SELECT 'a;$$;b' $body$;
INSERT INTO words VALUES (1, 'it''s; one'), (2, E'back\'slash; two'), (3, $q$dollar; 'three'$q$);
INSERT INTO words VALUES (4, shout('four')), (5, tagged());
CREATE INDEX CONCURRENTLY "words; w idx" ON words (w)  -- no final semicolon
"""


def test_statement_splitting_respects_bodies_strings_and_comments():
    statements = split_statements(SPLIT_ME)
    assert [s.code.split()[0:2] for s in statements] == [
        ["CREATE", "TABLE"], ["CREATE", "FUNCTION"], ["CREATE", "FUNCTION"],
        ["INSERT", "INTO"], ["INSERT", "INTO"], ["CREATE", "INDEX"]]
    assert [s.line for s in statements] == [3, 5, 13, 14, 15, 16]
    assert statements[1].sql.endswith("END;\n$$")
    assert "upper(x) || ';!'" in statements[1].sql  # bodies are sent as written
    # $1 is a parameter and a$b$ an identifier's tail, neither opens a dollar quote.
    assert [s.sql for s in split_statements("SELECT $1::int; SELECT a$b$ FROM t; SELECT 3")] == [
        "SELECT $1::int", "SELECT a$b$ FROM t", "SELECT 3"]
    assert split_statements("-- nothing\n/* at all */ ;\n;") == []
    for bad in ("SELECT 'open", "SELECT $$open", "SELECT 1 /* open", 'SELECT "open'):
        with pytest.raises(MigrationError, match="unterminated"):
            split_statements(bad)


def test_a_split_migration_runs_as_written(fresh_db, tmp_path):
    url = fresh_db()
    directory = tmp_path / "migrations"
    _write(directory, "0001_words.sql", SPLIT_ME)
    assert migrate(url, directory) == ["0001"]
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT id, w FROM words ORDER BY id").fetchall()
    assert rows == [(1, "it's; one"), (2, "back'slash; two"), (3, "dollar; 'three'"),
                    (4, "FOUR;!"), (5, "a;$$;b")]
    assert _index_valid(url, '"words; w idx"') is True


def test_a_begin_atomic_body_is_refused_in_a_no_transaction_file(fresh_db, tmp_path):
    url = fresh_db()
    directory = tmp_path / "migrations"
    _write(directory, "0001_f.sql", NO_TX + "CREATE FUNCTION one() RETURNS int LANGUAGE sql\n"
           "BEGIN ATOMIC SELECT 1; END;\n")
    with pytest.raises(MigrationError, match="BEGIN ATOMIC"):
        migrate(url, directory)


def test_the_real_migrations_split_statement_by_statement_build_the_same_schema(
        services, fresh_db, tmp_path):
    """Every real migration, forced through the splitter, builds exactly what the
    transactional runner built: the splitter agrees with the server on real DDL ($$ bodies,
    comments, strings). Files whose checksum would change are copies, never the originals."""
    url = fresh_db()
    directory = tmp_path / "migrations"
    for migration in discover():
        _write(directory, migration.filename, NO_TX + migration.sql)
    assert len(migrate(url, directory)) == len(discover())
    split, whole = _catalog(url), _catalog(services.database_url)
    for part in CATALOG_QUERIES:
        assert split[part] == whole[part], part


def test_the_real_migrations_apply_and_existing_checksums_are_unchanged(services, fresh_db):
    """The files applied before this runner existed keep their checksums: sha256 of the file."""
    import hashlib

    url = fresh_db()
    assert migrate(url) == [m.version for m in discover()]
    with psycopg.connect(url) as conn:
        ledger: dict[str, str] = dict(
            conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())
    for migration in discover():
        # Every file up to 0011 predates no-transaction files; 0013 is the first real one.
        assert migration.transactional or migration.version >= "0013"
        assert ledger[migration.version] == hashlib.sha256(
            migration.path.read_bytes()).hexdigest()
    assert _catalog(url) == _catalog(services.database_url)


def test_status_lists_pending_applied_and_edited_files(fresh_db, tmp_path):
    url = fresh_db()
    directory = tmp_path / "migrations"
    _write(directory, "0001_items.sql", TABLE)
    edited = _write(directory, "0002_idx.sql", CONCURRENT_INDEX)
    listed = status(url, directory)
    assert [(s.migration.filename, s.state, s.applied_at) for s in listed] == [
        ("0001_items.sql", "pending", None), ("0002_idx.sql", "pending", None)]
    with psycopg.connect(url) as conn:  # read-only: not even the ledger table was created
        assert conn.execute("SELECT to_regclass('schema_migrations')").fetchone() == (None,)
    migrate(url, directory)
    edited.write_text(CONCURRENT_INDEX + "-- edited afterwards\n", encoding="utf-8")
    listed = status(url, directory)
    assert [s.state for s in listed] == ["applied", "edited"]
    assert all(s.applied_at is not None for s in listed)
    assert [s.as_json()["transactional"] for s in listed] == [True, False]


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, ["migrate", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_the_migrate_command_prints_progress_and_status(fresh_db):
    url = fresh_db()
    migrations = discover(MIGRATIONS_DIR)
    names = [m.filename for m in migrations]

    pending_json = json.loads(_cli("--status", "--json", "--database-url", url))
    assert [(e["name"], e["state"], e["applied_at"]) for e in pending_json] == [
        (name, "pending", None) for name in names]
    table = _cli("--status", "--database-url", url).splitlines()
    assert [line.split() for line in table[:-1]] == [[name, "pending"] for name in names]
    assert table[-1] == f"{len(names)} pending"

    output = _cli("--database-url", url).splitlines()
    assert len(output) == len(names) + 1
    for migration, line in zip(migrations, output, strict=False):
        kind = "" if migration.transactional else " (no transaction)"
        assert line.startswith(f"applying {migration.filename}{kind} ... done in "), line
        assert line.endswith(" s"), line
    assert output[-1].startswith(f"applied {len(names)} migrations in ")
    assert _cli("--database-url", url).strip() == "schema is up to date (nothing to apply)"

    # An edited file, as the ledger sees it: the recorded checksum no longer matches.
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'x' WHERE version = '0003'")
    applied_json = json.loads(_cli("--status", "--json", "--database-url", url))
    states = {e["name"]: e["state"] for e in applied_json}
    assert states.pop(names[2]) == "edited"
    assert set(states.values()) == {"applied"}
    assert all(e["applied_at"] for e in applied_json)
    table = _cli("--status", "--database-url", url).splitlines()
    assert "edited" in table[2] and "file differs" in table[2]
    assert table[-1] == f"{len(names) - 1} applied, 1 edited"

    refused = CliRunner().invoke(cli, ["migrate", "--database-url", url])
    assert refused.exit_code != 0 and isinstance(refused.exception, MigrationError)
    assert "0003_memory_manager was changed after it was applied" in str(refused.exception)


def test_json_needs_status():
    result = CliRunner().invoke(cli, ["migrate", "--json", "--database-url", "postgresql://x/y"])
    assert result.exit_code == 2 and "--json goes with --status" in result.output


def test_a_failing_file_ends_its_progress_line(fresh_db, tmp_path, monkeypatch):
    url = fresh_db()
    directory = tmp_path / "migrations"
    _write(directory, "0001_items.sql", TABLE)
    _write(directory, "0002_broken.sql", NO_TX + "SELECT 1;\nSELECT no_such_column FROM items;\n")
    import db.migrate

    real = db.migrate.migrate
    monkeypatch.setattr(db.migrate, "migrate",
                        lambda u, progress=None: real(u, directory, progress))
    result = CliRunner().invoke(cli, ["migrate", "--database-url", url])
    assert isinstance(result.exception, MigrationError)
    assert "statement 2 of 2 (line 3)" in str(result.exception)
    assert result.output.splitlines() == [
        result.output.splitlines()[0],
        "applying 0002_broken.sql (no transaction) ... failed"]
    assert result.output.startswith("applying 0001_items.sql ... done in ")
