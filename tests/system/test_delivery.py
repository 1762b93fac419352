"""Delivery you can prove, on Redis and on RabbitMQ: whatever the broker drops, every write a
client enqueued is applied exactly once, in its run's order.

Each test runs on both brokers: worker and beat processes started as an operator starts them,
agent services in processes of their own enqueueing chains, faults injected from outside, and
every effect read back from Postgres. Embeddings come from the OpenAI-compatible stand-in (a
worker starts in a second instead of loading a model: a kill loop restarts it often).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator

import pytest

from tests.helpers import DISTINCT_FACTS, BeatProcess, WorkerProcess, wait_until
from tests.openai_stub import OpenAIStub
from tests.system.conftest import (
    AgentService,
    Broker,
    applied_once_in_order,
    enqueue_from_client,
    logged_writes,
    send_from_client,
)

REDELIVERY_AFTER_S = 3.0
FLUSH_PERIOD_S = 1.0


@pytest.fixture(scope="module")
def embeddings() -> Iterator[dict[str, str]]:
    with OpenAIStub() as stub:
        yield {"MEMORY_EMBEDDING_BACKEND": "openai", "MEMORY_EMBEDDING_BASE_URL": stub.base_url,
               "MEMORY_EMBEDDING_API_KEY": "stub", "MEMORY_EMBEDDING_MODEL": "stub-embed"}


@pytest.fixture
def stack(broker: Broker, embeddings: dict[str, str], tmp_path) -> Iterator[object]:
    """Starts workers (any number, one after the other) and one beat on `broker`."""
    env = {**broker.env, **embeddings, "MEMORY_REDELIVERY_AFTER_S": str(REDELIVERY_AFTER_S),
           "MEMORY_FLUSH_PERIOD_S": str(FLUSH_PERIOD_S)}
    started: list[WorkerProcess | BeatProcess] = []

    class Stack:
        def __init__(self) -> None:
            self.env = env
            self.workers = 0

        def worker(self, concurrency: int = 2) -> WorkerProcess:
            self.workers += 1
            worker = WorkerProcess(f"{broker.kind}-{self.workers}", tmp_path,
                                   concurrency=concurrency, env=env).start()
            started.append(worker)
            worker.wait_ready()
            return worker

        def beat(self) -> BeatProcess:
            beat = BeatProcess(tmp_path, env=env).start()
            started.append(beat)
            return beat

    yield Stack()
    for process in reversed(started):
        process.stop()


def _facts(n: int) -> list[str]:
    return DISTINCT_FACTS[:n]


def test_a_chain_head_deleted_from_the_broker_is_applied_within_the_bound(
        services, broker, stack):
    sent = enqueue_from_client(stack.env, "lost", runs=10, facts=_facts(5))
    assert broker.delete_queued() == 10, "each chain is one queued message: its head"
    stack.beat()
    started = time.monotonic()
    stack.worker()
    expected = sum(len(seqs) for seqs in sent.values())
    wait_until(lambda: logged_writes(services.database_url, "lost") == expected, timeout=60)
    elapsed = time.monotonic() - started
    assert applied_once_in_order(services.database_url, sent) == []
    # The documented bound: the redelivery bound plus one flush period, and the work itself.
    assert elapsed < REDELIVERY_AFTER_S + FLUSH_PERIOD_S + 30, elapsed
    print(f"\n{broker.kind}: 10 lost chain heads, {expected} writes applied in {elapsed:.1f} s")


KILLS, CHAINS_PER_ROUND, CHAIN = 30, 5, 5


def test_whole_worker_kills_lose_no_write_and_apply_none_twice(services, broker, stack):
    """Each round an agent service enqueues chains, a worker starts, and as soon as it has
    applied a few of them it is SIGKILLed with its pool — so every kill lands mid-chain,
    with the rest of the round's chains queued."""
    service = AgentService(stack.env, "killed", _facts(CHAIN))
    stack.beat()
    rng = random.Random(7)
    for _ in range(KILLS):
        service.enqueue(CHAINS_PER_ROUND)
        floor = logged_writes(services.database_url, "killed") + rng.randint(1, 8)
        worker = stack.worker()
        wait_until(lambda f=floor: logged_writes(services.database_url, "killed") >= f,
                   timeout=60, interval=0.01)
        worker.kill()  # SIGKILL of the main process and its pool, no cleanup
    sent = service.finish()
    total = KILLS * CHAINS_PER_ROUND * CHAIN
    assert logged_writes(services.database_url, "killed") < total, "chains were queued"
    stack.worker()
    wait_until(lambda: logged_writes(services.database_url, "killed") == total, timeout=240,
               interval=0.5)
    assert applied_once_in_order(services.database_url, sent) == []
    print(f"\n{broker.kind}: {total} writes in {len(sent)} chains, {KILLS} whole-worker "
          "kills mid-chain: 0 lost, 0 applied twice, all in order")


