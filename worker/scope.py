"""Note scope: who a note belongs to, and the clamp applied to in-flight writes.

A note's exact scope is (agent, user, company, primary tenant record, secondary tenant
dimensions). In Postgres it is condensed into `notes.scope_key` by `memory_scope_key()`;
every "same scope" comparison goes through that one function (`db.queries.SCOPE_KEY_SQL`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

ScopeValue = str | int | float | bool


@dataclass(frozen=True)
class NoteScope:
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
    def level_label(self) -> str:
        """The lattice level of this scope, as shown to agents and operators."""
        return LEVEL_LABELS[(self.agent_id is not None, self.user_id is not None,
                             self.company_id is not None)]


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

SCOPE_HINTS = ("user", "agent")
