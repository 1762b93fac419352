"""What a write carries through the guard pipeline and what a guard returns, with the pure
checks shared by the guards and the pre-transaction embedding decision.

The guards themselves live in worker/writes/pipeline.py (the SPEC 4 order) and
worker/writes/admission/guards.py (write admission, SPEC 5); both work on these types, so they live
apart from either.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import numpy as np
from sqlalchemy import Connection

from db.enums import IN_FLIGHT_NOTE_TYPES, Disposition
from db.queries.notes import NoteChange, ScopeNeighbours
from db.scope import SCOPE_HINTS, NoteScope
from worker.agents import AgentConfig
from worker.writes.admission import MemoryPolicy, TraceEvent
from worker.writes.admission.effects import EffectFinding
from worker.writes.payloads import RunContext, WriteRequest, unencodable_reason


@dataclass(frozen=True)
class WritePolicy:
    per_run_cap: int
    max_note_length: int
    near_dup_shortlist: int
    # Other notes of the scope at or above this similarity are checked for being corrected.
    correction_related_similarity: float
    provisional_ttl: timedelta


@dataclass(frozen=True)
class Embedding:
    vector: np.ndarray | None
    model: str | None
    error: str | None = None


class EmbeddingInFlight:
    """A write's vector still being computed on its process's embedding thread
    (worker/writes/apply.py) while the write's transaction begins; read like an `Embedding`,
    the first read waits for it."""

    __slots__ = ("_future",)

    def __init__(self, future: Future[Embedding]) -> None:
        self._future = future

    def result(self) -> Embedding:
        return self._future.result()

    @property
    def vector(self) -> np.ndarray | None:
        return self.result().vector

    @property
    def model(self) -> str | None:
        return self.result().model

    @property
    def error(self) -> str | None:
        return self.result().error


@dataclass(frozen=True)
class Outcome:
    disposition: Disposition
    reason: str
    note_id: UUID | None = None
    persisted_increment: int = 0
    # Admission (SPEC 5): why a write was blocked or held, the candidate it became, and
    # non-text detail for its trace step.
    reason_code: str | None = None
    candidate_id: UUID | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class WriteAttempt:
    conn: Connection
    run: RunContext
    request: WriteRequest
    seq: int
    agent: AgentConfig
    write_policy: WritePolicy
    persisted_count: int
    embedding: Embedding | EmbeddingInFlight
    now: datetime
    memory_policy: MemoryPolicy = field(default_factory=MemoryPolicy)
    admitted_count: int = 0
    # Embeds a text the admission hooks rewrote (the prefetched vector is of the original).
    embed: Callable[[str], Embedding] | None = None
    # Principal lookups already answered with the run's state (ids -> kind or None); others
    # (a rewritten text's) are asked on the attempt's connection.
    known_principals: dict[tuple[str, ...], str | None] = field(default_factory=dict)
    # Filled in by the guards as they pass the write along.
    text: str = ""
    note_type: str = ""
    scope: NoteScope | None = None
    content_hash: str = ""
    neighbours: ScopeNeighbours | None = None
    # Set by recognize_correction: the run's own note this write replaces, and the other
    # note of the scope it likely corrects, restates or refines (recorded, with the
    # detector's relation; the Memory Manager resolves it).
    replaces_own: ReplacedOwn | None = None
    # A late write (older than its run's applied sequence): the notes later writes of its run
    # wrote, changed or restated, with the latest such seq; it must not override them.
    newer_changes: dict[UUID, int] = field(default_factory=dict)
    corrects_note_id: UUID | None = None
    corrects_relation: str | None = None
    notices: list[str] = field(default_factory=list)
    # Set by admission: the write got through it (counts toward max_writes_per_run), with
    # this duplicate fingerprint; trace steps besides the write's own.
    admitted: bool = False
    fingerprint: str | None = None
    events: list[TraceEvent] = field(default_factory=list)
    hook_detail: dict[str, Any] = field(default_factory=dict)
    # The note change the guards decided on (insert, supersede, reinforce). Made at once
    # unless `defer_note_change`: the write path makes it in the statement recording the
    # write (worker/writes/sequencing.py), one round trip for both.
    defer_note_change: bool = False
    note_change: NoteChange | None = None
    # Set by admission when the note's effect is doubtful (a claim about a third party, an
    # encoded payload, …): the write is held as a candidate once its scope is known.
    quarantine: EffectFinding | None = None


@dataclass(frozen=True)
class ReplacedOwn:
    note_id: UUID
    relation: str


Guard = Callable[[WriteAttempt], Outcome | None]


# --- pure checks, shared with the pre-transaction embedding decision ---------------------

def check_type(value: Any) -> str | Outcome:
    if isinstance(value, str) and value in IN_FLIGHT_NOTE_TYPES:
        return value
    shown = repr(value)[:40]
    return Outcome(
        Disposition.REJECTED_TYPE,
        f"Not saved: type {shown} is not allowed for in-flight memory; use "
        f"{' or '.join(IN_FLIGHT_NOTE_TYPES)}.",
    )


def check_text(value: Any, max_length: int) -> str | Outcome:
    if not isinstance(value, str):
        return Outcome(Disposition.REJECTED_INVALID,
                       f"Not saved: note must be text, not {type(value).__name__}.")
    problem = unencodable_reason(value)
    if problem:
        return Outcome(Disposition.REJECTED_INVALID, f"Not saved: the note {problem}.")
    stripped = value.strip()
    if not stripped:
        return Outcome(Disposition.REJECTED_INVALID, "Not saved: the note is empty.")
    if len(stripped) > max_length:
        return Outcome(
            Disposition.REJECTED_INVALID,
            f"Not saved: the note is {len(stripped)} characters long; the limit is "
            f"{max_length}. Record one short, atomic fact per write.",
        )
    return stripped


def embeddable_text(request: WriteRequest, max_length: int) -> str | None:
    """The text the write will store if it passes validation, else None (nothing to embed)."""
    if isinstance(check_type(request.type), Outcome):
        return None
    checked = check_text(request.note, max_length)
    return None if isinstance(checked, Outcome) else checked


def clamped_scope(run: RunContext, hint: Any) -> tuple[NoteScope, str | None]:
    """Agent + user + company + tenant dimensions; a hint may narrow, never broaden.
    Returns the scope and a notice when the hint was ignored."""
    scope = run.full_scope
    if hint == "agent":
        scope = NoteScope(
            agent_id=scope.agent_id,
            user_id=None,
            company_id=scope.company_id,
            primary_scope_entity=scope.primary_scope_entity,
            primary_scope_record_id=scope.primary_scope_record_id,
            secondary_scopes=dict(scope.secondary_scopes),
        )
    elif hint is not None and hint not in SCOPE_HINTS:
        return scope, (f"scope hint {repr(hint)[:30]} ignored (only 'user' or 'agent' may "
                       "narrow the scope)")
    return scope, None
