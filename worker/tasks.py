"""Celery tasks: message in, plain-module call, JSON out. No domain logic here."""

from __future__ import annotations

import logging
import random
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from db.enums import Disposition
from db.scope import ScopeError
from worker.agents import AgentConfigError, configure_agent
from worker.celery_app import MemoryTask, app
from worker.context import build_context
from worker.conversations import record_conversation
from worker.manager.cycle import run_manager_cycle
from worker.payloads import Invalid, parse_request_scope
from worker.runtime import get_runtime
from worker.write_path import (
    WaitForSequence,
    WriteResult,
    apply_memory_write,
    prefetch_embeddings,
)

log = logging.getLogger(__name__)


def _chained_writes(chain: Any, limit: int) -> list[Any]:
    """The write payloads of the memory.write tasks still to come in this chain."""
    upcoming: list[Any] = []
    for signature in reversed(chain or []):  # Celery keeps the next step last
        if len(upcoming) >= limit:
            break
        if isinstance(signature, dict) and signature.get("task") == "memory.write":
            args = list(signature.get("args") or ())
            if len(args) >= 2:
                upcoming.append(args[1])
    return upcoming


def _sequence_wait_countdown(retries: int) -> float:
    settings = get_runtime().settings
    base = min(settings.seq_wait_initial_s * (2 ** min(retries, 16)), settings.seq_wait_max_s)
    return base * (0.75 + random.random() / 2)  # jitter: waiting writes do not move in step


# max_retries=None: the only retries are sequence waits, bounded by the gap timeout.
@app.task(name="memory.write", bind=True, acks_late=True, reject_on_worker_lost=True,
          max_retries=None)
def memory_write(self: MemoryTask, run: Any = None, write: Any = None, seq: Any = None,
                 *extra: Any, **unexpected: Any) -> dict[str, Any]:
    """Apply one in-flight memory write. Never raises for bad input: every payload gets a
    disposition, so the rest of its chain still runs."""
    # Extra arguments mean a sender we do not understand: refuse the write (in the run's
    # order, when run and seq are usable) rather than guess what it meant.
    malformed = "memory.write takes exactly (run, write, seq)" if extra or unexpected else None
    deps = get_runtime().write_deps()
    if self.request.parent_id is None and self.request.chain:
        # The head of a chain embeds the whole chain in one batch for the writes after it.
        prefetch_embeddings(deps, [write, *_chained_writes(
            self.request.chain, deps.settings.embedding_prefetch_limit)])
    try:
        outcome = apply_memory_write(deps, run, write, seq, task_id=self.request.id,
                                     malformed=malformed)
    except SoftTimeLimitExceeded:
        log.error("memory.write hit its soft time limit")
        outcome = WriteResult(
            Disposition.ERROR,
            "Not saved: the write timed out; nothing was counted and it can be retried.",
            run.get("run_id") if isinstance(run, dict) else None,
            seq if isinstance(seq, int) else None,
        )
    if isinstance(outcome, WaitForSequence):
        raise self.retry(countdown=_sequence_wait_countdown(self.request.retries))
    return outcome.as_dict()


@app.task(name="memory.agent.configure", acks_late=True)
def memory_agent_configure(agent_id: Any, config: Any) -> dict[str, Any]:
    """Set (part of) an agent's memory configuration; returns the full configuration."""
    if not isinstance(agent_id, str) or not 0 < len(agent_id.strip()) <= 200:
        return {"ok": False, "error": "agent_id must be a non-empty string of at most 200 chars"}
    try:
        with get_runtime().db.transaction() as conn:
            result = configure_agent(conn, agent_id.strip(), config)
    except AgentConfigError as exc:
        return {"ok": False, "agent_id": agent_id, "error": str(exc)}
    return {"ok": True, "agent_id": result.agent_id, "config": result.as_dict()}


