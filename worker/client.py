"""What an agent service calls: enqueue a turn's memory writes, read the memory context.

Sequence numbers come from one counter per run in Redis, reserved atomically by a small
script: n consecutive numbers after max(the counter, the Redis clock in microseconds).
Several processes writing for the same run interleave without collisions, and a counter
Redis lost (a restart without persistence, a failover, an AOF that lost its last second)
restarts above every number it ever gave out instead of at 1. Each write also carries
`prev_seq`, the number before it (0 when the counter was new or lost): the worker applies a
write once its predecessor is applied, so numbers need not be contiguous.

The same script records each write (`worker/delivery/records.py`) before anything is
published: a write is accepted once recorded, and a record whose write the broker lost is
published again by the redelivery pass. Services in other languages run the same script (see
the README's wire contract). Ordering and exactly-once are enforced by the worker, in
Postgres.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
from celery import chain
from celery.result import AsyncResult

from worker.app.poison import MAX_PAYLOAD_DEPTH, too_deep
from worker.delivery.records import DUE_KEY, RECORD_SCRIPT, SEQ_KEY_PREFIX, records_key
from worker.reads.context import MemoryContext, build_context
from worker.settings import Settings, get_settings
from worker.writes.payloads import Invalid, parse_request_scope

_redis_clients: dict[str, redis.Redis] = {}
_redis_lock = threading.Lock()


def _redis(url: str, timeout_s: float) -> redis.Redis:
    with _redis_lock:
        client = _redis_clients.get(url)
        if client is None:
            # Bounded: an unreachable or silent Redis fails the enqueue in seconds.
            client = _redis_clients[url] = redis.Redis.from_url(
                url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
        return client


# KEYS[1] the run's counter; ARGV[1] how many numbers; ARGV[2] the key's TTL in seconds.
# Returns {last, base}: the numbers are base+1 .. base+n, the write before them is `last`.
RESERVE_SCRIPT = """
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local base = math.max(last, now)
redis.call('SET', KEYS[1], string.format('%d', base + tonumber(ARGV[1])), 'EX', ARGV[2])
return {string.format('%d', last), string.format('%d', base)}
"""


@dataclass(frozen=True)
class Reservation:
    seqs: list[int]
    prev: int  # the seq before the first one in this run, 0 for none known


def reserve_sequence_numbers(run_id: str, count: int,
                             settings: Settings | None = None) -> Reservation:
    """Numbers only, nothing recorded (`RESERVE_SCRIPT`): what a client without write
    records gets. `record_writes` is what this module's own enqueues use."""
    settings = settings or get_settings()
    client = _redis(settings.require_redis_url(), settings.redis_connect_timeout_s)
    last, base = client.eval(RESERVE_SCRIPT, 1, SEQ_KEY_PREFIX + run_id, count,
                             settings.seq_counter_ttl_days * 86400)
    first = int(base) + 1
    return Reservation(list(range(first, first + count)), int(last))


@dataclass(frozen=True)
class RecordedTask:
    """One sequenced task to record: its name, id and the arguments before (seq, prev_seq)."""

    task: str
    task_id: str
    args: list[Any]


def record_writes(run_id: str, tasks: Sequence[RecordedTask],
                  settings: Settings | None = None) -> Reservation:
    """Reserve the run's next numbers and record each task under its number, in one atomic
    step (`RECORD_SCRIPT`): from here on the writes are accepted, whatever the broker does
    with their messages."""
    from kombu.utils.json import dumps

    settings = settings or get_settings()
    client = _redis(settings.require_redis_url(), settings.redis_connect_timeout_s)
    values: list[Any] = []
    for task in tasks:
        values += [task.task, task.task_id, dumps(task.args)]
    last, base = client.eval(
        RECORD_SCRIPT, 3, SEQ_KEY_PREFIX + run_id, records_key(run_id), DUE_KEY,
        len(tasks), settings.seq_counter_ttl_days * 86400,
        int(settings.write_record_ttl_days * 86400), run_id, *values)
    first = int(base) + 1
    return Reservation(list(range(first, first + len(tasks))), int(last))


