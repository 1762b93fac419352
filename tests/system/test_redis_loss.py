"""Losing Redis never breaks a run and never loses a committed write's successors.

Sequence numbers survive the loss of the broker's data (they restart above every number
given out, and each write names its predecessor), and a chain's continuation that cannot be
published is kept in Postgres and published once the broker is back."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.helpers import DISTINCT_FACTS, rows, wait_until
from tests.system.conftest import RedisRestarts, send

HOLD = Path(f"/tmp/memory-test-hold-{os.getpid()}")
WORKER_ENV = {"MEMORY_WRITE_ADMISSION": "tests.admission_hooks:pause_on_marker",
              "MEMORY_ADMISSION_HOOK_TIMEOUT_S": "20", "MEMORY_TEST_HOLD_FILE": str(HOLD)}


@pytest.fixture
def redis_server(services):
    control = RedisRestarts(services.redis_url)
    yield control
    if not control.process.is_running():
        control.start()


def _log(services, run_id: str) -> list[dict]:
    return rows(services.database_url, "SELECT seq, disposition FROM write_log "
                "WHERE run_id = %s ORDER BY seq", run_id)


def _facts(start: int, n: int) -> list[dict]:
    return [{"note": fact, "type": "Context"} for fact in DISTINCT_FACTS[start:start + n]]


def test_a_run_continues_in_order_after_redis_loses_its_data(services, system_worker,
                                                              redis_server):
    from worker.client import enqueue_memory_writes

    run = {"run_id": "survivor", "agent_id": "A", "user_id": "u-1"}
    before = enqueue_memory_writes(run, _facts(0, 3))
    assert [r["disposition"] for r in before.results(timeout=60)] == ["written"] * 3

    redis_server.stop(lose_data=True)  # counters, queues, results, bindings: all gone
    redis_server.start()

    after = enqueue_memory_writes(run, _facts(3, 2))
    assert after.seqs[0] > before.seqs[-1], "numbers restart above every one given out"
    results = after.results(timeout=90)
    assert [r["disposition"] for r in results] == ["written"] * 2, results
    logged = _log(services, "survivor")
    assert [r["seq"] for r in logged] == before.seqs + after.seqs
    assert {r["disposition"] for r in logged} == {"written"}
    order = [r["seq"] for r in rows(services.database_url, "SELECT seq FROM trace_events "
                                    "WHERE run_id = 'survivor' ORDER BY id")]
    assert order == before.seqs + after.seqs, "applied in order"


def test_a_chain_outlives_a_broker_outage_longer_than_the_publish_retries(
        services, system_worker, redis_server):
    from worker.client import enqueue_memory_writes

    run = {"run_id": "outage", "agent_id": "A", "user_id": "u-1"}
    writes = [{"note": "User [hold] prefers tea.", "type": "Context"}, *_facts(5, 3)]
    HOLD.touch()
    try:
        enqueued = enqueue_memory_writes(run, writes)
        wait_until(lambda: Path(str(HOLD) + ".held").exists(), timeout=60)
        redis_server.stop(lose_data=False)  # the head is in flight, the rest waits in it
        HOLD.unlink()
        # The head commits; publishing its continuation fails for longer than the retries.
        wait_until(lambda: rows(services.database_url,
                                "SELECT 1 FROM chain_continuations"), timeout=60)
        time.sleep(2)
    finally:
        HOLD.unlink(missing_ok=True)
        Path(str(HOLD) + ".held").unlink(missing_ok=True)
        if not redis_server.process.is_running():
            redis_server.start()
    assert [r["seq"] for r in _log(services, "outage")] == enqueued.seqs[:1]
    from typer.testing import CliRunner

    from worker.cli import cli

    stats = CliRunner().invoke(cli, ["stats", "--json"])
    assert stats.exit_code == 0 and json.loads(stats.output)["waiting_continuations"] == 1
    flushed = send("memory.continuations.flush").get(timeout=60)  # what beat does every 15 s
    assert (flushed["ok"], flushed["published"], flushed["failed"]) == (True, 1, 0)
    # Not yet due for redelivery (60 s): the continuation alone carries the chain on.
    assert flushed["records"]["redelivered"] == 0
    wait_until(lambda: len(_log(services, "outage")) == 4, timeout=90)
    assert [r["seq"] for r in _log(services, "outage")] == enqueued.seqs
    assert {r["disposition"] for r in _log(services, "outage")} == {"written"}
    assert rows(services.database_url, "SELECT 1 FROM chain_continuations") == []


def test_an_enqueue_right_after_redis_lost_its_data_is_applied(services, system_worker,
                                                                redis_server):
    """The worker has not reconnected (nor re-declared anything) when the client enqueues:
    the message must still reach its queue, not vanish for want of a binding."""
    import signal

    from worker.client import enqueue_memory_writes

    assert system_worker.process is not None
    group = os.getpgid(system_worker.process.pid)
    os.killpg(group, signal.SIGSTOP)
    try:
        redis_server.stop(lose_data=True)
        redis_server.start()
        run = {"run_id": "early-bird", "agent_id": "A", "user_id": "u-1"}
        enqueued = enqueue_memory_writes(run, _facts(10, 3))
    finally:
        os.killpg(group, signal.SIGCONT)
    assert [r["disposition"] for r in enqueued.results(timeout=120)] == ["written"] * 3


def test_an_enqueue_while_redis_is_down_raises(services, redis_server):
    from worker.client import enqueue_memory_writes

    redis_server.stop(lose_data=False)
    try:
        started = time.monotonic()
        with pytest.raises(Exception) as raised:
            enqueue_memory_writes({"run_id": "down", "agent_id": "A"}, _facts(0, 2))
        assert time.monotonic() - started < 30
        assert "connect" in str(raised.value).lower() or "Connection" in type(
            raised.value).__name__
    finally:
        redis_server.start()