# The result is the memory itself: keep it out of worker logs and task events (Flower).
@app.task(name="memory.context", resultrepr_maxsize=1)
def memory_context(request: Any = None) -> dict[str, Any]:
    """Build the memory context for a run: `{"ok": true, "rendered": ..., "notes": [...]}`."""
    parsed = parse_request_scope(request)
    if isinstance(parsed, Invalid):
        return {"ok": False, "error": parsed.reason}
    input_text = request.get("input_text") if isinstance(request, dict) else None
    if input_text is not None and not isinstance(input_text, str):
        return {"ok": False, "error": "request.input_text must be a string"}
    include_policy = request.get("include_policy", True)
    run_id = request.get("run_id")
    try:
        context = build_context(get_runtime().context_deps(), parsed, input_text,
                                include_policy=include_policy is not False,
                                run_id=run_id if isinstance(run_id, str) else None)
    except ScopeError as exc:
        return {"ok": False, "error": str(exc)}
    return {"ok": True, **context.as_dict()}


@app.task(name="memory.conversation.record", acks_late=True)
def memory_conversation_record(payload: Any = None) -> dict[str, Any]:
    """Store a conversation's messages and ratings; a disposition per message."""
    runtime = get_runtime()
    return record_conversation(runtime.db, payload, runtime.clock())


# Acknowledged on receipt, not after: a cycle that dies is not redelivered (the next beat
# tick starts a fresh one, and single-flight keeps two from overlapping).
@app.task(name="memory.manager.cycle", acks_late=False)
def memory_manager_cycle(force: Any = False, maintenance: Any = False) -> dict[str, Any]:
    """One Memory Manager cycle. `force`: an operator asked for it (recorded);
    `maintenance`: run the maintenance phases whatever their trigger says."""
    runtime = get_runtime()
    report = run_manager_cycle(
        runtime.db, runtime.settings, runtime._embedder_or_none(), now=runtime.clock(),
        force=force is True, force_maintenance=maintenance is True,
        task_id=memory_manager_cycle.request.id)
    return report.as_dict()


# --- memory candidates (SPEC 5; worker/candidates.py) ------------------------------------------
# On the write queue: a promotion is a write of the candidate's run and takes its lock.

def _candidate_task(action: Any) -> dict[str, Any]:
    from worker.candidates import CandidateError

    try:
        return dict(action().as_dict())
    except CandidateError as exc:
        return {"ok": False, "error": str(exc)}


@app.task(name="memory.candidate.promote", acks_late=True)
def memory_candidate_promote(candidate_id: Any = None, rewrite: Any = None,
                             actor: Any = None) -> dict[str, Any]:
    """Promote a held candidate into a (provisional) note, optionally rewritten first."""
    from worker.candidates import promote_candidate

    deps = get_runtime().write_deps()
    return _candidate_task(lambda: promote_candidate(deps, candidate_id, rewrite=rewrite,
                                                     actor=actor))


@app.task(name="memory.candidate.reject", acks_late=True)
def memory_candidate_reject(candidate_id: Any = None, reason: Any = None,
                            actor: Any = None) -> dict[str, Any]:
    """Reject a held candidate; it is never injected."""
    from worker.candidates import reject_candidate

    deps = get_runtime().write_deps()
    return _candidate_task(lambda: reject_candidate(deps, candidate_id, reason=reason,
                                                    actor=actor))


# The result carries candidate text: keep it out of worker logs and task events (Flower).
@app.task(name="memory.candidate.list", resultrepr_maxsize=1)
def memory_candidate_list(agent_id: Any = None, run_id: Any = None, status: Any = "candidate",
                          limit: Any = 100) -> dict[str, Any]:
    """Candidates of an agent and/or run, oldest first, with their text."""
    from worker.candidates import list_candidates

    if not all(v is None or isinstance(v, str) for v in (agent_id, run_id, status)):
        return {"ok": False, "error": "agent_id, run_id and status must be strings"}
    if isinstance(limit, bool) or not isinstance(limit, int):
        return {"ok": False, "error": "limit must be an integer"}
    found = list_candidates(get_runtime().write_deps(), agent_id=agent_id, run_id=run_id,
                            status=status, limit=limit)
    return {"ok": True, "candidates": found}
