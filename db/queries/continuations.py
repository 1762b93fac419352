"""Chain continuations waiting to be published again (worker/app/continuations.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

_SAVE_CONTINUATION = text("""
INSERT INTO chain_continuations (parent_task_id, root_id, chain, last_error)
VALUES (:parent_task_id, :root_id, CAST(:chain AS jsonb), :error)
ON CONFLICT (parent_task_id) DO NOTHING
""")

_CLAIM_CONTINUATIONS = text("""
SELECT id, parent_task_id, root_id, chain FROM chain_continuations
ORDER BY id LIMIT :limit FOR UPDATE SKIP LOCKED
""")

_DELETE_CONTINUATION = text("DELETE FROM chain_continuations WHERE id = :id")

_FAILED_CONTINUATION = text("""
UPDATE chain_continuations SET attempts = attempts + 1, last_error = :error WHERE id = :id
""")


def save_continuation(conn: Connection, *, parent_task_id: str, root_id: str | None,
                      chain_json: str, error: str) -> None:
    conn.execute(_SAVE_CONTINUATION, {"parent_task_id": parent_task_id, "root_id": root_id,
                                      "chain": chain_json, "error": error})


def claim_continuations(conn: Connection, limit: int) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in conn.execute(_CLAIM_CONTINUATIONS, {"limit": limit})]


def delete_continuation(conn: Connection, continuation_id: int) -> None:
    conn.execute(_DELETE_CONTINUATION, {"id": continuation_id})


def continuation_failed(conn: Connection, continuation_id: int, error: str) -> None:
    conn.execute(_FAILED_CONTINUATION, {"id": continuation_id, "error": error})
