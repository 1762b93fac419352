"""Plain numbered SQL migrations.

`db/migrations/NNNN_name.sql`, applied in order, each in its own transaction, recorded in
`schema_migrations` with a checksum. A session-level advisory lock makes concurrent
`migrate` calls (several containers starting at once) apply each file exactly once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg

from db.connector import libpq_url

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_FILENAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_KEY = "memory-worker.migrate"


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


class MigrationError(RuntimeError):
    pass


def discover(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = _FILENAME.match(path.name)
        if not match:
            raise MigrationError(f"migration file name not NNNN_name.sql: {path.name}")
        found.append(Migration(match.group(1), match.group(2), path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"duplicate migration versions in {directory}")
    return found


_CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version text PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


def _applied(conn: psycopg.Connection) -> dict[str, str]:
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return {}
    rows = conn.execute("SELECT version, checksum FROM schema_migrations").fetchall()
    return {version: checksum for version, checksum in rows}


def pending(url: str, directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Migrations not yet applied (readiness: a database with pending migrations is not ready)."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        applied = _applied(conn)
    return [m for m in discover(directory) if m.version not in applied]


def migrate(url: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply every pending migration; return the versions applied by this call."""
    applied_now: list[str] = []
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [_LOCK_KEY])
        try:
            conn.execute(_CREATE_LEDGER)
            applied = _applied(conn)
            for migration in discover(directory):
                recorded = applied.get(migration.version)
                if recorded is not None:
                    if recorded != migration.checksum:
                        raise MigrationError(
                            f"migration {migration.version}_{migration.name} was changed after "
                            "it was applied; add a new migration instead of editing an old one"
                        )
                    continue
                with conn.transaction():
                    conn.execute(migration.sql)  # type: ignore[arg-type]
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name, checksum) "
                        "VALUES (%s, %s, %s)",
                        [migration.version, migration.name, migration.checksum],
                    )
                applied_now.append(migration.version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [_LOCK_KEY])
    return applied_now
