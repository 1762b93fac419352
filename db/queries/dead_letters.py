"""Messages moved aside instead of handled (worker/app/poison.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

_INSERT = text("""
INSERT INTO dead_letters (task_id, task_name, reason, deliveries, body)
VALUES (:task_id, :task_name, :reason, :deliveries, :body)
RETURNING id
""")

_LIST = text("""
SELECT id, task_id, task_name, reason, deliveries, length(body) AS body_chars, created_at
FROM dead_letters ORDER BY id DESC LIMIT :limit
""")

_SHOW = text("SELECT * FROM dead_letters WHERE id = :id")


def insert_dead_letter(conn: Connection, *, task_id: str | None, task_name: str | None,
                       reason: str, deliveries: int | None, body: str | None) -> int:
    return int(conn.execute(_INSERT, {
        "task_id": task_id, "task_name": task_name, "reason": reason,
        "deliveries": deliveries, "body": body}).scalar_one())


def list_dead_letters(conn: Connection, limit: int) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in conn.execute(_LIST, {"limit": limit})]


def get_dead_letter(conn: Connection, letter_id: int) -> dict[str, Any] | None:
    row = conn.execute(_SHOW, {"id": letter_id}).first()
    return dict(row._mapping) if row is not None else None
