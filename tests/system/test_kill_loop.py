"""SIGKILL of pool processes and of the whole worker, in a loop, mid-chain: every (run, seq)
has exactly one effect, nothing is applied twice, and the dispositions are those of the same
writes applied without faults.

A whole-worker kill can take a message with it: kombu's Redis transport pops a message and
only then records it as unacknowledged, and the chain head it carries holds every later write
of its run. That was this test's occasional loss (2 of 200 once in six runs); the writes'
records and the redelivery pass that beat sends (worker/delivery/) close it."""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest

from tests.helpers import DISTINCT_FACTS, BeatProcess, WorkerProcess, rows, wait_until

RUNS, CHAIN = 20, 10
# A write the broker lost is published again this soon (beat sends the pass every second).
ENV = {"MEMORY_REDELIVERY_AFTER_S": "3", "MEMORY_FLUSH_PERIOD_S": "1"}
FACTS = DISTINCT_FACTS[:CHAIN]


def _logged(services) -> int:
    return int(rows(services.database_url, "SELECT count(*) AS n FROM write_log "
                    "WHERE run_id LIKE 'killed-%%'")[0]["n"])


def _outcomes(services, prefix: str) -> dict[int, tuple]:
    """Per run (by its number): the dispositions in sequence order, the trace steps per seq,
    the note texts."""
    found = {}
    for r in range(RUNS):
        run_id = f"{prefix}-{r}"
        log = rows(services.database_url, "SELECT seq, disposition FROM write_log "
                   "WHERE run_id = %s ORDER BY seq", run_id)
        traced = Counter(t["seq"] for t in rows(
            services.database_url, "SELECT seq FROM trace_events WHERE run_id = %s "
            "AND event LIKE 'memory_write%%'", run_id))
        texts = sorted(n["note"] for n in rows(
            services.database_url, "SELECT note FROM notes WHERE source_agent_run_id = %s",
            run_id))
        found[r] = ([w["disposition"] for w in log], sorted(traced.values()), texts)
    return found


@pytest.fixture
def workers(services, tmp_path):
    started: list[WorkerProcess] = []
    beat = BeatProcess(tmp_path, env=ENV).start()

    def start(name: str) -> WorkerProcess:
        worker = WorkerProcess(name, tmp_path, concurrency=2, env=ENV).start()
        started.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in started:
        if worker.process is not None and worker.process.poll() is None:
            worker.stop()
    beat.stop()


def test_kills_in_a_loop_leave_every_write_applied_exactly_once(services, workers):
    from worker.client import enqueue_memory_writes

    first = workers("killed-a")
    for r in range(RUNS):
        enqueue_memory_writes({"run_id": f"killed-{r}", "agent_id": "A", "user_id": f"k-{r}"},
                              [{"note": fact, "type": "Context"} for fact in FACTS])
    kills = 0
    for threshold in (20, 50, 80):  # three pool processes, each mid-chain
        wait_until(lambda t=threshold: _logged(services) >= t, timeout=120, interval=0.01)
        os.kill(min(first.children()), signal.SIGKILL)
        kills += 1
    wait_until(lambda: _logged(services) >= 110, timeout=120, interval=0.01)
    first.kill()  # the whole worker, main process and pool
    second = workers("killed-b")
    wait_until(lambda: _logged(services) >= 140, timeout=120, interval=0.01)
    os.kill(min(second.children()), signal.SIGKILL)
    kills += 2
    wait_until(lambda: _logged(services) == RUNS * CHAIN, timeout=240, interval=0.2)

    for r in range(RUNS):  # the same writes, never faulted
        enqueue_memory_writes({"run_id": f"clean-{r}", "agent_id": "A", "user_id": f"c-{r}"},
                              [{"note": fact, "type": "Context"} for fact in FACTS]
                              ).results(timeout=240)
    faulted, clean = _outcomes(services, "killed"), _outcomes(services, "clean")
    assert faulted == clean
    assert all(len(dispositions) == CHAIN for dispositions, _, _ in faulted.values())
    assert all(steps == [1] * CHAIN for _, steps, _ in faulted.values()), "one effect each"
    print(f"\nkill loop: {RUNS * CHAIN} writes, {kills} kills, 0 lost, 0 applied twice")
