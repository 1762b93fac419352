"""A chain in one visit (worker/app/chain_visit.py): the task that applies a chain's write
applies the writes its chain carries, each under its own task id, within its bounds.

A real Celery worker (threads, in this process) on the real broker, real Postgres and Redis.
What shows a visit: the messages the worker consumed (`celery.worker.state.total_count`,
counted as each message is accepted) and the events of each carried write, which name the
task that carried it (`carried_by`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.erasure_helpers import redis_hits
from tests.helpers import DISTINCT_FACTS, TaskEvents, rows, run_context, wait_until
from worker.app import task_names

pytestmark = pytest.mark.usefixtures("celery_worker")


@pytest.fixture
def visit_settings(settings, embedder) -> Iterator[Callable[..., Any]]:
    """Runs the worker (and the plain calls) with changed settings for one test."""
    from worker.runtime import Runtime, get_runtime, set_runtime

    def change(**changes: Any) -> Any:
        runtime = Runtime(settings=settings.model_copy(update={"per_run_cap": 100, **changes}),
                          embedder_override=embedder)
        set_runtime(runtime)
        return runtime

    change()
    yield change
    set_runtime(Runtime(settings=settings, embedder_override=embedder))
    assert get_runtime().settings is settings


def _consumed() -> int:
    """memory.write messages this process's worker has accepted so far."""
    from celery.worker import state

    return int(state.total_count.get(task_names.WRITE, 0))


class Chain:
    """A run's writes, numbered and recorded as the client does, published when asked."""

    def __init__(self, run: dict[str, Any], notes: list[str]) -> None:
        from worker.client import RecordedTask, record_writes

        self.run = run
        self.writes = [{"note": note, "type": "Context"} for note in notes]
        self.task_ids = [str(uuid.uuid4()) for _ in notes]
        reserved = record_writes(run["run_id"], [
            RecordedTask(task_names.WRITE, task_id, [run, write])
            for task_id, write in zip(self.task_ids, self.writes, strict=True)])
        self.seqs = reserved.seqs
        self.prevs = [reserved.prev, *self.seqs[:-1]]

    def signatures(self) -> list[Any]:
        from worker.app.tasks import memory_write

        return [memory_write.si(self.run, write, seq, prev).set(task_id=task_id)
                for write, seq, prev, task_id in zip(self.writes, self.seqs, self.prevs,
                                                     self.task_ids, strict=True)]

    def publish(self, signatures: list[Any] | None = None) -> None:
        from celery import chain

        chain(*(signatures or self.signatures())).apply_async()

    def results(self, timeout: float = 60.0) -> list[dict[str, Any]]:
        from celery.result import AsyncResult

        from worker.celery_app import app

        return [AsyncResult(task_id, app=app).get(timeout=timeout)
                for task_id in self.task_ids]

    def steps(self, start: int) -> list[dict[str, Any]]:
        """The chain after the write at `start`, as its task's request carries it."""
        return [dict(s) for s in reversed(self.signatures()[start + 1:])]


def _carriers(events: list[dict[str, Any]]) -> dict[str, str]:
    return {e["uuid"]: e["carried_by"] for e in events
            if e.get("type") == "task-received" and e.get("carried_by")}


def _log(database_url: str, run_id: str) -> list[dict[str, Any]]:
    return rows(database_url, "SELECT seq, task_id, disposition FROM write_log "
                "WHERE run_id = %s ORDER BY seq", run_id)


def _applied_order(database_url: str, run_id: str) -> list[int]:
    return [r["seq"] for r in rows(database_url, "SELECT seq FROM trace_events "
                                   "WHERE run_id = %s ORDER BY id", run_id)]


def _records(redis_url: str, run_id: str) -> int:
    """The run's write records still waiting (none, once each write is applied)."""
    import redis

    from worker.delivery.records import records_key

    return int(redis.Redis.from_url(redis_url).hlen(records_key(run_id)))


def _raw_result(task_id: str) -> dict[str, Any] | None:
    """The stored result as it is now in Redis (AsyncResult keeps what it read first)."""
    import json

    from worker.celery_app import app

    raw = app.backend.client.get(app.backend.get_key_for_task(task_id))
    return None if raw is None else json.loads(raw)["result"]


def _status(task_id: str) -> str | None:
    import json

    from worker.celery_app import app

    raw = app.backend.client.get(app.backend.get_key_for_task(task_id))
    return None if raw is None else str(json.loads(raw)["status"])


