"""Finding an erased subject anywhere: every table of the schema (from the catalog, not a
list kept beside the code) and every Redis key and value."""

from __future__ import annotations

from typing import Any

import psycopg
import redis

# Column types that can hold an id or text: text-like, json, arrays of them.
_SEARCHABLE = ("text", "character varying", "character", "jsonb", "json", "ARRAY")


def tables_and_columns(database_url: str) -> dict[str, list[str]]:
    with psycopg.connect(database_url) as conn:
        found = conn.execute(
            "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
            "JOIN information_schema.tables t ON t.table_schema = c.table_schema "
            " AND t.table_name = c.table_name "
            "WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' "
            "ORDER BY c.table_name, c.ordinal_position").fetchall()
    columns: dict[str, list[str]] = {}
    for table, column, data_type in found:
        columns.setdefault(table, [])
        if data_type in _SEARCHABLE:
            columns[table].append(column)
    return columns


def database_hits(database_url: str, needles: list[str]) -> list[tuple[str, str, str]]:
    """(table, column, needle) for every text/json/array column of every table holding a
    needle (case-insensitive, as text)."""
    hits: list[tuple[str, str, str]] = []
    columns = tables_and_columns(database_url)
    assert {"notes", "runs", "erasures", "erasure_fences"} <= set(columns)
    with psycopg.connect(database_url) as conn:
        for table, cols in columns.items():
            for column in cols:
                for needle in needles:
                    found = conn.execute(
                        f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s',
                        (f"%{needle}%",)).fetchone()
                    if found and found[0]:
                        hits.append((table, column, needle))
    return hits


def redis_hits(redis_url: str, needles: list[str]) -> list[tuple[str, str]]:
    """(key, needle) for every key whose name or value holds a needle."""
    client = redis.Redis.from_url(redis_url)
    hits: list[tuple[str, str]] = []
    for key in client.scan_iter(count=500):
        kind = client.type(key).decode()
        values: list[Any] = []
        if kind == "string":
            values = [client.get(key)]
        elif kind == "list":
            values = client.lrange(key, 0, -1)
        elif kind == "hash":
            values = [*client.hkeys(key), *client.hvals(key)]
        elif kind == "set":
            values = list(client.smembers(key))
        elif kind == "zset":
            values = [m for m, _ in client.zrange(key, 0, -1, withscores=True)]
        blob = key.decode(errors="replace") + "\n" + "\n".join(
            v.decode(errors="replace") if isinstance(v, bytes) else str(v) for v in values
            if v is not None)
        for needle in needles:
            if needle.lower() in blob.lower():
                hits.append((key.decode(errors="replace"), needle))
    return hits
