"""Memory candidates (SPEC 5): list, promote and reject internal memory held for review.

A write from an internal source (reflection, self-learning, delegation, tool output, …) that
the promotion hook did not approve is held in `memory_candidates`, outside the injectable
set. Later an operator, a reviewing service or a task decides:

* `promote_candidate` writes the note through the normal guard pipeline from the scope on
  (`worker.writes.pipeline.PROMOTION_PIPELINE`: scope lock, within-run idempotency, supersede-own,
  exact-restatement dedupe, then a Provisional note with the usual TTL), under the run's
  advisory lock like any write of that run. The note is the run's (`source_agent_run_id`), so
  it is then injected as provisional and hardened by the Memory Manager like any other.
* `reject_candidate` marks it rejected; it is never injected.

Both are idempotent: deciding an already decided candidate returns its state unchanged.
Plain Python over a `WriteDeps`; the tasks (`memory.candidate.*`) and the CLI
(`memory-worker candidates`) call these.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from db.enums import Disposition
from db.queries.candidates import (
    add_persisted,
    decide_candidate,
    get_candidate,
    note_candidate_decision,
    select_candidates,
)
from db.queries.runs import insert_trace, lock_run
from db.scope import NoteScope
from worker.agents import load_agent_config
from worker.writes.admission import TraceEventName, log_trace, resolve_policy
from worker.writes.apply import PERSISTED, WriteDeps, embed_text
from worker.writes.attempt import Outcome, WriteAttempt
from worker.writes.payloads import RunContext, WriteRequest
from worker.writes.pipeline import PROMOTION_PIPELINE, run_guards

log = logging.getLogger(__name__)

# A promotion that lands here made the candidate's fact available; anything else (the agent's
# writes disabled, a rewrite that is not storable) leaves it a candidate.
PROMOTED = PERSISTED | {Disposition.SKIPPED_DUPLICATE}
MAX_ACTOR = 100
MAX_REASON = 300


class CandidateError(ValueError):
    """Unknown candidate id, or a decision the candidate's state does not allow."""


@dataclass(frozen=True)
class Decision:
    candidate_id: str
    status: str  # candidate | promoted | rejected
    changed: bool  # False: it was already decided (or the promotion did not land)
    reason: str
    disposition: str | None = None
    note_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "candidate_id": self.candidate_id, "status": self.status,
                "changed": self.changed, "reason": self.reason,
                "disposition": self.disposition, "note_id": self.note_id}