def test_pool_process_kills_lose_no_write(services, broker, stack):
    sent = enqueue_from_client(stack.env, "children", runs=20, facts=_facts(10))
    stack.beat()
    worker = stack.worker()
    for threshold in (30, 80, 130):
        wait_until(lambda t=threshold: logged_writes(services.database_url, "children") >= t,
                   timeout=120, interval=0.01)
        os.kill(min(worker.children()), signal.SIGKILL)
    wait_until(lambda: logged_writes(services.database_url, "children") == 200, timeout=180,
               interval=0.5)
    assert applied_once_in_order(services.database_url, sent) == []


def test_a_broker_restart_mid_chain_loses_no_write(services, broker, stack):
    sent = enqueue_from_client(stack.env, "restart", runs=20, facts=_facts(10))
    stack.beat()
    stack.worker()
    wait_until(lambda: logged_writes(services.database_url, "restart") >= 40, timeout=120,
               interval=0.01)
    broker.restart()
    wait_until(lambda: logged_writes(services.database_url, "restart") == 200, timeout=240,
               interval=0.5)
    assert applied_once_in_order(services.database_url, sent) == []


def test_a_write_waits_for_its_predecessor_on_the_broker(services, broker, stack):
    """seq 2 first: it waits (on RabbitMQ through native delayed delivery, whole seconds),
    then seq 1 arrives, and both apply in order."""
    from celery.result import AsyncResult

    from worker.celery_app import app

    stack.worker()
    run = {"run_id": "waits", "agent_id": "A", "user_id": "u-waits"}
    later, earlier = send_from_client(stack.env, [
        ("memory.write", [run, {"note": "User's timezone is UTC+2.", "type": "Context"}, 2, 1],
         2.5),
        ("memory.write", [run, {"note": "User's timezone is UTC+1.", "type": "Context"}, 1, 0],
         0.0)])
    assert AsyncResult(earlier, app=app).get(timeout=60)["disposition"] == "written"
    assert AsyncResult(later, app=app).get(timeout=60)["disposition"] == "superseded-own"
    assert applied_once_in_order(services.database_url, {"waits": [1, 2]}) == []


