"""Celery tasks: message in, plain-module call, JSON out. No domain logic here.

The tasks of an agent's run and of the Memory Manager; an operator's (forgetting a subject,
exporting it, reviewing memory candidates) are in worker/app/operator_tasks.py."""

from __future__ import annotations

import logging
import random
import time
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from db.enums import Disposition
from db.scope import ScopeError
from worker.agents import AgentConfigError, configure_agent
from worker.app import task_names
from worker.app.arguments import surplus_arguments
from worker.app.carried_events import CarriedEvents
from worker.app.chain_visit import Visit, after_write, carry_writes, settle_record, timed_out
from worker.app.continuations import flush_continuations, publish_continuation, take_over_chain
from worker.app.erased_results import started_at
from worker.app.poison import take_refusal
from worker.celery_app import MemoryTask, app
from worker.delivery.records import write_records
from worker.delivery.redelivery import redeliver_recorded_writes
from worker.manager.conversations import record_conversation
from worker.manager.cycle import run_manager_cycle
from worker.reads.context import build_context
from worker.runtime import get_runtime
from worker.writes.apply import (
    WaitForSequence,
    WriteDeps,
    WriteResult,
    apply_memory_write,
    prefetch_embeddings,
)
from worker.writes.payloads import Invalid, parse_id_value, parse_request_scope

log = logging.getLogger(__name__)


def _chained_writes(chain: Any, limit: int) -> list[Any]:
    """The write payloads of the memory.write tasks still to come in this chain."""
    upcoming: list[Any] = []
    for signature in reversed(chain or []):  # Celery keeps the next step last
        if len(upcoming) >= limit:
            break
        if isinstance(signature, dict) and signature.get("task") == task_names.WRITE:
            args = list(signature.get("args") or ())
            if len(args) >= 2:
                upcoming.append(args[1])
    return upcoming


def _sequence_wait_countdown(retries: int) -> float:
    settings = get_runtime().settings
    base = min(settings.seq_wait_initial_s * (2 ** min(retries, 16)), settings.seq_wait_max_s)
    countdown = base * (0.75 + random.random() / 2)  # jitter: waiting writes do not move in step
    if settings.broker_kind == "rabbitmq":
        # Native delayed delivery counts whole seconds, and refuses less than one.
        return float(max(1, round(countdown)))
    return countdown


# max_retries=None: the only retries are sequence waits, bounded by the gap timeout.
@app.task(name=task_names.WRITE, bind=True, acks_late=True, reject_on_worker_lost=True,
          max_retries=None)
def memory_write(self: MemoryTask, run: Any = None, write: Any = None, seq: Any = None,
                 prev_seq: Any = None, *extra: Any, **unexpected: Any) -> dict[str, Any]:
    """Apply one in-flight memory write. Never raises for bad input: every payload gets a
    disposition, so the rest of its chain still runs. `prev_seq`: the seq of the write before
    it in its run (0: none; absent: seq - 1)."""
    started = time.monotonic()
    malformed = take_refusal(unexpected, task_id=self.request.id, task_name=task_names.WRITE)
    refused = malformed is not None
    # Extra arguments mean a sender we do not understand: refuse the write (in the run's
    # order, when run and seq are usable) rather than guess what it meant.
    if malformed is None and (extra or unexpected):
        malformed = "memory.write takes (run, write, seq, prev_seq)"
    deps = get_runtime().write_deps()
    if self.request.parent_id is None and self.request.chain:
        # The head of a chain embeds the whole chain in one batch for the writes after it.
        prefetch_embeddings(deps, [write, *_chained_writes(
            self.request.chain, deps.settings.embedding_prefetch_limit)])
    cut = False
    try:
        outcome = apply_memory_write(deps, run, write, seq, task_id=self.request.id,
                                     malformed=malformed, prev_payload=prev_seq)
    except SoftTimeLimitExceeded:
        outcome, cut = timed_out(run, seq), True
    if isinstance(outcome, WaitForSequence):
        raise self.retry(countdown=_sequence_wait_countdown(self.request.retries))
    after_write(deps, run, seq, outcome)
    result = outcome.as_dict()
    continuation = take_over_chain(self.request)
    parent_id = self.request.id
    # The writes the chain carries are applied here (worker/app/chain_visit.py); not after a
    # refused message (a crash loop must not take its chain along) or a timed-out write.
    if continuation and not refused and not cut:
        continuation, parent_id = _visit(self, deps, continuation, started)
    if continuation:
        publish_continuation(continuation, parent_id=parent_id,
                             root_id=self.request.root_id, db=deps.db)
    return result


