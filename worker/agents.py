"""Per-agent memory configuration. An unknown agent id gets the defaults."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from sqlalchemy import Connection

from db.enums import ExampleStrategy, InjectionStrategy
from db.queries.agents import select_agent, upsert_agent
from worker.writes.admission import PolicyError, validate_policy_overrides


@dataclass(frozen=True)
class AgentConfig:
    agent_id: str
    allow_memory_write: bool = True
    inject_notes: bool = True
    max_notes_to_inject: int = 5
    note_injection_strategy: str = InjectionStrategy.RELEVANT.value
    inject_examples: bool = False
    max_examples_to_inject: int = 3
    example_injection_strategy: str = ExampleStrategy.SEMANTIC.value
    per_run_cap: int | None = None  # None: the global setting applies
    reranker_config: dict[str, Any] | None = None
    scope_config: dict[str, Any] | None = None
    auto_archive_enabled: bool = True
    # This agent's MemoryPolicy fields (SPEC 5, worker/writes/admission/policy.py); the rest
    # come from the settings. None: the global policy as is.
    memory_policy: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


CONFIG_FIELDS = tuple(f.name for f in fields(AgentConfig) if f.name != "agent_id")


class AgentConfigError(ValueError):
    pass


def _check_int(name: str, value: Any, low: int, high: int, *, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise AgentConfigError(f"{name} must be an integer from {low} to {high}")


def validate_changes(changes: Any) -> dict[str, Any]:
    """Check a partial configuration; raise AgentConfigError naming every problem at once."""
    if not isinstance(changes, dict):
        raise AgentConfigError("config must be an object")
    problems: list[str] = []
    unknown = sorted(set(changes) - set(CONFIG_FIELDS))
    if unknown:
        problems.append(f"unknown fields: {', '.join(map(str, unknown))}")
    checks = {
        "allow_memory_write": lambda v: isinstance(v, bool),
        "inject_notes": lambda v: isinstance(v, bool),
        "inject_examples": lambda v: isinstance(v, bool),
        "auto_archive_enabled": lambda v: isinstance(v, bool),
        "note_injection_strategy": lambda v: v in tuple(InjectionStrategy),
        "example_injection_strategy": lambda v: v in tuple(ExampleStrategy),
        "reranker_config": lambda v: v is None or isinstance(v, dict),
        "scope_config": lambda v: v is None or isinstance(v, dict),
    }
    for name, ok in checks.items():
        if name in changes and not ok(changes[name]):
            problems.append(f"{name} has an invalid value")
    for name, low, high, nullable in (
        ("max_notes_to_inject", 0, 100, False),
        ("max_examples_to_inject", 0, 50, False),
        ("per_run_cap", 0, 1000, True),
    ):
        if name in changes:
            try:
                _check_int(name, changes[name], low, high, nullable=nullable)
            except AgentConfigError as exc:
                problems.append(str(exc))
    valid = {k: v for k, v in changes.items() if k in CONFIG_FIELDS}
    if "memory_policy" in valid:
        try:
            valid["memory_policy"] = validate_policy_overrides(valid["memory_policy"])
        except PolicyError as exc:
            problems.append(f"memory_policy: {exc}")
    if problems:
        raise AgentConfigError("; ".join(problems))
    return valid


def config_from_row(agent_id: str, row: dict[str, Any] | None) -> AgentConfig:
    if row is None:
        return AgentConfig(agent_id=agent_id)
    # Only the columns the row has: a query that selects fewer (or predates a column) gets
    # that field's default.
    return AgentConfig(agent_id=agent_id, **{k: row[k] for k in CONFIG_FIELDS if k in row})


def load_agent_config(conn: Connection, agent_id: str) -> AgentConfig:
    return config_from_row(agent_id, select_agent(conn, agent_id))


def configure_agent(conn: Connection, agent_id: str, changes: Any) -> AgentConfig:
    """Apply a partial configuration to an agent (creating its row) and return the result."""
    valid = validate_changes(changes)
    current = load_agent_config(conn, agent_id).as_dict()
    current.update(valid)
    upsert_agent(conn, current)
    return config_from_row(agent_id, current)
