"""Applying the numbered SQL migrations of `db/migrations/` (the files themselves, their
names, directives, checksums and statements: db/migration_files.py).

Each applied file is recorded in `schema_migrations` with the checksum of its text (an applied
file that was edited afterwards is refused). A session-level advisory lock makes concurrent
`migrate` calls (several containers starting at once) apply each file exactly once.

A file runs in one transaction together with its ledger row, unless its first line is

    -- migrate: no-transaction

Such a file runs in autocommit, one statement at a time (`split_statements` in
db/migration_files.py), so it can use what a transaction block forbids: `CREATE INDEX
CONCURRENTLY`, `DROP INDEX CONCURRENTLY`, `REINDEX ... CONCURRENTLY`. Its ledger row is
written only after its last statement succeeded, so a failure midway leaves it pending and the
next `migrate` runs the whole file again: such a file must be re-runnable (`DROP INDEX
CONCURRENTLY IF EXISTS x;` before `CREATE INDEX CONCURRENTLY x ...`). A concurrent build that
failed leaves an INVALID index behind; the runner refuses to record a migration whose `CREATE
INDEX CONCURRENTLY` target is invalid afterwards (the `IF NOT EXISTS` trap), see
`_invalid_indexes`.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

import psycopg
from psycopg import errors as pg_errors

from db.connector import libpq_url
from db.migration_files import (
    MIGRATIONS_DIR,
    NO_TRANSACTION,
    Migration,
    MigrationError,
    Statement,
    discover,
    statements_of,
)

_LOCK_KEY = "memory-worker.migrate"
# How often a second `migrate` retries the lock (see _lock).
LOCK_POLL_S = 0.25

# The target of `CREATE [UNIQUE] INDEX CONCURRENTLY [IF NOT EXISTS] name`: checked for
# validity before the ledger row is written.
_CONCURRENT_INDEX = re.compile(
    r"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"(?!ON\s)((?:\"(?:[^\"]|\"\")+\"|[A-Za-z_][\w$]*)(?:\.(?:\"(?:[^\"]|\"\")+\"|[A-Za-z_][\w$]*))?)",
    re.IGNORECASE)


# --- the ledger ----------------------------------------------------------------------------

_CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version text PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
_RECORD = "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)"


def _ledger(conn: psycopg.Connection) -> dict[str, tuple[str, datetime]]:
    """version -> (checksum, applied_at); empty when the ledger does not exist yet."""
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return {}
    rows = conn.execute("SELECT version, checksum, applied_at FROM schema_migrations").fetchall()
    return {version: (checksum, applied_at) for version, checksum, applied_at in rows}


def _applied(conn: psycopg.Connection) -> dict[str, str]:
    return {version: checksum for version, (checksum, _) in _ledger(conn).items()}


def pending(url: str, directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Migrations not yet applied (readiness: a database with pending migrations is not ready)."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        applied = _applied(conn)
    return [m for m in discover(directory) if m.version not in applied]


State = Literal["applied", "pending", "edited"]


@dataclass(frozen=True)
class MigrationStatus:
    migration: Migration
    state: State  # "edited": applied, but the file's checksum differs from the ledger's
    applied_at: datetime | None

    def as_json(self) -> dict[str, str | bool | None]:
        return {"name": self.migration.filename, "version": self.migration.version,
                "state": self.state,
                "applied_at": self.applied_at.isoformat() if self.applied_at else None,
                "transactional": self.migration.transactional}


def status(url: str, directory: Path = MIGRATIONS_DIR) -> list[MigrationStatus]:
    """Every migration file with its state. Read-only: no advisory lock (a running `migrate`
    must not make it wait), no ledger creation, a read-only transaction."""
    migrations = discover(directory)
    with psycopg.connect(libpq_url(url)) as conn:
        conn.read_only = True
        ledger = _ledger(conn)
        conn.rollback()
    result = []
    for migration in migrations:
        recorded = ledger.get(migration.version)
        if recorded is None:
            result.append(MigrationStatus(migration, "pending", None))
        else:
            checksum, applied_at = recorded
            state: State = "applied" if checksum == migration.checksum else "edited"
            result.append(MigrationStatus(migration, state, applied_at))
    return result


# --- applying ------------------------------------------------------------------------------

class Progress:
    """What `migrate` reports while it runs; the default says nothing (library callers,
    tests). The CLI prints these."""

    def waiting_for_lock(self) -> None:
        """Another `migrate` holds the lock; this one retries until it is free."""

    def started(self, migration: Migration) -> None:
        pass

    def finished(self, migration: Migration, seconds: float) -> None:
        pass


@contextlib.contextmanager
def _lock(url: str, progress: Progress) -> Iterator[None]:
    """Hold the migration advisory lock on a connection of its own.

    Own connection: a migration's SQL runs on another session, so nothing it does (DISCARD
    ALL, pg_advisory_unlock_all(), a broken connection after a failed statement) can drop the
    lock while the run goes on.

    Polling with pg_try_advisory_lock instead of waiting in pg_advisory_lock: a session
    blocked in `SELECT pg_advisory_lock(...)` holds a snapshot for as long as it waits, and
    CREATE INDEX CONCURRENTLY waits for every older snapshot in its database before it
    finishes. A second `migrate` waiting that way for the lock holder, whose index build waits
    for it, would hang both forever (the cycle runs through the client, so Postgres cannot see
    it). Between tries this session holds no snapshot."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        told = False
        while True:
            row = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                               [_LOCK_KEY]).fetchone()
            if row and row[0]:
                break
            if not told:
                progress.waiting_for_lock()
                told = True
            time.sleep(LOCK_POLL_S)
        try:
            yield
        finally:
            # Closing the session would release it as well; unlocking says so explicitly, and
            # must not hide the error that got us here.
            with contextlib.suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [_LOCK_KEY])