def _stored(task_id: str) -> bool:
    from worker.celery_app import app

    return app.backend.client.exists(app.backend.get_key_for_task(task_id)) == 1


def test_a_chain_is_applied_in_one_visit(services, visit_settings):
    from worker.celery_app import app

    chain = Chain(run_context("visit-1"), DISTINCT_FACTS[:8])
    before = _consumed()
    with TaskEvents(app) as captured:
        chain.publish()
        results = chain.results()
        captured.wait_for("task-succeeded", count=8)
    assert [r["disposition"] for r in results] == ["written"] * 8
    assert [r["seq"] for r in results] == chain.seqs
    assert _consumed() - before == 1, "one message: the head carried the other seven"
    log = _log(services.database_url, "visit-1")
    assert [(r["seq"], r["task_id"]) for r in log] == list(zip(chain.seqs, chain.task_ids,
                                                                strict=True))
    assert _applied_order(services.database_url, "visit-1") == chain.seqs
    head, *carried = chain.task_ids
    assert _carriers(captured.events) == dict.fromkeys(carried, head)
    sent = {e["uuid"] for e in captured.events if e.get("type") == "task-sent"}
    assert set(chain.task_ids) & sent == {head}, "no continuation was published"
    # Flower's task list is Celery's event state: every write is there, finished, masked.
    from celery.events.state import State

    state = State()
    for event in captured.events:
        state.event(event)
    for task_id in chain.task_ids:
        task = state.tasks[task_id]
        assert (task.name, task.state) == ("memory.write", "SUCCESS")
        assert "visit-1" in task.args and "chars>" in task.args
    assert _records(services.redis_url, "visit-1") == 0, "every write record is cleared"


def test_the_count_bound_publishes_the_rest(services, visit_settings):
    from worker.celery_app import app

    visit_settings(chain_visit_max_writes=3)
    chain = Chain(run_context("visit-count"), DISTINCT_FACTS[:7])
    before = _consumed()
    with TaskEvents(app) as captured:
        chain.publish()
        results = chain.results()
        captured.wait_for("task-succeeded", count=7)
    assert [r["disposition"] for r in results] == ["written"] * 7
    assert _consumed() - before == 3, "visits of 3, 3 and 1 writes"
    t = chain.task_ids
    assert _carriers(captured.events) == {t[1]: t[0], t[2]: t[0], t[4]: t[3], t[5]: t[3]}
    assert _applied_order(services.database_url, "visit-count") == chain.seqs


def test_no_budget_carries_nothing(services, visit_settings):
    visit_settings(chain_visit_budget_s=0)
    chain = Chain(run_context("visit-no-budget"), DISTINCT_FACTS[:4])
    before = _consumed()
    chain.publish()
    assert [r["disposition"] for r in chain.results()] == ["written"] * 4
    assert _consumed() - before == 4, "a message per write, as before visits"
    assert _applied_order(services.database_url, "visit-no-budget") == chain.seqs


def test_the_time_bound_ends_a_visit_and_the_rest_is_published(services, visit_settings):
    """The plain module with a clock that moves 0.4 s per look: the budget of 1 s allows
    two carried writes; the task's publish of the rest applies the others in order."""
    from worker.app.chain_visit import Visit, carry_writes
    from worker.app.continuations import publish_continuation
    from worker.celery_app import app
    from worker.writes.apply import WriteResult, apply_memory_write

    runtime = visit_settings(chain_visit_budget_s=1.0)
    deps = runtime.write_deps()
    chain = Chain(run_context("visit-time"), DISTINCT_FACTS[:6])
    head = apply_memory_write(deps, chain.run, chain.writes[0], chain.seqs[0],
                              task_id=chain.task_ids[0], prev_payload=chain.prevs[0])
    assert isinstance(head, WriteResult)
    ticks = iter(range(1, 100))  # 0.4 s gone when it first looks (the head)
    end = carry_writes(deps, chain.steps(0), Visit(
        head_task_id=chain.task_ids[0], backend=app.backend,
        started=0.0, clock=lambda: 0.4 * next(ticks)))
    assert end.carried == 2 and end.last_task_id == chain.task_ids[2]
    assert end.rest is not None
    assert [s["options"]["task_id"] for s in reversed(end.rest)] == chain.task_ids[3:]
    before = _consumed()
    publish_continuation(end.rest, parent_id=end.last_task_id, root_id=None, db=deps.db)
    app.backend.store_result(chain.task_ids[0], head.as_dict(), "SUCCESS")  # as its task would
    assert [r["disposition"] for r in chain.results()] == ["written"] * 6
    assert _consumed() - before == 1, "the continuation's head carried the rest"
    assert _applied_order(services.database_url, "visit-time") == chain.seqs


