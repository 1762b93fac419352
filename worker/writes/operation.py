"""What a run's sequenced operation (a write, a forget request) takes and answers: the
dependencies it runs with, the `Step` it reports under the run's lock, and the result its
caller gets (`WriteResult`) or the wait for an earlier seq (`WaitForSequence`). The order
that runs them is worker/writes/sequencing.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from db.connector import Database
from db.queries.notes import NoteChange
from db.queries.runs import WriteState
from worker.delivery.records import WriteRecords
from worker.embeddings import Embedder
from worker.settings import Settings
from worker.writes.admission import TraceEvent
from worker.writes.attempt import Outcome, WritePolicy

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class WriteResult:
    disposition: str
    reason: str
    run_id: str | None
    seq: int | None
    note_id: str | None = None
    final_scope: dict[str, Any] | None = None
    duration_ms: float = 0.0
    replayed: bool = False
    # Admission (SPEC 5): why a write was `blocked` / held as a `candidate`, and the
    # candidate's id (for promotion later).
    reason_code: str | None = None
    candidate_id: str | None = None
    # A forget request's answer: the notes it revoked (None for a write, and for a replay:
    # the recorded reason names them).
    forgotten: list[dict[str, Any]] | None = None
    # ... and the pending memory candidates it rejected (so none is promoted later).
    forgotten_candidates: list[dict[str, Any]] | None = None
    # Older than what its run had already applied when it came (its gap was declared, or it
    # was retried after an `error`).
    out_of_order: bool = False

    def as_dict(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "disposition": self.disposition,
            "note_id": self.note_id,
            "reason": self.reason,
            "final_scope": self.final_scope,
            "duration_ms": round(self.duration_ms, 3),
            "seq": self.seq,
            "run_id": self.run_id,
            "replayed": self.replayed,
            "reason_code": self.reason_code,
            "candidate_id": self.candidate_id,
        }
        if self.forgotten is not None:
            answer["forgotten"] = self.forgotten
        if self.forgotten_candidates is not None:
            answer["forgotten_candidates"] = self.forgotten_candidates
        if self.out_of_order:
            answer["out_of_order"] = True
        return answer


@dataclass(frozen=True)
class WaitForSequence:
    """Seq `seq` must wait for `missing_from`.. to be applied first."""

    run_id: str
    seq: int
    missing_from: int


def arrived_late(state: WriteState, seq: int) -> bool:
    """The operation is older than what its run already applied: a later one went first."""
    return seq <= state.applied_seq


@dataclass
class WriteDeps:
    db: Database
    settings: Settings
    embedder: Embedder | None
    clock: Clock = field(default=utc_now)
    # The clients' write records (worker/delivery/records.py): a write that is recorded
    # will be delivered, so no gap is declared before it. None: no records consulted.
    records: WriteRecords | None = None

    @property
    def write_policy(self) -> WritePolicy:
        s = self.settings
        return WritePolicy(
            per_run_cap=s.per_run_cap,
            max_note_length=s.max_note_length,
            near_dup_shortlist=s.near_dup_shortlist,
            correction_related_similarity=s.correction_related_similarity,
            provisional_ttl=timedelta(days=s.provisional_ttl_days),
        )


@dataclass
class Step:
    """What an operation did, recorded with its sequence number in one transaction."""

    outcome: Outcome
    event: str
    final_scope: dict[str, Any] | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    admission_fingerprint: str | None = None
    admitted_increment: int = 0
    events: tuple[TraceEvent, ...] = ()
    forgotten: list[dict[str, Any]] | None = None
    forgotten_candidates: list[dict[str, Any]] | None = None
    # A note change the operation decided on but left to be made with its record.
    note_change: NoteChange | None = None


# Called under the run's lock once the operation's turn has come; its changes commit with
# the sequence record.
Operation = Callable[[Connection, WriteState, datetime], Step]
