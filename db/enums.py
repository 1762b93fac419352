"""The vocabulary of the schema: statuses, types, tiers, dispositions.

`INJECTABLE_STATUSES` is the single source of truth for what an agent can see. Every read
path, partial index and pruning query derives from it (through `INJECTABLE_SQL`); the schema
test fails if a migration's index predicate disagrees with it.
"""

from __future__ import annotations

from enum import StrEnum


class NoteStatus(StrEnum):
    PENDING = "Pending"
    ACTIVE = "Active"
    PROVISIONAL = "Provisional"
    REVOKED = "Revoked"
    ARCHIVED = "Archived"


INJECTABLE_STATUSES: tuple[NoteStatus, ...] = (NoteStatus.ACTIVE, NoteStatus.PROVISIONAL)

# Spelled out as literals (not a bound parameter) so the planner can match partial indexes,
# including under generic plans of prepared statements.
INJECTABLE_SQL = "status IN ({})".format(", ".join(f"'{s.value}'" for s in INJECTABLE_STATUSES))


class AuthorType(StrEnum):
    AGENT = "Agent"
    MEMORY_MANAGER = "MemoryManager"
    USER = "User"


class NoteType(StrEnum):
    PREFERENCE = "Preference"
    CONSTRAINT = "Constraint"
    CONTEXT = "Context"
    EXAMPLE = "Example"
    ISSUE = "Issue"


# A planted memory can never be an instruction: in-flight writes are descriptive only.
IN_FLIGHT_NOTE_TYPES: tuple[NoteType, ...] = (NoteType.PREFERENCE, NoteType.CONTEXT)


class ProtectionTier(StrEnum):
    IMMUTABLE = "Immutable"
    PROTECTED = "Protected"
    STANDARD = "Standard"
    EPHEMERAL = "Ephemeral"


class Disposition(StrEnum):
    WRITTEN = "written"
    SUPERSEDED_OWN = "superseded-own"
    DEDUPED = "deduped"
    SKIPPED_DUPLICATE = "skipped-duplicate"
    SKIPPED_CAP = "skipped-cap"
    SKIPPED_DISABLED = "skipped-disabled"
    REJECTED_TYPE = "rejected-type"
    REJECTED_INVALID = "rejected-invalid"
    BLOCKED = "blocked"
    CANDIDATE = "candidate"
    ERROR = "error"
    # The run began before its subject was erased (worker/erasure/fence.py).
    REJECTED_ERASED = "rejected-erased"
    # A run's forget request (worker/erasure/fact.py): notes revoked, or none matched.
    FORGOTTEN = "forgotten"
    NOTHING_TO_FORGET = "nothing-to-forget"
    # A write older than what its run already applied (it arrived after its gap was declared,
    # or was retried after an `error`) that would override a note a later write of the run
    # wrote or changed (worker/writes/pipeline.py, `refuse_stale_override`).
    SKIPPED_STALE = "skipped-stale"


class InjectionStrategy(StrEnum):
    RELEVANT = "Relevant"
    RECENT = "Recent"
    ALL = "All"


class ExampleStrategy(StrEnum):
    SEMANTIC = "Semantic"
    RECENT = "Recent"
    RATED = "Rated"


class CycleStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


MESSAGE_ROLES = ("user", "assistant", "system", "tool")


def sql_in(values: tuple[StrEnum, ...] | tuple[str, ...]) -> str:
    """`'a', 'b'` for a CHECK constraint or literal IN list (values are our own constants)."""
    return ", ".join(f"'{v}'" for v in values)