def _results_reachable() -> bool:
    """The result store answers (one PING): a chain visit carries writes only then."""
    try:
        return bool(app.backend.client.ping())
    except Exception:
        return False


def _visit(task: MemoryTask, deps: WriteDeps, chain: list[dict[str, Any]],
           started: float) -> tuple[list[dict[str, Any]] | None, str]:
    request = task.request
    events = CarriedEvents(app, carried_by=request.id, root_id=request.root_id,
                           hostname=request.hostname,
                           resultrepr_maxsize=task.resultrepr_maxsize)
    try:
        end = carry_writes(deps, chain, Visit(
            head_task_id=request.id, backend=task.backend, reachable=_results_reachable,
            started=started, erasure_started_us=started_at(request.id), events=events))
    finally:
        events.close()
    return end.rest, end.last_task_id


# Like a write: ordered in its run, retried only to wait for its turn, redelivered if its
# worker dies (the write log makes a second delivery a replay).
@app.task(name=task_names.FORGET_FACT, bind=True, acks_late=True, reject_on_worker_lost=True,
          max_retries=None, resultrepr_maxsize=1)
def memory_forget_fact(self: MemoryTask, run: Any = None, request: Any = None, seq: Any = None,
                       prev_seq: Any = None, *extra: Any, **unexpected: Any) -> dict[str, Any]:
    """A run's user asked the agent to forget something: revoke the matching notes of that
    user (`request`: `{"about"?, "note_ids"?, "requested_by"?}`), in the run's order. The
    result names what was forgotten (`forgotten`), or says nothing matched."""
    from worker.erasure.fact import forget_fact

    malformed = take_refusal(unexpected, task_id=self.request.id,
                             task_name=task_names.FORGET_FACT)
    if malformed is None and (extra or unexpected):
        malformed = "memory.forget.fact takes (run, request, seq, prev_seq)"
    deps = get_runtime().write_deps()
    try:
        outcome = forget_fact(deps, run, request, seq, prev_payload=prev_seq,
                              task_id=self.request.id, malformed=malformed)
    except SoftTimeLimitExceeded:
        log.error("memory.forget.fact hit its soft time limit")
        outcome = WriteResult(
            Disposition.ERROR,
            "Not forgotten: the request timed out; nothing changed and it can be retried.",
            run.get("run_id") if isinstance(run, dict) else None,
            seq if isinstance(seq, int) else None,
        )
    if isinstance(outcome, WaitForSequence):
        raise self.retry(countdown=_sequence_wait_countdown(self.request.retries))
    settle_record(deps, run, seq, outcome)
    return outcome.as_dict()


@app.task(name=task_names.CONTINUATIONS_FLUSH, acks_late=False)
def memory_continuations_flush(*extra: Any, **unexpected: Any) -> dict[str, Any]:
    """Publish again the chain continuations a broker outage left in Postgres, and the
    recorded writes the broker lost (beat, every flush period)."""
    surplus = surplus_arguments(task_names.CONTINUATIONS_FLUSH, "no arguments", extra,
                                 unexpected)
    if surplus:
        return surplus
    runtime = get_runtime()
    answer: dict[str, Any] = {"ok": True, **flush_continuations(runtime.db)}
    records = write_records(runtime.settings.redis_url)
    if runtime.settings.broker_kind == "rabbitmq":
        from worker.app.rabbitmq import drain_dead_letters

        answer["dead_lettered_by_broker"] = drain_dead_letters(app, runtime.db, records)
    if records is not None:
        settings = runtime.settings
        answer["records"] = redeliver_recorded_writes(
            runtime.db, records, redelivery_after_s=settings.redelivery_after_s,
            redelivery_limit=settings.redelivery_limit).as_dict()
    return answer


