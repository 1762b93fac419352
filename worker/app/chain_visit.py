"""A chain in one visit: the task that applies a run's write goes on to apply the writes its
chain carries, instead of publishing the next one behind every other chain's next write.

Each carried write is applied exactly as if it had come as its own message: its own
transaction, exactly-once per (run, seq) by the write log, under its own task id (the one its
client waits on). After each one, what the task path does after a write is done here too: a
refused-erased run's counter goes, the result is stored under the write's task id and
checked against erasures that overlapped the visit (worker/app/erased_results.py, with the
visit's start as the task's start: the safe side), its metrics and log line are recorded
(worker/app/telemetry.py) and its task events made (`CarriedEvents`: what Flower shows, with
`carried_by`). Two things wait for the visit's end, to cost one round trip a visit rather
than one a write: the events' sending, and the clearing of the clients' write records
(`settle_record`).

A visit stops, and its task publishes the rest of the chain as today
(worker/app/continuations.py), after `chain_visit_max_writes` writes (the first included) or
once `chain_visit_budget_s` have passed since the task started — so one long chain cannot
hold a process while other chains wait — and at a step it should not apply here: one that
is not a `memory.write` as clients send it (a refused or otherwise unusual message gets its
own delivery and its own disposition), one whose turn has not come (`WaitForSequence`: its
own message waits), or after a write that hit the soft time limit.

A worker killed mid-visit leaves the head message unacknowledged (acks late): its redelivery
replays the head and the carried writes from the write log and carries on from the first
write not applied. Plain Python: callable without a broker (the tests and the task do).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from celery.exceptions import SoftTimeLimitExceeded

from db.enums import Disposition
from worker.app import task_names
from worker.app.erased_results import drop_if_erased
from worker.app.telemetry import observe_task
from worker.erasure.redis_keys import forget_run_counter
from worker.writes.apply import WaitForSequence, WriteDeps, WriteResult, apply_memory_write

log = logging.getLogger(__name__)

# The options a client's chain step may carry (worker/client.py, the redelivery pass, the
# README's wire contract): anything else (a countdown, an expiry, a route, a group or chord)
# asks for something a visit would not honour, so the step goes as its own message.
CARRIED_OPTIONS = frozenset({"task_id", "reply_to"})


@dataclass(frozen=True)
class ChainedWrite:
    """A chain step a visit may apply: `memory.write(run, write, seq, prev_seq)`."""

    task_id: str
    run: Any
    write: Any
    seq: Any
    prev_seq: Any

    @property
    def args(self) -> list[Any]:
        return [self.run, self.write, self.seq, self.prev_seq]


def chained_write(step: Any) -> ChainedWrite | None:
    """The write a chain step carries, if it is one as clients send it; else None."""
    if not isinstance(step, dict) or step.get("task") != task_names.WRITE:
        return None
    args, kwargs, options = step.get("args"), step.get("kwargs"), step.get("options")
    if not isinstance(args, list | tuple) or len(args) != 4 or kwargs not in (None, {}):
        return None  # a refused message carries its refusal as a keyword
    if not isinstance(options, dict) or not set(options) <= CARRIED_OPTIONS:
        return None
    if step.get("subtask_type") is not None:
        return None
    task_id = options.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        return None
    return ChainedWrite(task_id, *args)


def record_to_clear(run: Any, seq: Any, outcome: WriteResult) -> tuple[str, int] | None:
    """The (run, seq) whose client's write record goes: committed, or refused for good. None
    for an `error` (kept: the redelivery pass delivers the write again) and for ids no client
    could have recorded."""
    if outcome.disposition == Disposition.ERROR:
        return None
    run_id = run.get("run_id") if isinstance(run, dict) else None
    if isinstance(run_id, int) and not isinstance(run_id, bool):
        run_id = str(run_id)  # an integer id means its decimal string
    if isinstance(run_id, str) and isinstance(seq, int) and not isinstance(seq, bool):
        return run_id, seq
    return None


def settle_record(deps: WriteDeps, run: Any, seq: Any, outcome: WriteResult) -> None:
    """The write's record goes once it is committed or refused for good."""
    settled = record_to_clear(run, seq, outcome)
    if deps.records is not None and settled is not None:
        deps.records.clear(*settled)


def forget_erased_run(deps: WriteDeps, run: Any, outcome: WriteResult) -> None:
    if outcome.disposition == Disposition.REJECTED_ERASED and isinstance(run, dict):
        # A run with no row when its subject was erased still has its counter, whose key
        # names the run; the erasure could not find it, its first refused write can.
        forget_run_counter(deps.settings.redis_url, run.get("run_id"))


def after_write(deps: WriteDeps, run: Any, seq: Any, outcome: WriteResult) -> None:
    """What follows every applied `memory.write` its own message brought."""
    settle_record(deps, run, seq, outcome)
    forget_erased_run(deps, run, outcome)


def timed_out(run: Any, seq: Any) -> WriteResult:
    """The answer of a write cut by the soft time limit (not recorded: it can be retried)."""
    log.error("memory.write hit its soft time limit")
    return WriteResult(
        Disposition.ERROR,
        "Not saved: the write timed out; nothing was counted and it can be retried.",
        run.get("run_id") if isinstance(run, dict) else None,
        seq if isinstance(seq, int) else None,
    )