def test_a_redelivered_head_replays_what_its_visit_applied(services, visit_settings):
    """A worker killed mid-visit: the first three writes were applied (the head and two
    carried), then the head message comes again with its whole chain."""
    from worker.app.chain_visit import after_write
    from worker.writes.apply import WriteResult, apply_memory_write

    deps = visit_settings().write_deps()
    chain = Chain(run_context("visit-replay"), DISTINCT_FACTS[:6])
    for i in range(3):
        done = apply_memory_write(deps, chain.run, chain.writes[i], chain.seqs[i],
                                  task_id=chain.task_ids[i], prev_payload=chain.prevs[i])
        assert isinstance(done, WriteResult) and done.disposition == "written"
        after_write(deps, chain.run, chain.seqs[i], done)
    before = _consumed()
    chain.publish()
    results = chain.results()
    assert [r["disposition"] for r in results] == ["written"] * 6
    assert [bool(r.get("replayed")) for r in results] == [True] * 3 + [False] * 3
    assert _consumed() - before == 1
    traced = rows(services.database_url, "SELECT seq, count(*) AS n FROM trace_events "
                  "WHERE run_id = 'visit-replay' GROUP BY seq ORDER BY seq")
    assert [(r["seq"], r["n"]) for r in traced] == [(s, 1) for s in chain.seqs], \
        "nothing applied twice"
    assert [r["task_id"] for r in _log(services.database_url, "visit-replay")] == \
        chain.task_ids
    # Delivered again whole (a second kill, or the redelivery pass): all replays, carried in
    # one visit. (Celery never overwrites a stored success: the results stay as they were.)
    from worker.celery_app import app

    before = _consumed()
    with TaskEvents(app) as captured:
        chain.publish()
        wait_until(lambda: {e["uuid"] for e in captured.events
                            if e.get("type") == "task-succeeded"} >= set(chain.task_ids))
    assert _consumed() - before == 1
    assert _carriers(captured.events) == dict.fromkeys(chain.task_ids[1:], chain.task_ids[0])
    assert len(rows(services.database_url, "SELECT id FROM trace_events "
                    "WHERE run_id = 'visit-replay'")) == 6


def test_a_malformed_step_stops_the_visit_and_gets_its_own_disposition(services,
                                                                        visit_settings):
    from worker.app.tasks import memory_write
    from worker.celery_app import app

    chain = Chain(run_context("visit-malformed"), DISTINCT_FACTS[:5])
    signatures = chain.signatures()
    t = chain.task_ids
    # The third step as a sender we do not understand would send it: an extra argument.
    signatures[2] = memory_write.si(chain.run, chain.writes[2], chain.seqs[2], chain.prevs[2],
                                    "surplus").set(task_id=t[2])
    before = _consumed()
    with TaskEvents(app) as captured:
        chain.publish(signatures)
        results = chain.results()
        captured.wait_for("task-succeeded", count=5)
    assert [r["disposition"] for r in results] == [
        "written", "written", "rejected-invalid", "written", "written"]
    assert "memory.write takes" in results[2]["reason"]
    assert _consumed() - before == 2, "the malformed step came as its own message"
    assert _carriers(captured.events) == {t[1]: t[0], t[3]: t[2], t[4]: t[2]}
    assert _applied_order(services.database_url, "visit-malformed") == chain.seqs


def test_a_carried_write_that_must_wait_goes_as_its_own_message(services, visit_settings):
    """The chain's second write follows a write of the run sent elsewhere and not applied
    yet: the visit stops there, and that write's own message waits for its turn."""
    chain = Chain(run_context("visit-wait"), DISTINCT_FACTS[:4])
    signatures = chain.signatures()
    held = signatures.pop(1)  # seq 2 is sent on its own, a moment later
    from celery import chain as celery_chain

    celery_chain(*signatures).apply_async()
    # Seq 3 waits as a message of its own: retried (a carried write is never retried).
    wait_until(lambda: _status(chain.task_ids[2]) == "RETRY", timeout=30)
    assert _status(chain.task_ids[0]) == "SUCCESS"
    held.apply_async()
    results = chain.results()
    assert [r["disposition"] for r in results] == ["written"] * 4
    assert _applied_order(services.database_url, "visit-wait") == chain.seqs


