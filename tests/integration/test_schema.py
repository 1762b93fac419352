"""The migrated schema equals the declared one (db/models/): no drift, either way."""

from __future__ import annotations

import re

import psycopg
import pytest
from sqlalchemy import create_engine

from db.connector import sqlalchemy_url
from db.enums import INJECTABLE_STATUSES, NoteStatus
from db.migrate import migrate, pending
from db.migration_files import MigrationError, discover
from db.models import metadata
from tests.conftest import _database_url, _recreate_database

CATALOG_QUERIES = {
    "columns": """
        SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default,
               is_generated, generation_expression, is_identity, identity_generation
        FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name <> 'schema_migrations'
        ORDER BY table_name, column_name""",
    "constraints": """
        SELECT conrelid::regclass::text AS table_name, contype, pg_get_constraintdef(oid) AS def
        FROM pg_constraint
        WHERE connamespace = 'public'::regnamespace
          AND conrelid::regclass::text <> 'schema_migrations'
        ORDER BY 1, 2, 3""",
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename <> 'schema_migrations'
        ORDER BY tablename, indexname""",
    "functions": """
        SELECT proname, pg_get_functiondef(oid) AS def FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace AND prokind = 'f'
          AND proname NOT IN (SELECT p.proname FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
                              WHERE d.deptype = 'e')
        ORDER BY proname""",
    "triggers": """
        SELECT event_object_table, trigger_name, action_timing, event_manipulation,
               action_orientation, action_statement
        FROM information_schema.triggers
        WHERE trigger_schema = 'public'
        ORDER BY 1, 2, 4""",
    "extensions": "SELECT extname FROM pg_extension ORDER BY extname",
}


def _catalog(url: str) -> dict[str, list[tuple]]:
    with psycopg.connect(url) as conn:
        return {name: conn.execute(sql).fetchall() for name, sql in CATALOG_QUERIES.items()}


@pytest.fixture(scope="module")
def declared_url(services) -> str:
    name = "memory_declared"
    _recreate_database(services.admin_url, name)
    url = _database_url(services.admin_url, name)
    engine = create_engine(sqlalchemy_url(url))
    with engine.begin() as conn:
        metadata.create_all(conn)
    engine.dispose()
    return url


def test_migrations_build_exactly_the_declared_schema(services, declared_url):
    migrated = _catalog(services.database_url)
    declared = _catalog(declared_url)
    for part in CATALOG_QUERIES:
        only_migrated = sorted(set(migrated[part]) - set(declared[part]), key=repr)
        only_declared = sorted(set(declared[part]) - set(migrated[part]), key=repr)
        assert not only_migrated and not only_declared, (
            f"{part} drift:\n  only in migrations: {only_migrated}\n"
            f"  only in db/models/: {only_declared}"
        )


def test_partial_indexes_follow_the_injectable_statuses(services):
    """Note and example indexes cover injectable rows only: every status an index predicate
    names is injectable, and the general-purpose ones cover exactly the injectable set. The
    one exception is retention's index of retired notes awaiting erasure, which names exactly
    the retired statuses."""
    expected = {s.value for s in INJECTABLE_STATUSES}
    retired = {NoteStatus.ARCHIVED.value, NoteStatus.REVOKED.value}
    all_statuses = {s.value for s in NoteStatus}
    with psycopg.connect(services.database_url) as conn:
        defs = [row[0] for row in conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' "
            "AND tablename IN ('notes', 'examples') AND indexdef LIKE '%status%'")]
    assert defs
    exact = 0
    for indexdef in defs:
        named = set(re.findall(r"'(\w+)'::text", indexdef.split("WHERE", 1)[1]))
        statuses = named & all_statuses
        if " notes_erasable_idx " in indexdef:
            assert statuses == retired, indexdef
            continue
        assert statuses and statuses <= expected, indexdef
        exact += statuses == expected
    assert exact >= 4  # lattice, scope/content and expiry indexes over all injectable rows


def test_every_enum_column_has_a_check_constraint(services):
    with psycopg.connect(services.database_url) as conn:
        checks = " ".join(row[0] for row in conn.execute(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = 'notes'::regclass AND contype = 'c'"))
    for column in ("status", "type", "author_type", "protection_tier"):
        assert f"({column} = ANY" in checks, column


def test_migrate_is_idempotent_and_reports_nothing_pending(services):
    assert migrate(services.database_url) == []
    assert pending(services.database_url) == []


def test_an_edited_migration_is_refused(services, tmp_path):
    for migration in discover():
        (tmp_path / migration.path.name).write_text(migration.sql + "\n-- edited\n")
    with pytest.raises(MigrationError, match="changed after it was applied"):
        migrate(services.database_url, tmp_path)