@app.task(name=task_names.AGENT_CONFIGURE, acks_late=True)
def memory_agent_configure(agent_id: Any = None, config: Any = None, *extra: Any,
                           **unexpected: Any) -> dict[str, Any]:
    """Set (part of) an agent's memory configuration; returns the full configuration."""
    surplus = surplus_arguments(task_names.AGENT_CONFIGURE, "(agent_id, config)", extra,
                                 unexpected)
    if surplus:
        return surplus
    parsed = parse_id_value(agent_id, "agent_id", required=True)
    if isinstance(parsed, Invalid) or parsed is None:
        return {"ok": False, "error": getattr(parsed, "reason", "agent_id is required")}
    try:
        with get_runtime().db.transaction() as conn:
            result = configure_agent(conn, parsed, config)
    except AgentConfigError as exc:
        return {"ok": False, "agent_id": parsed, "error": str(exc)}
    return {"ok": True, "agent_id": result.agent_id, "config": result.as_dict()}


# The result is the memory itself: keep it out of worker logs and task events (Flower).
@app.task(name=task_names.CONTEXT, resultrepr_maxsize=1)
def memory_context(request: Any = None, *extra: Any, **unexpected: Any) -> dict[str, Any]:
    """Build the memory context for a run: `{"ok": true, "rendered": ..., "notes": [...]}`."""
    surplus = surplus_arguments(task_names.CONTEXT, "exactly (request)", extra, unexpected)
    if surplus:
        return surplus
    parsed = parse_request_scope(request)
    if isinstance(parsed, Invalid):
        return {"ok": False, "error": parsed.reason}
    input_text = request.get("input_text") if isinstance(request, dict) else None
    if input_text is not None and not isinstance(input_text, str):
        return {"ok": False, "error": "request.input_text must be a string"}
    include_policy = request.get("include_policy", True)
    run_id = parse_id_value(request.get("run_id"), "request.run_id", required=False)
    if isinstance(run_id, Invalid):
        return {"ok": False, "error": run_id.reason}
    try:
        context = build_context(get_runtime().context_deps(), parsed, input_text,
                                include_policy=include_policy is not False, run_id=run_id)
    except ScopeError as exc:
        return {"ok": False, "error": str(exc)}
    return {"ok": True, **context.as_dict()}


@app.task(name=task_names.CONVERSATION_RECORD, acks_late=True)
def memory_conversation_record(payload: Any = None, *extra: Any,
                               **unexpected: Any) -> dict[str, Any]:
    """Store a conversation's messages and ratings; a disposition per message."""
    surplus = surplus_arguments(task_names.CONVERSATION_RECORD, "exactly (payload)", extra,
                                 unexpected)
    if surplus:
        return surplus
    runtime = get_runtime()
    return record_conversation(runtime.db, payload, runtime.clock())


# Acknowledged on receipt, not after: a cycle that dies is not redelivered (the next beat
# tick starts a fresh one, and single-flight keeps two from overlapping).
@app.task(name=task_names.MANAGER_CYCLE, acks_late=False)
def memory_manager_cycle(force: Any = False, maintenance: Any = False, *extra: Any,
                         **unexpected: Any) -> dict[str, Any]:
    """One Memory Manager cycle. `force`: an operator asked for it (recorded);
    `maintenance`: run the maintenance phases whatever their trigger says."""
    surplus = surplus_arguments(task_names.MANAGER_CYCLE, "(force, maintenance)", extra,
                                 unexpected)
    if surplus:
        return surplus
    runtime = get_runtime()
    report = run_manager_cycle(
        runtime.db, runtime.settings, runtime.embedder_or_none(), now=runtime.clock(),
        force=force is True, force_maintenance=maintenance is True,
        task_id=memory_manager_cycle.request.id)
    return report.as_dict()
