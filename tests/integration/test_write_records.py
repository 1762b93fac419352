"""Write records: a write accepted by its client is applied whatever the broker drops.

The client records each write in the script that reserves its numbers; the worker clears the
record once the write is committed; the redelivery pass publishes again what the broker lost.
Real Redis, real Postgres, a real Celery worker (in a thread) where one is needed; the loss is
simulated by deleting the queued messages by hand, as a dying consumer or a lost node would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis

from tests.helpers import notes, rows, run_context
from worker.delivery.records import DUE_KEY, records_key, write_records
from worker.delivery.redelivery import redeliver_recorded_writes

FACTS = ["User prefers bar charts over pie charts.", "User's timezone is UTC+1.",
         "User likes green tea."]


@pytest.fixture
def client(services) -> redis.Redis:
    return redis.Redis.from_url(services.redis_url)


@pytest.fixture
def records(services):
    return write_records(services.redis_url)


@pytest.fixture
def worker_thread(runtime, settings) -> Iterator[Any]:
    """Starts a real Celery worker in a thread when the test says so."""
    from contextlib import ExitStack

    from celery.contrib.testing.worker import start_worker

    from worker.celery_app import app

    with ExitStack() as stack:
        def start() -> None:
            stack.enter_context(start_worker(
                app, pool="threads", concurrency=2, perform_ping_check=False,
                loglevel="WARNING", queues=[settings.write_queue], shutdown_timeout=30.0))
        yield start


def _enqueue(run_id: str, facts: list[str] = FACTS) -> Any:
    from worker.client import enqueue_memory_writes

    return enqueue_memory_writes(run_context(run_id),
                                 [{"note": fact, "type": "Preference"} for fact in facts])


def _queued(client: redis.Redis, queue: str = "memory.writes") -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in client.lrange(queue, 0, -1)]


def _pass(runtime, records, *, after_s: float = 0.0, limit: int = 10):
    return redeliver_recorded_writes(runtime.db, records, redelivery_after_s=after_s,
                                     redelivery_limit=limit)


def test_an_enqueue_records_every_write_before_it_is_published(services, client, runtime):
    enqueued = _enqueue("rec-1")
    stored = {int(k): json.loads(v) for k, v in client.hgetall(records_key("rec-1")).items()}
    assert sorted(stored) == enqueued.seqs
    prevs = [0, *enqueued.seqs[:-1]]
    for seq, prev, task_id, fact in zip(enqueued.seqs, prevs, enqueued.task_ids, FACTS,
                                        strict=True):
        record = stored[seq]
        assert (record["seq"], record["prev_seq"], record["task"], record["task_id"]) == (
            seq, prev, "memory.write", task_id)
        assert record["args"] == [run_context("rec-1"), {"note": fact, "type": "Preference"}]
    assert client.zcard(DUE_KEY) == 3
    assert 0 < client.ttl(records_key("rec-1")) <= runtime.settings.write_record_ttl_days * 86400
    # What was published is the same chain, under the same task ids.
    [message] = _queued(client)
    assert message["headers"]["id"] == enqueued.task_ids[0]


def test_a_deleted_chain_is_published_again_and_applied_once_in_order(
        services, client, runtime, records, worker_thread):
    enqueued = _enqueue("rec-lost")
    client.delete("memory.writes")  # the broker lost the chain head, and with it the chain
    report = _pass(runtime, records)
    assert report.redelivered == 3 and report.failed == 0
    [message] = _queued(client)
    assert message["headers"]["id"] == enqueued.task_ids[0]
    worker_thread()
    results = enqueued.results(timeout=60)  # the client's own ids get the answers
    assert [r["disposition"] for r in results] == ["written"] * 3
    assert [r["seq"] for r in results] == enqueued.seqs
    applied = rows(services.database_url, "SELECT seq FROM trace_events "
                   "WHERE run_id = 'rec-lost' ORDER BY id")
    assert [row["seq"] for row in applied] == enqueued.seqs, "once each, in order"
    assert sorted(n["note"] for n in notes(services.database_url)) == sorted(FACTS)
    # Applied: the records are gone, and a later pass has nothing to do.
    assert client.exists(records_key("rec-lost")) == 0 and client.zcard(DUE_KEY) == 0
    assert _pass(runtime, records).redelivered == 0


def test_a_record_whose_write_was_applied_is_cleared_not_published(
        services, client, runtime, records):
    from worker.writes.apply import apply_memory_write

    enqueued = _enqueue("rec-applied", FACTS[:2])
    client.delete("memory.writes")
    # Applied by a worker that died before it could clear the records.
    prevs = [0, enqueued.seqs[0]]
    for seq, prev, fact in zip(enqueued.seqs, prevs, FACTS[:2], strict=True):
        apply_memory_write(runtime.write_deps(), run_context("rec-applied"),
                           {"note": fact, "type": "Preference"}, seq, prev_payload=prev)
    report = _pass(runtime, records)
    assert (report.cleared, report.redelivered) == (2, 0)
    assert _queued(client) == [] and client.zcard(DUE_KEY) == 0


def test_a_record_is_not_due_before_the_bound(services, client, runtime, records):
    _enqueue("rec-young")
    client.delete("memory.writes")
    assert _pass(runtime, records, after_s=3600).redelivered == 0
    assert _queued(client) == []
    # Published once, it is due again only one bound later.
    assert _pass(runtime, records).redelivered == 3
    assert _pass(runtime, records, after_s=3600).redelivered == 0


def test_a_record_never_applied_goes_to_dead_letters_and_is_answered(
        services, client, runtime, records):
    from celery.result import AsyncResult

    from worker.celery_app import app

    enqueued = _enqueue("rec-dead", FACTS[:1])
    for _ in range(2):  # no worker: each publication is lost again
        client.delete("memory.writes")
        assert _pass(runtime, records, limit=2).redelivered == 1
    client.delete("memory.writes")
    report = _pass(runtime, records, limit=2)
    assert (report.dead_lettered, report.redelivered) == (1, 0)
    [letter] = rows(services.database_url, "SELECT * FROM dead_letters")
    assert letter["task_id"] == enqueued.task_ids[0] and letter["task_name"] == "memory.write"
    assert "published again 2 times" in letter["reason"]
    assert json.loads(letter["body"])["args"][1]["note"] == FACTS[0]
    answer = AsyncResult(enqueued.task_ids[0], app=app).get(timeout=5)
    assert answer["disposition"] == "error" and "dead_letters" in answer["reason"]
    assert client.exists(records_key("rec-dead")) == 0 and client.zcard(DUE_KEY) == 0


def test_a_malformed_record_from_another_client_goes_to_dead_letters(
        services, client, runtime, records):
    from worker.delivery.records import RECORD_SCRIPT, SEQ_KEY_PREFIX

    client.eval(RECORD_SCRIPT, 3, SEQ_KEY_PREFIX + "rec-bad", records_key("rec-bad"), DUE_KEY,
                1, 3600, 3600, "rec-bad", "memory.write", "task-bad", "[{not json")
    report = _pass(runtime, records)
    assert report.dead_lettered == 1
    [letter] = rows(services.database_url, "SELECT * FROM dead_letters")
    assert "not valid JSON" in letter["reason"] and "{not json" in letter["body"]
    assert client.zcard(DUE_KEY) == 0


def test_no_gap_is_declared_while_the_missing_write_is_recorded(services, runtime, records,
                                                                client):
    """seq 2 arrives, seq 1 is recorded but its message was lost: seq 2 waits past the gap
    timeout instead of overtaking it; with nothing recorded the gap is declared as before;
    and if the redelivery pass never runs, it is declared after all, once every redelivery
    a record could get has had its time."""
    from worker.writes.apply import WaitForSequence, WriteResult, apply_memory_write

    settings = runtime.settings
    clock = {"now": runtime.clock()}
    deps = runtime.write_deps()
    deps.clock = lambda: clock["now"]
    enqueued = _enqueue("rec-gap", FACTS[:2])
    client.delete("memory.writes")
    first, second = enqueued.seqs
    run = run_context("rec-gap")
    write = {"note": FACTS[1], "type": "Preference"}
    assert isinstance(apply_memory_write(deps, run, write, second, prev_payload=first),
                      WaitForSequence)
    clock["now"] += timedelta(seconds=settings.seq_gap_timeout_s + 1)
    assert isinstance(apply_memory_write(deps, run, write, second, prev_payload=first),
                      WaitForSequence), "seq 1 is recorded: no gap"
    patience = settings.seq_gap_timeout_s + (settings.redelivery_limit + 1) * (
        settings.redelivery_after_s + settings.flush_period_s)
    clock["now"] += timedelta(seconds=patience)
    late = apply_memory_write(deps, run, write, second, prev_payload=first)
    assert isinstance(late, WriteResult) and late.disposition == "written"
    [trace] = rows(services.database_url, "SELECT detail FROM trace_events "
                   "WHERE run_id = 'rec-gap'")
    assert trace["detail"]["gap_skipped"] == [1, first]

    # Not recorded (a client without records): the gap timeout alone decides, as before.
    unrecorded = run_context("rec-gap-plain")
    write = {"note": FACTS[2], "type": "Preference"}
    assert isinstance(apply_memory_write(deps, unrecorded, write, 7, prev_payload=5),
                      WaitForSequence)
    clock["now"] += timedelta(seconds=settings.seq_gap_timeout_s + 1)
    assert apply_memory_write(deps, unrecorded, write, 7, prev_payload=5).disposition \
        == "written"


def test_clear_all_drops_several_runs_records_in_one_call(services, client, records):
    first, second = _enqueue("rec-many-1"), _enqueue("rec-many-2")
    records.clear_all([("rec-many-1", first.seqs[0]), ("rec-many-1", first.seqs[1]),
                       ("rec-many-2", second.seqs[2])])
    assert sorted(int(k) for k in client.hkeys(records_key("rec-many-1"))) == [first.seqs[2]]
    assert sorted(int(k) for k in client.hkeys(records_key("rec-many-2"))) == second.seqs[:2]
    assert client.zcard(DUE_KEY) == 3, "the three cleared writes are no longer due"
    # A run id no client could have recorded (not valid Unicode) takes nothing else with it.
    records.clear_all([("bad-\udcff", 1), ("rec-many-2", second.seqs[0])])
    assert sorted(int(k) for k in client.hkeys(records_key("rec-many-2"))) == [second.seqs[1]]
    assert client.zcard(DUE_KEY) == 2
