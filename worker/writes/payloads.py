"""Wire payloads of `memory.write`: the run context, the write request and the sequence number.

Parsing never raises: a malformed payload becomes an `Invalid` with a sentence saying what is
wrong, which the write path turns into a `rejected-invalid` disposition. The write request is
parsed leniently (its type and text are judged by the guards, in the order of SPEC 4).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from db.scope import NoteScope, RequestScope, ScopeValue

MAX_ID_LENGTH = 200
MAX_SECONDARY_DIMENSIONS = 32


@dataclass(frozen=True)
class Invalid:
    reason: str


@dataclass(frozen=True)
class RunContext:
    run_id: str
    agent_id: str
    user_id: str | None = None
    company_id: str | None = None
    conversation_id: str | None = None
    conversation_detail_id: str | None = None
    primary_scope_entity: str | None = None
    primary_scope_record_id: str | None = None
    secondary_scopes: dict[str, ScopeValue] = field(default_factory=dict)
    source: str = "user"

    @property
    def full_scope(self) -> NoteScope:
        """Agent + user + company + the run's tenant dimensions: the widest in-flight scope."""
        return NoteScope(
            agent_id=self.agent_id,
            user_id=self.user_id,
            company_id=self.company_id,
            primary_scope_entity=self.primary_scope_entity,
            primary_scope_record_id=self.primary_scope_record_id,
            secondary_scopes=dict(self.secondary_scopes),
        )

    def identity_digest(self) -> str:
        """Digest of the fields that decide where a run's notes land."""
        identity = [
            self.agent_id, self.user_id, self.company_id, self.primary_scope_entity,
            self.primary_scope_record_id, self.secondary_scopes, self.source,
        ]
        return stable_digest(identity)


@dataclass(frozen=True)
class WriteRequest:
    """A write as the agent sent it; values are unvalidated until the guards judge them."""

    note: Any
    type: Any
    scope_hint: Any = None


def stable_digest(value: Any) -> str:
    encoded = json.dumps(value, sort_keys=True, ensure_ascii=True, default=repr)
    return hashlib.sha256(encoded.encode("ascii")).hexdigest()


def payload_digest(run: Any, write: Any) -> str:
    """Fingerprint of one write message, to tell a redelivery from a reused sequence number."""
    return stable_digest({"run": run, "write": write})


def unencodable_reason(value: str) -> str | None:
    """Why a string cannot be stored as Postgres text, or None if it can."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains invalid Unicode (a lone surrogate)"
    if "\x00" in value:
        return "contains a NUL character"
    return None


def parse_id_value(value: Any, name: str, *, required: bool) -> str | Invalid | None:
    """The one identifier rule of every task, writes and reads alike: a string (trimmed), or
    an integer meaning its decimal string (JSON clients often send numeric ids). Floats,
    booleans, lists and objects are refused: 7.0 or true as an id is a sender's mistake, and
    guessing its string would file memory under an id nobody reads back."""
    if value is None:
        return Invalid(f"{name} is required") if required else None
    if isinstance(value, bool) or not isinstance(value, str | int):
        return Invalid(f"{name} must be a string or an integer, not {type(value).__name__}")
    text = str(value).strip()
    if not text:
        return Invalid(f"{name} is empty") if required else None
    if len(text) > MAX_ID_LENGTH:
        return Invalid(f"{name} is longer than {MAX_ID_LENGTH} characters")
    problem = unencodable_reason(text)
    if problem:
        return Invalid(f"{name} {problem}")
    return text


def parse_identifier(payload: dict[str, Any], key: str, *, required: bool,
                prefix: str = "run") -> str | Invalid | None:
    return parse_id_value(payload.get(key), f"{prefix}.{key}", required=required)


NON_FINITE = "{where} holds a number that is not finite (NaN or Infinity)"


def non_finite_number(value: Any) -> bool:
    """Whether a NaN or an infinity hides anywhere in a decoded JSON value. Postgres refuses
    them in jsonb, so they must be refused as input, not met as a storage error. Iterative: a
    deeply nested payload must not exhaust the stack here."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _scalar_problem(item: Any) -> str | None:
    if not isinstance(item, str | int | float | bool):
        return "must be a scalar value"
    if isinstance(item, float) and not math.isfinite(item):
        return "must be a finite number"
    if isinstance(item, str) and (len(item) > MAX_ID_LENGTH or unencodable_reason(item)):
        return "is not a valid value"
    return None


