"""The one scope predicate: who may see a note, and which notes share an exact scope.

Every path that asks "is this note in scope?" goes through this module — retrieval, the write
path's near-duplicate guard, and the Memory Manager's comparisons — in its SQL form
(`visibility_sql`, `SAME_SCOPE_SQL`) or its Python form (`is_visible`); a property test checks
the two forms agree.

Visibility of a note to a request (agent A, user U, company C, tenant scope):

* the 8-level lattice: the note's agent, user and company are each either absent (broader) or
  equal to the request's. A request without a user or company sees only notes without one —
  a missing value never means "any";
* `shared_only` (an audience is present): only notes without a user;
* primary tenant scope (entity + record id): a note bound to a record is visible only to a
  request for that record; notes without one are visible to every record;
* secondary dimensions: per dimension `cascading` (a note without the dimension matches) or
  `strict` (a request that names the dimension sees only notes with a matching value); a
  request value may be a list (IN). A note carrying a dimension the request does not name is
  never visible. Dimensions marked `required` must be present in the request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

ScopeValue = str | int | float | bool


@dataclass(frozen=True)
class NoteScope:
    """A note's exact scope."""

    agent_id: str | None
    user_id: str | None
    company_id: str | None
    primary_scope_entity: str | None = None
    primary_scope_record_id: str | None = None
    secondary_scopes: dict[str, ScopeValue] = field(default_factory=dict)

    def sql_params(self) -> dict[str, Any]:
        """Bind parameters for `SCOPE_KEY_SQL`."""
        return {
            "scope_agent_id": self.agent_id,
            "scope_user_id": self.user_id,
            "scope_company_id": self.company_id,
            "scope_entity": self.primary_scope_entity,
            "scope_record_id": self.primary_scope_record_id,
            "scope_secondary": json.dumps(self.secondary_scopes, sort_keys=True),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "company_id": self.company_id,
            "primary_scope_entity": self.primary_scope_entity,
            "primary_scope_record_id": self.primary_scope_record_id,
            "secondary_scopes": dict(self.secondary_scopes),
            "level": self.level_label,
        }

    @property
    def level(self) -> tuple[bool, bool, bool]:
        return (self.agent_id is not None, self.user_id is not None,
                self.company_id is not None)

    @property
    def level_label(self) -> str:
        """The lattice level of this scope, as shown to agents and operators."""
        return LEVEL_LABELS[self.level]

    @classmethod
    def from_row(cls, row: Any) -> NoteScope:
        get = row.get if isinstance(row, dict) else lambda k: getattr(row, k)
        return cls(get("agent_id"), get("user_id"), get("company_id"),
                   get("primary_scope_entity"), get("primary_scope_record_id"),
                   dict(get("secondary_scopes") or {}))


# Most specific first: this order is the lattice's precedence and the rendering order.
LEVEL_LABELS: dict[tuple[bool, bool, bool], str] = {
    (True, True, True): "Agent + User + Company specific",
    (True, True, False): "Agent + User specific",
    (True, False, True): "Agent + Company specific",
    (False, True, True): "User + Company specific",
    (True, False, False): "Agent specific",
    (False, True, False): "User specific",
    (False, False, True): "Company specific",
    (False, False, False): "Global",
}
LEVEL_RANK: dict[tuple[bool, bool, bool], int] = {level: i for i, level in enumerate(LEVEL_LABELS)}

SCOPE_HINTS = ("user", "agent")

# Same exact scope: the note's generated `scope_key` equals the key of the bound
# `NoteScope.sql_params()`. `memory_scope_key()` is defined by the schema (db/migrations).
SCOPE_KEY_SQL = (
    "memory_scope_key(:scope_agent_id, :scope_user_id, :scope_company_id, :scope_entity, "
    ":scope_record_id, CAST(:scope_secondary AS jsonb))"
)
SAME_SCOPE_SQL = f"n.scope_key = {SCOPE_KEY_SQL}"


# --- visibility ------------------------------------------------------------------------------

class Inheritance(StrEnum):
    CASCADING = "cascading"
    STRICT = "strict"


@dataclass(frozen=True)
class DimensionRule:
    inheritance: Inheritance = Inheritance.CASCADING
    required: bool = False


class ScopeError(ValueError):
    """The request does not carry what the agent's scope configuration requires."""


@dataclass(frozen=True)
class ScopeConfig:
    """Per-agent tenant scoping (`agents.scope_config`)."""

    primary_entity: str | None = None
    primary_required: bool = False
    dimensions: dict[str, DimensionRule] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Any) -> ScopeConfig:
        """`{"primary_entity": "Account", "primary_required": true,
        "dimensions": {"region": {"inheritance": "strict", "required": true}}}`"""
        if not raw:
            return cls()
        if not isinstance(raw, dict):
            raise ScopeError("scope_config must be an object")
        dimensions: dict[str, DimensionRule] = {}
        for name, rule in (raw.get("dimensions") or {}).items():
            rule = rule if isinstance(rule, dict) else {"inheritance": rule}
            try:
                inheritance = Inheritance(rule.get("inheritance", "cascading"))
            except ValueError as exc:
                raise ScopeError(f"dimension {name!r}: inheritance must be cascading or "
                                 "strict") from exc
            dimensions[str(name)] = DimensionRule(inheritance, bool(rule.get("required")))
        return cls(raw.get("primary_entity"), bool(raw.get("primary_required")), dimensions)