def parse_candidate_id(value: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        raise CandidateError("candidate_id must be a UUID") from None


def _actor(value: Any) -> str:
    actor = str(value or "operator").strip()[:MAX_ACTOR]
    return actor or "operator"


def public_view(row: dict[str, Any], *, with_text: bool = True) -> dict[str, Any]:
    """A candidate for an operator: ids, scope, state, and (when asked) its text."""
    view = {
        "candidate_id": str(row["id"]), "run_id": row["run_id"], "seq": row["seq"],
        "agent_id": row["agent_id"], "user_id": row["user_id"],
        "company_id": row["company_id"], "source": row["source"], "type": row["type"],
        "status": row["status"], "held_reason": row["held_reason"],
        "decision_reason": row["decision_reason"],
        "decided_by": row["decided_by"],
        "decided_at": row["decided_at"].isoformat() if row["decided_at"] else None,
        "note_id": str(row["note_id"]) if row["note_id"] else None,
        "created_at": row["created_at"].isoformat(),
    }
    if with_text:
        view["note"] = row["note"]
    return view


def list_candidates(deps: WriteDeps, *, agent_id: str | None = None, run_id: str | None = None,
                    status: str | None = "candidate", limit: int = 100,
                    with_text: bool = True) -> list[dict[str, Any]]:
    """Candidates of an agent and/or run, oldest first (`status=None`: every status)."""
    with deps.db.connect() as conn:
        rows = select_candidates(conn, agent_id=agent_id, run_id=run_id,
                                 status=status, limit=max(1, min(limit, 1000)))
    return [public_view(row, with_text=with_text) for row in rows]


def _trace(conn: Any, event: str, row: dict[str, Any], now: Any, traced: list[dict[str, Any]],
           *, disposition: str | None = None, note_id: uuid.UUID | None = None,
           reason: str | None = None, detail: dict[str, Any]) -> None:
    detail = {"candidate_id": str(row["id"]), "source": row["source"], **detail}
    insert_trace(conn, event=event, now=now, run_id=row["run_id"], seq=row["seq"],
                 agent_id=row["agent_id"], disposition=disposition, note_id=note_id,
                 reason=reason, detail=detail)
    traced.append({"event": event, "run_id": row["run_id"], "seq": row["seq"],
                   "agent_id": row["agent_id"], "disposition": disposition, "note_id": note_id,
                   "candidate_id": row["id"], "detail": detail})


def _already(row: dict[str, Any]) -> Decision:
    return Decision(str(row["id"]), row["status"], False,
                    f"Already {row['status']}; nothing changed.",
                    note_id=str(row["note_id"]) if row["note_id"] else None)


def promote_candidate(deps: WriteDeps, candidate_id: Any, *, rewrite: str | None = None,
                      actor: Any = None) -> Decision:
    """Write a candidate as a note through the normal pipeline (optionally rewritten first)."""
    cid = parse_candidate_id(candidate_id)
    with deps.db.connect() as conn:
        peek = get_candidate(conn, cid)
    if peek is None:
        raise CandidateError(f"no candidate {cid}")
    if rewrite is not None and not isinstance(rewrite, str):
        raise CandidateError("rewrite must be text")
    text = peek["note"] if rewrite is None else rewrite
    embedding = embed_text(deps, text.strip() or None)  # outside the transaction: slow
    traced: list[dict[str, Any]] = []
    with deps.db.transaction() as conn:
        now = deps.clock()
        lock_run(conn, peek["run_id"])  # serialized with the run's in-flight writes
        row = get_candidate(conn, cid, for_update=True)
        assert row is not None
        if row["status"] != "candidate":
            return _already(row)
        outcome = _write_note(conn, deps, row, text, embedding, now)
        who = _actor(actor)
        event = (TraceEventName.PROMOTION_REWRITTEN if rewrite is not None
                 else TraceEventName.PROMOTION_APPROVED)
        if outcome.disposition in PROMOTED:
            decide_candidate(
                conn, cid, status="promoted", reason=outcome.disposition, actor=who, now=now,
                note_id=outcome.note_id)
            if outcome.persisted_increment:
                add_persisted(conn, row["run_id"], outcome.persisted_increment,
                              now)
            _trace(conn, event, row, now, traced, disposition=outcome.disposition,
                   note_id=outcome.note_id, reason=outcome.reason,
                   detail={"actor": who, "rewritten": rewrite is not None})
            decision = Decision(str(cid), "promoted", True, outcome.reason,
                                outcome.disposition,
                                str(outcome.note_id) if outcome.note_id else None)
        else:
            note_candidate_decision(conn, cid, outcome.disposition, now)
            _trace(conn, TraceEventName.PROMOTION_BLOCKED, row, now, traced,
                   disposition=outcome.disposition, reason=outcome.reason,
                   detail={"actor": who, "rewritten": rewrite is not None})
            decision = Decision(str(cid), "candidate", False, outcome.reason,
                                outcome.disposition)
    for fields in traced:
        log_trace(**fields)
    return decision


def _write_note(conn: Any, deps: WriteDeps, row: dict[str, Any], text: str, embedding: Any,
                now: Any) -> Outcome:
    scope = NoteScope.from_row(row)  # the clamped scope the write had; no hint re-applies
    run = RunContext(
        run_id=row["run_id"], agent_id=row["agent_id"], user_id=scope.user_id,
        company_id=scope.company_id, conversation_id=row["conversation_id"],
        conversation_detail_id=row["conversation_detail_id"],
        primary_scope_entity=scope.primary_scope_entity,
        primary_scope_record_id=scope.primary_scope_record_id,
        secondary_scopes=dict(scope.secondary_scopes), source=row["source"],
    )
    agent = load_agent_config(conn, row["agent_id"])
    attempt = WriteAttempt(
        conn=conn, run=run, request=WriteRequest(note=text, type=row["type"]), seq=row["seq"],
        agent=agent, write_policy=deps.write_policy, persisted_count=0, embedding=embedding,
        now=now,
        memory_policy=resolve_policy(deps.settings, agent.memory_policy),
    )
    return run_guards(attempt, PROMOTION_PIPELINE)


def reject_candidate(deps: WriteDeps, candidate_id: Any, *, reason: Any = None,
                     actor: Any = None) -> Decision:
    """Reject a candidate: it stays in the table for audit and is never injected."""
    cid = parse_candidate_id(candidate_id)
    traced: list[dict[str, Any]] = []
    with deps.db.transaction() as conn:
        now = deps.clock()
        row = get_candidate(conn, cid, for_update=True)
        if row is None:
            raise CandidateError(f"no candidate {cid}")
        if row["status"] != "candidate":
            return _already(row)
        who = _actor(actor)
        # An operator's reason; kept short. It is theirs to word (it never comes from a note).
        why = str(reason).strip()[:MAX_REASON] if reason else "rejected"
        decide_candidate(conn, cid, status="rejected", reason=why, actor=who,
                         now=now)
        _trace(conn, TraceEventName.PROMOTION_REJECTED, row, now, traced,
               disposition=Disposition.BLOCKED, reason=why, detail={"actor": who})
    for fields in traced:
        log_trace(**fields)
    return Decision(str(cid), "rejected", True, why)