def parse_secondary_scopes(value: Any, *, prefix: str = "run", lists: bool = False
                      ) -> dict[str, Any] | Invalid:
    """Tenant dimensions: name -> scalar (a note, a run) or name -> scalar or list (a request)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        return Invalid(f"{prefix}.secondary_scopes must be an object of dimension -> value")
    if len(value) > MAX_SECONDARY_DIMENSIONS:
        return Invalid(f"{prefix}.secondary_scopes has more than {MAX_SECONDARY_DIMENSIONS} "
                       "dimensions")
    scopes: dict[str, Any] = {}
    for key, item in value.items():
        if (not isinstance(key, str) or not key or len(key) > MAX_ID_LENGTH
                or unencodable_reason(key)):
            return Invalid(f"{prefix}.secondary_scopes has an invalid dimension name")
        if item is None:
            continue  # "no value" for a dimension is the same as not having it
        items = item if lists and isinstance(item, list) else [item]
        if lists and isinstance(item, list) and not 0 < len(item) <= 100:
            return Invalid(f"{prefix}.secondary_scopes[{key!r}] must list 1 to 100 values")
        problem = next((p for p in map(_scalar_problem, items) if p), None)
        if problem:
            return Invalid(f"{prefix}.secondary_scopes[{key!r}] {problem}")
        scopes[key] = item
    return scopes


RUN_IDENTIFIERS = (
    ("run_id", True), ("agent_id", True), ("user_id", False), ("company_id", False),
    ("conversation_id", False), ("conversation_detail_id", False),
    ("primary_scope_entity", False), ("primary_scope_record_id", False), ("source", False),
)
REQUEST_IDENTIFIERS = (
    ("agent_id", True), ("user_id", False), ("company_id", False),
    ("primary_scope_entity", False), ("primary_scope_record_id", False),
)


def parse_scope_fields(payload: dict[str, Any], prefix: str,
                  keys: tuple[tuple[str, bool], ...]) -> dict[str, Any] | Invalid:
    """The identifier fields of a run or request; the primary scope's two halves together."""
    fields: dict[str, Any] = {}
    for key, required in keys:
        parsed = parse_identifier(payload, key, required=required, prefix=prefix)
        if isinstance(parsed, Invalid):
            return parsed
        if parsed is not None:
            fields[key] = parsed
    if ("primary_scope_entity" in fields) != ("primary_scope_record_id" in fields):
        return Invalid(f"{prefix}.primary_scope_entity and {prefix}.primary_scope_record_id "
                       "go together")
    return fields


def parse_run(payload: Any) -> RunContext | Invalid:
    if not isinstance(payload, dict):
        return Invalid("run must be an object with run_id and agent_id")
    fields = parse_scope_fields(payload, "run", RUN_IDENTIFIERS)
    if isinstance(fields, Invalid):
        return fields
    secondary = parse_secondary_scopes(payload.get("secondary_scopes"))
    if isinstance(secondary, Invalid):
        return secondary
    return RunContext(secondary_scopes=secondary, **fields)


def parse_request_scope(payload: Any) -> RequestScope | Invalid:
    """The scope of a context request: agent, user, company, tenant scope, audience."""
    if not isinstance(payload, dict):
        return Invalid("request must be an object with agent_id")
    fields = parse_scope_fields(payload, "request", REQUEST_IDENTIFIERS)
    if isinstance(fields, Invalid):
        return fields
    secondary = parse_secondary_scopes(payload.get("secondary_scopes"), prefix="request",
                                       lists=True)
    if isinstance(secondary, Invalid):
        return secondary
    shared_only = payload.get("shared_only", False)
    if not isinstance(shared_only, bool):
        return Invalid("request.shared_only must be true or false")
    # An audience (several people reading the same output) means shared notes only.
    shared_only = shared_only or bool(payload.get("audience"))
    return RequestScope(secondary_scopes=secondary, shared_only=shared_only, **fields)


def parse_seq(value: Any) -> int | Invalid:
    if isinstance(value, bool) or not isinstance(value, int):
        return Invalid("seq must be a positive integer")
    if value < 1 or value > 2**62:
        return Invalid("seq must be a positive integer")
    return value


def parse_prev_seq(value: Any, seq: int) -> int | Invalid:
    """The seq of the write before this one in its run: 0 for none (a run's first write, or
    the first after the client's counter was lost), absent for seq - 1."""
    if value is None:
        return seq - 1
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < seq:
        return Invalid("prev_seq must be an integer from 0 to seq - 1")
    return value


def parse_write(payload: Any) -> WriteRequest | Invalid:
    if not isinstance(payload, dict):
        return Invalid("write must be an object with note and type")
    if "note" not in payload:
        return Invalid("write.note is required")
    hint = payload.get("scope_hint", payload.get("scopeHint"))
    return WriteRequest(note=payload.get("note"), type=payload.get("type"), scope_hint=hint)