@dataclass(frozen=True)
class RequestScope:
    """Who is asking: the run's agent, user, company and tenant scope."""

    agent_id: str
    user_id: str | None = None
    company_id: str | None = None
    primary_scope_entity: str | None = None
    primary_scope_record_id: str | None = None
    secondary_scopes: dict[str, ScopeValue | list[ScopeValue]] = field(default_factory=dict)
    shared_only: bool = False

    def validated(self, config: ScopeConfig) -> RequestScope:
        """Raise ScopeError if a required tenant value is missing."""
        if config.primary_required and self.primary_scope_record_id is None:
            raise ScopeError(f"this agent requires a primary scope record "
                             f"({config.primary_entity or 'entity'} + record id)")
        if (config.primary_entity and self.primary_scope_entity is not None
                and self.primary_scope_entity != config.primary_entity):
            raise ScopeError(f"this agent's primary scope entity is {config.primary_entity!r}")
        missing = [name for name, rule in config.dimensions.items()
                   if rule.required and _values(self.secondary_scopes.get(name)) == []]
        if missing:
            raise ScopeError(f"missing required scope dimension(s): {', '.join(sorted(missing))}")
        return self


def _values(value: Any) -> list[str]:
    """Request values of a dimension, as the text `->>` yields for a stored JSON scalar."""
    if value is None:
        return []
    items = value if isinstance(value, list | tuple) else [value]
    return [item if isinstance(item, str) else json.dumps(item) for item in items
            if item is not None]


def _stored_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def is_visible(note: NoteScope, request: RequestScope, config: ScopeConfig | None = None) -> bool:
    """The Python form of the predicate (must agree with `visibility_sql`)."""
    config = config or ScopeConfig()
    if note.agent_id is not None and note.agent_id != request.agent_id:
        return False
    if note.user_id is not None and (request.shared_only or note.user_id != request.user_id):
        return False
    if note.company_id is not None and note.company_id != request.company_id:
        return False
    if note.primary_scope_record_id is not None and (
            note.primary_scope_entity != request.primary_scope_entity
            or note.primary_scope_record_id != request.primary_scope_record_id):
        return False
    requested = {name: _values(value) for name, value in request.secondary_scopes.items()}
    requested = {name: values for name, values in requested.items() if values}
    for name, stored in note.secondary_scopes.items():
        if name not in requested or _stored_text(stored) not in requested[name]:
            return False
    for name in requested:
        rule = config.dimensions.get(name, DimensionRule())
        if rule.inheritance is Inheritance.STRICT and name not in note.secondary_scopes:
            return False
    return True


def visibility_sql(request: RequestScope, config: ScopeConfig | None = None,
                   alias: str = "n") -> tuple[str, dict[str, Any]]:
    """The SQL form: a boolean expression over `alias` and its bound parameters.

    Lattice columns compare with `=` (NULL never equals anything), so a request without a
    user sees no user's notes. Dimension names are bound, never spliced."""
    config = config or ScopeConfig()
    n = alias
    params: dict[str, Any] = {
        "vis_agent": request.agent_id,
        "vis_user": None if request.shared_only else request.user_id,
        "vis_company": request.company_id,
        "vis_entity": request.primary_scope_entity,
        "vis_record": request.primary_scope_record_id,
    }
    clauses = [
        f"({n}.agent_id IS NULL OR {n}.agent_id = :vis_agent)",
        f"({n}.user_id IS NULL OR {n}.user_id = :vis_user)",
        f"({n}.company_id IS NULL OR {n}.company_id = :vis_company)",
        f"({n}.primary_scope_record_id IS NULL OR ({n}.primary_scope_entity = :vis_entity "
        f"AND {n}.primary_scope_record_id = :vis_record))",
    ]
    requested = {name: _values(value) for name, value in request.secondary_scopes.items()}
    requested = {name: values for name, values in requested.items() if values}
    params["vis_dims"] = sorted(requested)
    # A note may carry only dimensions the request names.
    clauses.append(f"({n}.secondary_scopes - CAST(:vis_dims AS text[])) = '{{}}'::jsonb")
    for i, (name, values) in enumerate(sorted(requested.items())):
        params[f"vis_dim_{i}"] = name
        params[f"vis_val_{i}"] = values
        matches = f"{n}.secondary_scopes ->> :vis_dim_{i} = ANY(CAST(:vis_val_{i} AS text[]))"
        rule = config.dimensions.get(name, DimensionRule())
        if rule.inheritance is Inheritance.STRICT:
            clauses.append(f"({matches})")
        else:
            clauses.append(f"(NOT ({n}.secondary_scopes ? :vis_dim_{i}) OR {matches})")
    return " AND ".join(clauses), params


def visible_levels(request: RequestScope) -> list[tuple[bool, bool, bool]]:
    """Lattice levels (agent, user, company set?) a request can see, most specific first.

    The SQL read path scans one exact-equality index range per level (a btree finds
    `IS NULL` too), then filters with `visibility_sql`; this keeps every scan exact and
    proportional to what the request can see, under custom and generic plans alike."""
    has_user = request.user_id is not None and not request.shared_only
    has_company = request.company_id is not None
    return [level for level in LEVEL_LABELS
            if (has_user or not level[1]) and (has_company or not level[2])]


def level_condition(level: tuple[bool, bool, bool], alias: str = "n") -> str:
    """Equality conditions selecting one lattice level for the request bound by
    `visibility_sql` (:vis_agent, :vis_user, :vis_company)."""
    parts = []
    for column, param, is_set in (("agent_id", "vis_agent", level[0]),
                                  ("user_id", "vis_user", level[1]),
                                  ("company_id", "vis_company", level[2])):
        parts.append(f"{alias}.{column} = :{param}" if is_set else f"{alias}.{column} IS NULL")
    return " AND ".join(parts)