def _failure(migration: Migration, exc: psycopg.Error, where: str, after: str) -> MigrationError:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    hint = ""
    if isinstance(exc, pg_errors.ActiveSqlTransaction):
        hint = f" (mark the file with a first line '-- migrate: {NO_TRANSACTION}')"
    return MigrationError(f"migration {migration.filename} failed{where}: {message}{hint}; "
                          f"{after}")


def _apply_in_transaction(conn: psycopg.Connection, migration: Migration) -> None:
    try:
        with conn.transaction():
            conn.execute(migration.sql)  # type: ignore[arg-type]
            conn.execute(_RECORD, [migration.version, migration.name, migration.checksum])
    except psycopg.Error as exc:
        raise _failure(migration, exc, "", "it was rolled back, nothing recorded") from exc


def _invalid_indexes(conn: psycopg.Connection, statements: list[Statement]) -> list[str]:
    """The indexes this file builds concurrently that are INVALID now. `CREATE INDEX
    CONCURRENTLY IF NOT EXISTS x` skips an invalid `x` left by an earlier failed run, so the
    file would succeed with a useless index; it is not recorded instead."""
    invalid = []
    for statement in statements:
        match = _CONCURRENT_INDEX.match(statement.code)
        if match is None:
            continue
        row = conn.execute(
            "SELECT NOT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(%s)",
            [match.group(1)]).fetchone()
        if row is not None and row[0]:
            invalid.append(match.group(1))
    return invalid


def _apply_statement_by_statement(conn: psycopg.Connection, migration: Migration) -> None:
    statements = statements_of(migration)
    rerun = ("nothing recorded; statements before it stay applied, and the next migrate "
             "runs the whole file again")
    for number, statement in enumerate(statements, 1):
        try:
            # No parameters: psycopg sends the text as one simple query, outside any
            # transaction block (the connection is in autocommit).
            conn.execute(statement.sql)  # type: ignore[arg-type]
        except psycopg.Error as exc:
            where = f" at statement {number} of {len(statements)} (line {statement.line})"
            raise _failure(migration, exc, where, rerun) from exc
    invalid = _invalid_indexes(conn, statements)
    if invalid:
        raise MigrationError(
            f"migration {migration.filename}: index {', '.join(invalid)} is INVALID (left by "
            "an earlier failed concurrent build?); drop it with DROP INDEX CONCURRENTLY and "
            "run migrate again. Nothing recorded")
    # Only now: every statement succeeded.
    conn.execute(_RECORD, [migration.version, migration.name, migration.checksum])


def migrate(url: str, directory: Path = MIGRATIONS_DIR,
            progress: Progress | None = None) -> list[str]:
    """Apply every pending migration in `directory`; return the versions applied by this
    call. An applied file whose checksum changed is refused (MigrationError); a failing file
    raises MigrationError naming it and the statement."""
    progress = progress or Progress()
    migrations = discover(directory)
    # Read every file's directive before anything runs: a bad one stops the run up front.
    for migration in migrations:
        if not migration.transactional:
            statements_of(migration)
    applied_now: list[str] = []
    with _lock(url, progress), psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute(_CREATE_LEDGER)
        applied = _applied(conn)
        # Every applied file is checked before any pending one runs: an edited history stops
        # the run before it changes anything.
        for migration in migrations:
            recorded = applied.get(migration.version)
            if recorded is not None and recorded != migration.checksum:
                raise MigrationError(
                    f"migration {migration.version}_{migration.name} was changed after "
                    "it was applied; add a new migration instead of editing an old one"
                )
        for migration in migrations:
            if migration.version in applied:
                continue
            progress.started(migration)
            began = time.perf_counter()
            if migration.transactional:
                _apply_in_transaction(conn, migration)
            else:
                _apply_statement_by_statement(conn, migration)
            progress.finished(migration, time.perf_counter() - began)
            applied_now.append(migration.version)
    return applied_now
