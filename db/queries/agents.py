"""Agent configuration rows."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, text

# --- agents -----------------------------------------------------------------------------

_SELECT_AGENT = text("SELECT * FROM agents WHERE agent_id = :agent_id")

_UPSERT_AGENT = text("""
INSERT INTO agents (agent_id, allow_memory_write, inject_notes, max_notes_to_inject,
    note_injection_strategy, inject_examples, max_examples_to_inject,
    example_injection_strategy, per_run_cap, reranker_config, scope_config,
    auto_archive_enabled, memory_policy)
VALUES (:agent_id, :allow_memory_write, :inject_notes, :max_notes_to_inject,
    :note_injection_strategy, :inject_examples, :max_examples_to_inject,
    :example_injection_strategy, :per_run_cap, CAST(:reranker_config AS jsonb),
    CAST(:scope_config AS jsonb), :auto_archive_enabled, CAST(:memory_policy AS jsonb))
ON CONFLICT (agent_id) DO UPDATE SET
    allow_memory_write = EXCLUDED.allow_memory_write,
    inject_notes = EXCLUDED.inject_notes,
    max_notes_to_inject = EXCLUDED.max_notes_to_inject,
    note_injection_strategy = EXCLUDED.note_injection_strategy,
    inject_examples = EXCLUDED.inject_examples,
    max_examples_to_inject = EXCLUDED.max_examples_to_inject,
    example_injection_strategy = EXCLUDED.example_injection_strategy,
    per_run_cap = EXCLUDED.per_run_cap,
    reranker_config = EXCLUDED.reranker_config,
    scope_config = EXCLUDED.scope_config,
    auto_archive_enabled = EXCLUDED.auto_archive_enabled,
    memory_policy = EXCLUDED.memory_policy,
    updated_at = now()
""")


def select_agent(conn: Connection, agent_id: str) -> dict[str, Any] | None:
    row = conn.execute(_SELECT_AGENT, {"agent_id": agent_id}).mappings().first()
    return dict(row) if row else None


def json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def upsert_agent(conn: Connection, config: dict[str, Any]) -> None:
    params = dict(config)
    params["reranker_config"] = json_or_none(params.get("reranker_config"))
    params["scope_config"] = json_or_none(params.get("scope_config"))
    params["memory_policy"] = json_or_none(params.get("memory_policy"))
    conn.execute(_UPSERT_AGENT, params)