class ResultBackend(Protocol):
    """What a visit needs of Celery's result backend."""

    def store_result(self, task_id: str, result: Any, state: str) -> Any: ...

    def forget(self, task_id: str) -> None: ...


class Events(Protocol):
    def carried(self, write: ChainedWrite, *, parent_id: str, result: dict[str, Any],
                runtime_s: float) -> None: ...


@dataclass
class Visit:
    """One task's visit to its chain: who it is, when it began, where results go."""

    # The head's own result is stored by Celery when the task returns, never earlier: a
    # worker lost mid-visit must find no result for the head, or Celery takes the task as
    # "succeeded before the worker was lost" and acknowledges it, where it must deliver it
    # again for the writes still to carry.
    head_task_id: str
    backend: ResultBackend
    started: float  # `clock()` when the task began
    erasure_started_us: int | None = None  # the Redis clock then (erased_results)
    events: Events | None = None
    clock: Callable[[], float] = time.monotonic
    # Whether the result store answers, asked before the first carried write: while it is
    # away a carried write's result could not be stored (its client would wait for the
    # redelivery pass), so the rest goes as a continuation, kept in Postgres until the broker
    # is back. After that, each stored result says it answers (no round trip of its own); a
    # result that cannot be stored sends its write out again with the rest.
    reachable: Callable[[], bool] = lambda: True


@dataclass(frozen=True)
class VisitEnd:
    rest: list[dict[str, Any]] | None  # the chain still to publish, next step last
    last_task_id: str  # the last write applied: the continuation's parent
    carried: int


def carry_writes(deps: WriteDeps, steps: list[dict[str, Any]] | None,
                 visit: Visit) -> VisitEnd:
    """Apply the writes `steps` (a chain, next step last) carries after the head, within the
    bounds; return what is left to publish."""
    rest = list(steps or [])
    settled: list[tuple[str, int]] = []
    try:
        return _carry(deps, rest, visit, settled)
    finally:
        # The carried writes' records go together, after their results are stored (one round
        # trip a visit); a record a dead visit leaves is the redelivery pass's, which finds
        # its write applied in the write log.
        if deps.records is not None:
            try:
                deps.records.clear_all(settled)
            except SoftTimeLimitExceeded:  # as for a record: left to the redelivery pass
                log.error("the soft time limit cut a chain visit's record clearing")


def _carry(deps: WriteDeps, rest: list[dict[str, Any]], visit: Visit,
           settled: list[tuple[str, int]]) -> VisitEnd:
    limit, budget = deps.settings.chain_visit_max_writes, deps.settings.chain_visit_budget_s
    applied, last = 1, visit.head_task_id
    while rest and applied < limit and visit.clock() - visit.started < budget:
        write = chained_write(rest[-1])
        if write is None:
            break  # not ours to apply here: it goes as its own message
        if applied == 1 and not visit.reachable():
            break
        began = time.perf_counter()
        cut = False
        try:
            outcome = apply_memory_write(deps, write.run, write.write, write.seq,
                                         task_id=write.task_id, prev_payload=write.prev_seq)
        except SoftTimeLimitExceeded:
            outcome, cut = timed_out(write.run, write.seq), True
        except Exception:  # a bug: its own message will meet it, as without a visit
            log.exception("carried memory.write %s failed; publishing it", write.task_id)
            break
        if isinstance(outcome, WaitForSequence):
            break  # its own message waits for its turn
        write_step = rest.pop()
        applied += 1
        parent, last = last, write.task_id
        try:
            _finish(deps, visit, write, outcome, parent, time.perf_counter() - began)
            if (record := record_to_clear(write.run, write.seq, outcome)) is not None:
                settled.append(record)
        except SoftTimeLimitExceeded:
            log.error("the soft time limit cut a chain visit after %s", write.task_id)
            break
        except Exception:  # applied and logged: it goes out again with the rest, and its
            # delivery replays it from the write log and stores its result then
            log.exception("could not store the result of carried write %s", write.task_id)
            rest.append(write_step)
            applied, last = applied - 1, parent
            break
        if cut:
            break
    return VisitEnd(rest or None, last, applied - 1)


def _finish(deps: WriteDeps, visit: Visit, write: ChainedWrite, outcome: WriteResult,
            parent_id: str, runtime_s: float) -> None:
    """After a carried write: what the task path does after a write (but its record's
    clearing, which waits for the visit's end), and after a task."""
    forget_erased_run(deps, write.run, outcome)
    result = outcome.as_dict()
    visit.backend.store_result(write.task_id, result, "SUCCESS")
    drop_if_erased(visit.backend, task_names.WRITE, write.task_id, visit.erasure_started_us,
                   write.args, result)
    observe_task(task_names.WRITE, write.task_id, result, runtime_s)
    if visit.events is not None:
        visit.events.carried(write, parent_id=parent_id, result=result, runtime_s=runtime_s)