@dataclass(frozen=True)
class EnqueuedWrites:
    run_id: str
    seqs: list[int]
    task_ids: list[str]

    def results(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Wait for every write of this call and return their result dicts, in order."""
        from worker.celery_app import app

        pending = [AsyncResult(task_id, app=app) for task_id in self.task_ids]
        try:
            return [result.get(timeout=timeout) for result in pending]
        except BaseException:
            # The backend keeps every awaited result until the interpreter exits, whose
            # clean-up then fails loudly ("Exception ignored in AsyncResult.__del__"): let go
            # of them now, while the connection still works.
            for result in pending:
                with contextlib.suppress(Exception):
                    app.backend.remove_pending_result(result)
            raise


def enqueue_memory_writes(run: dict[str, Any], writes: Sequence[dict[str, Any]],
                          *, settings: Settings | None = None) -> EnqueuedWrites:
    """Enqueue a turn's writes as one chain of `memory.write` tasks, in the order given.

    The writes are recorded before they are published: if the publish raises, they may
    still be applied from their records (enqueueing the same note again is then answered
    `skipped-duplicate`)."""
    from worker.app import task_names
    from worker.app.tasks import memory_write

    run_id = run.get("run_id") if isinstance(run, dict) else None
    if not isinstance(run_id, str) or not run_id.strip():
        raise ValueError("run['run_id'] must be a non-empty string")
    if not writes:
        return EnqueuedWrites(run_id, [], [])
    if too_deep(run) or any(too_deep(write) for write in writes):
        # The worker would refuse it (worker/app/poison.py); say so before reserving numbers.
        raise ValueError(f"a run or write is nested deeper than {MAX_PAYLOAD_DEPTH} levels")
    settings = settings or get_settings()
    task_ids = [str(uuid.uuid4()) for _ in writes]
    reserved = record_writes(run_id, [RecordedTask(task_names.WRITE, task_id, [run, write])
                                      for task_id, write in zip(task_ids, writes, strict=True)],
                             settings)
    seqs = reserved.seqs
    prevs = [reserved.prev, *seqs[:-1]]
    # Immutable signatures: a write never receives the previous write's result as an argument.
    signatures = [memory_write.si(run, write, seq, prev).set(task_id=task_id)
                  for write, seq, prev, task_id in zip(writes, seqs, prevs, task_ids,
                                                       strict=True)]
    if len(signatures) == 1:
        signatures[0].apply_async()
    else:
        chain(*signatures).apply_async()
    return EnqueuedWrites(run_id, seqs, task_ids)


def forget_fact(run: dict[str, Any], *, about: str | None = None,
                note_ids: Sequence[str] = (), requested_by: str = "user",
                settings: Settings | None = None, wait: bool = True,
                timeout: float = 30.0) -> dict[str, Any] | AsyncResult:
    """The run's user asked to forget something: revoke the matching notes of that user, in
    the run's order (after the writes this run enqueued before). `about` says what ("my home
    address"); `note_ids` name notes from the memory context (the surest way). Returns the
    result: `disposition` `forgotten` with `forgotten` (each note's id, type and text) or
    `nothing-to-forget`, and `reason`; or the AsyncResult with `wait=False`."""
    from worker.app import task_names
    from worker.app.tasks import memory_forget_fact

    run_id = run.get("run_id") if isinstance(run, dict) else None
    if not isinstance(run_id, str) or not run_id.strip():
        raise ValueError("run['run_id'] must be a non-empty string")
    request: dict[str, Any] = {"requested_by": requested_by}
    if about is not None:
        request["about"] = about
    if note_ids:
        request["note_ids"] = list(note_ids)
    task_id = str(uuid.uuid4())
    reserved = record_writes(run_id, [RecordedTask(task_names.FORGET_FACT, task_id,
                                                   [run, request])], settings)
    result = memory_forget_fact.apply_async(args=[run, request, reserved.seqs[0],
                                                  reserved.prev], task_id=task_id)
    if not wait:
        return result
    return dict(result.get(timeout=timeout))


def build_memory_context(agent_id: str, user_id: str | None = None,
                         company_id: str | None = None, scopes: dict[str, Any] | None = None,
                         input_text: str | None = None, *, shared_only: bool = False,
                         include_policy: bool = True, run_id: str | None = None
                         ) -> MemoryContext:
    """The memory block to inject at run start, read directly from Postgres (no broker hop).

    `scopes` carries the tenant scope: `primary_scope_entity`, `primary_scope_record_id` and
    `secondary_scopes` (a value may be a list: any of them). Raises `ScopeError` when the
    agent's scope configuration requires something the request lacks, and `ValueError` for a
    malformed request."""
    from worker.runtime import get_runtime

    payload = {"agent_id": agent_id, "user_id": user_id, "company_id": company_id,
               "shared_only": shared_only, **(scopes or {})}
    request = parse_request_scope(payload)
    if isinstance(request, Invalid):
        raise ValueError(request.reason)
    return build_context(get_runtime().context_deps(), request, input_text,
                         include_policy=include_policy, run_id=run_id)


def forget_subject(kind: str, subject_id: str, *, requested_by: str,
                   agent_id: str | None = None, company_id: str | None = None,
                   dry_run: bool = False, timeout: float | None = 600.0,
                   wait: bool = True) -> dict[str, Any] | AsyncResult:
    """Erase everything held about a subject (`memory.forget`, on the manager queue): a user
    (optionally narrowed to `agent_id` and/or `company_id`), a company, an agent or a
    conversation. Returns the report (counts per table, the audit record's id), or the
    AsyncResult with `wait=False`. `dry_run`: count only, change nothing. A malformed
    subject, `requested_by` or `dry_run` is answered `ok: false` with an `error`, and
    nothing is written (the worker checks: one rule for every language)."""
    from worker.app import task_names
    from worker.celery_app import app

    subject: dict[str, Any] = {"kind": kind, "subject_id": subject_id}
    if agent_id is not None:
        subject["within_agent"] = agent_id
    if company_id is not None:
        subject["within_company"] = company_id
    result = app.send_task(task_names.FORGET, args=[subject, requested_by, dry_run])
    if not wait:
        return result
    return dict(result.get(timeout=timeout))


def export_subject(kind: str, subject_id: str, *, requested_by: str,
                   agent_id: str | None = None, company_id: str | None = None,
                   timeout: float | None = 600.0, wait: bool = True
                   ) -> dict[str, Any] | AsyncResult:
    """Export everything held about a subject (`memory.export`, on the manager queue) — a
    user (optionally narrowed to `agent_id` and/or `company_id`), a company, an agent or a
    conversation — as a JSON Lines file under `export_dir` on the manager worker's host.
    Returns `path`, `counts` per table and `audit_id` (never the text), or the AsyncResult
    with `wait=False`; `ok: false` with an `error` for a malformed subject or
    `requested_by`, and nothing written."""
    from worker.app import task_names
    from worker.celery_app import app

    subject: dict[str, Any] = {"kind": kind, "subject_id": subject_id}
    if agent_id is not None:
        subject["within_agent"] = agent_id
    if company_id is not None:
        subject["within_company"] = company_id
    result = app.send_task(task_names.EXPORT, args=[subject, requested_by])
    if not wait:
        return result
    return dict(result.get(timeout=timeout))