def test_a_message_that_ends_every_worker_is_dead_lettered_by_rabbitmq(
        services, rabbitmq, embeddings, tmp_path):
    """The broker's own delivery limit (the backstop behind the worker's poison bound):
    a write whose every delivery ends its worker is dead-lettered by RabbitMQ, moved into
    `dead_letters` by the redelivery pass, answered, and its record cleared."""
    import redis
    from celery.result import AsyncResult
    from kombu import Connection

    from tests.helpers import rows
    from worker.celery_app import app
    from worker.delivery.records import DUE_KEY

    def drop_queues() -> None:  # declared here with another delivery limit than elsewhere
        with Connection(rabbitmq.url) as connection, connection.channel() as channel:
            for queue in ("memory.writes", "memory.dead-letters"):
                channel.queue_delete(queue)

    hold = tmp_path / "hold"
    env = {"BROKER_URL": rabbitmq.url, **embeddings, "MEMORY_BROKER_DELIVERY_LIMIT": "2",
           "MEMORY_REDELIVERY_AFTER_S": "600", "MEMORY_FLUSH_PERIOD_S": "1",
           "MEMORY_WRITE_ADMISSION": "tests.admission_hooks:pause_on_marker",
           "MEMORY_ADMISSION_HOOK_TIMEOUT_S": "20", "MEMORY_TEST_HOLD_FILE": str(hold)}
    drop_queues()
    hold.touch()
    beat = BeatProcess(tmp_path, env=env).start()
    workers: list[WorkerProcess] = []
    try:
        sent = enqueue_from_client(env, "deadly", runs=1, facts=["[hold] User likes tea."])
        held, kills = tmp_path / "hold.held", 0
        for attempt in range(6):
            workers.append(WorkerProcess(f"deadly-{attempt}", tmp_path, env=env).start())
            workers[-1].wait_ready()
            try:
                wait_until(held.exists, timeout=10)
            except AssertionError:
                break  # no longer delivered; this worker runs the redelivery pass
            workers[-1].kill()
            held.unlink()
            kills += 1
        assert kills == 3, "delivered three times: the limit (2) was exceeded on the third"
        letters = wait_until(lambda: rows(services.database_url,
                                          "SELECT * FROM dead_letters"), timeout=30)
        [letter] = letters
        # Only it: beat's flush ticks that expired while no worker ran are dropped.
        assert "delivery limit" in letter["reason"] and letter["task_name"] == "memory.write"
        assert "[hold] User likes tea." in letter["body"]
        [[seq]] = sent.values()
        answer = AsyncResult(letter["task_id"], app=app).get(timeout=10)
        assert answer["disposition"] == "error" and "dead_letters" in answer["reason"]
        assert answer["seq"] == seq
        assert redis.Redis.from_url(services.redis_url).zcard(DUE_KEY) == 0, "record cleared"
    finally:
        for worker in workers:
            worker.stop()
        beat.stop()
        drop_queues()


def _publish_raw(broker: Broker, body: str, headers: dict[str, object]) -> None:
    """What a client in another language might publish: exactly this body and headers."""
    from kombu import Connection, Exchange, Producer

    exchange = Exchange("memory.writes", type="topic" if broker.kind == "rabbitmq" else "direct")
    with Connection(broker.url) as connection:
        Producer(connection.channel()).publish(
            body.encode(), exchange=exchange, routing_key="memory.writes", headers=headers,
            content_type="application/json", content_encoding="utf-8", serializer=None,
            declare=[])


def _kept_text(kept: str) -> str:
    """A dead letter's text: the body, or (Redis keeps the whole envelope) the envelope's
    body decoded."""
    import base64
    import json

    try:
        envelope = json.loads(kept)
        return base64.b64decode(envelope["body"]).decode()
    except (ValueError, KeyError, TypeError):
        return kept


def test_messages_no_worker_can_handle_land_in_dead_letters(services, broker, stack):
    """Not a task message, and a task nobody has: each kept in `dead_letters` (never a note
    text in the log), the unknown task answered, the worker alive and the next write
    applied — on either broker."""
    from uuid import uuid4

    from celery.result import AsyncResult

    from tests.helpers import rows
    from worker.celery_app import app

    worker = stack.worker()
    _publish_raw(broker, '{"note": "User secret: 4 Rue de Lyon"}', {"x-client": "other"})
    unknown = str(uuid4())
    _publish_raw(broker, '[[], {}, {}]', {"id": unknown, "task": "memory.wrte", "lang": "js"})
    letters = wait_until(lambda: (found := rows(
        services.database_url, "SELECT task_id, task_name, reason, body FROM dead_letters "
        "ORDER BY id")) and len(found) == 2 and found, timeout=60)
    reasons = {letter["task_name"]: letter for letter in letters}
    assert "4 Rue de Lyon" in _kept_text(reasons[None]["body"]), "the raw message is kept"
    assert reasons["memory.wrte"]["task_id"] == unknown
    with pytest.raises(Exception, match=r"memory\.wrte"):
        AsyncResult(unknown, app=app).get(timeout=30)
    sent = enqueue_from_client(stack.env, "after-junk", runs=1, facts=_facts(2))
    wait_until(lambda: logged_writes(services.database_url, "after-junk") == 2, timeout=60)
    assert applied_once_in_order(services.database_url, sent) == []
    assert worker.process is not None and worker.process.poll() is None
    assert "4 Rue de Lyon" not in worker.log_path.read_text(errors="replace")