class _EraseBeforeStoring:
    """The real result backend, with an erasure of `user` run just before the result of
    `task_id` is stored: the erasure swept the backend before this result landed."""

    def __init__(self, backend: Any, task_id: str, erase: Callable[[], None]) -> None:
        self.backend, self.task_id, self.erase = backend, task_id, erase
        self.client = backend.client

    def store_result(self, task_id: str, result: Any, state: str) -> Any:
        if task_id == self.task_id:
            self.erase()
        return self.backend.store_result(task_id, result, state)

    def forget(self, task_id: str) -> None:
        self.backend.forget(task_id)


def test_a_carried_result_of_an_erased_subject_is_deleted(services, visit_settings):
    from worker.app.chain_visit import Visit, carry_writes
    from worker.celery_app import app
    from worker.erasure import Subject, forget
    from worker.writes.apply import WriteResult, apply_memory_write

    victim = "visit-victim-24"
    runtime = visit_settings()
    deps = runtime.write_deps()
    chain = Chain(run_context("visit-erased", user=victim), DISTINCT_FACTS[:3])

    def erase() -> None:
        forget(runtime.db, Subject("user", victim), requested_by="dpo", dry_run=False,
               redis_url=runtime.settings.require_redis_url(),
               embedding_model=runtime.settings.embedding_model)

    clock = app.backend.client.time()
    started_us = int(clock[0]) * 1_000_000 + int(clock[1])
    head = apply_memory_write(deps, chain.run, chain.writes[0], chain.seqs[0],
                              task_id=chain.task_ids[0], prev_payload=chain.prevs[0])
    assert isinstance(head, WriteResult)
    end = carry_writes(deps, chain.steps(0), Visit(
        head_task_id=chain.task_ids[0],
        backend=_EraseBeforeStoring(app.backend, chain.task_ids[1], erase),
        started=time.monotonic(), erasure_started_us=started_us))
    assert end.carried == 2 and end.rest is None
    # The second write committed before the erasure and its result landed after the sweep:
    # deleted, like a task's late result. The third came after the fence: refused, and the
    # refusal (which names nothing) stays for its client.
    assert not _stored(chain.task_ids[1])
    from celery.result import AsyncResult

    refused = AsyncResult(chain.task_ids[2], app=app).get(timeout=5)
    assert refused["disposition"] == "rejected-erased" and refused["run_id"] is None
    assert redis_hits(services.redis_url, [victim, "visit-erased"]) == []


def test_the_result_store_is_asked_once_a_visit_and_a_silent_one_carries_nothing(
        services, visit_settings):
    """Before its first carried write a visit asks whether the result store answers; then
    each stored result answers for it. A store that does not answer carries nothing."""
    from worker.app.chain_visit import Visit, carry_writes
    from worker.celery_app import app
    from worker.writes.apply import WriteResult, apply_memory_write

    deps = visit_settings().write_deps()
    asked: list[bool] = []
    for run_id, answers in (("visit-silent", False), ("visit-answers", True)):
        chain = Chain(run_context(run_id), DISTINCT_FACTS[:4])
        head = apply_memory_write(deps, chain.run, chain.writes[0], chain.seqs[0],
                                  task_id=chain.task_ids[0], prev_payload=chain.prevs[0])
        assert isinstance(head, WriteResult)
        asked.clear()
        end = carry_writes(deps, chain.steps(0), Visit(
            head_task_id=chain.task_ids[0], backend=app.backend, started=time.monotonic(),
            reachable=lambda answers=answers: asked.append(answers) or answers))
        assert asked == [answers]
        if answers:
            assert end.carried == 3 and end.rest is None
            assert all(map(_stored, chain.task_ids[1:]))
        else:
            assert end.carried == 0 and end.last_task_id == chain.task_ids[0]
            assert end.rest is not None and len(end.rest) == 3
            assert [r["seq"] for r in _log(services.database_url, run_id)] == chain.seqs[:1]
