"""Crash and concurrency: separate enqueuing processes and separate worker processes."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tests.helpers import (
    DISTINCT_FACTS,
    BeatProcess,
    WorkerProcess,
    notes,
    rows,
    run_context,
    wait_until,
)
from worker.client import enqueue_memory_writes

pytestmark = pytest.mark.processes

FACTS = DISTINCT_FACTS


def _count(database_url: str, sql: str, *params) -> int:
    return int(rows(database_url, sql, *params)[0]["n"])


def _set_cap(db, agent: str, cap: int) -> None:
    from worker.agents import configure_agent

    with db.transaction() as conn:
        configure_agent(conn, agent, {"per_run_cap": cap})


def test_worker_killed_mid_chain_leaves_a_single_clean_run(services, db, tmp_path):
    _set_cap(db, "A", 100)
    writes = [{"note": fact, "type": "Context"} for fact in FACTS[:30]]
    # Beat sends the redelivery pass: a chain head the kill took with it (kombu's Redis
    # transport pops before it records) is published again from the writes' records.
    env = {"MEMORY_REDELIVERY_AFTER_S": "3", "MEMORY_FLUSH_PERIOD_S": "1"}
    beat = BeatProcess(tmp_path, env=env).start()
    victim = WorkerProcess("victim", tmp_path, concurrency=2, env=env).start()
    victim.wait_ready()
    crashed = run_context("crash-run", user="U-crash")
    enqueue_memory_writes(crashed, writes)
    wait_until(lambda: _count(services.database_url,
                              "SELECT count(*) AS n FROM write_log WHERE run_id = 'crash-run'")
               >= 6, timeout=90, interval=0.01)
    victim.kill()
    applied_at_kill = _count(services.database_url,
                             "SELECT count(*) AS n FROM write_log WHERE run_id = 'crash-run'")
    assert applied_at_kill < 30, "the kill must land in the middle of the chain"

    rescuer = WorkerProcess("rescuer", tmp_path, concurrency=2, env=env).start()
    try:
        rescuer.wait_ready()
        clean = run_context("clean-run", user="U-clean")
        enqueue_memory_writes(clean, writes).results(timeout=120)
        wait_until(lambda: _count(services.database_url,
                                  "SELECT count(*) AS n FROM write_log WHERE run_id = 'crash-run'")
                   == 30, timeout=120, interval=0.2)
    finally:
        rescuer.stop()
        beat.stop()

    def summary(run_id: str) -> tuple:
        log = rows(services.database_url,
                   "SELECT seq, disposition FROM write_log WHERE run_id = %s ORDER BY seq", run_id)
        trace = Counter(r["seq"] for r in rows(
            services.database_url, "SELECT seq FROM trace_events WHERE run_id = %s", run_id))
        texts = sorted(n["note"] for n in notes(services.database_url,
                                                "source_agent_run_id = %s", run_id))
        run = rows(services.database_url,
                   "SELECT applied_seq, persisted_count FROM runs WHERE run_id = %s", run_id)[0]
        base = log[0]["seq"] - 1  # seqs are clock-based: compare positions within the run
        return ([(r["seq"] - base, r["disposition"]) for r in log], sorted(trace.values()),
                texts, (run["applied_seq"] - base, run["persisted_count"]))

    assert summary("crash-run") == summary("clean-run")
    assert summary("crash-run")[0] == [(seq, "written") for seq in range(1, 31)]


def test_twenty_runs_writing_the_same_fact_leave_one_note(services, tmp_path):
    workers = [WorkerProcess(f"conc{i}", tmp_path, concurrency=3).start() for i in range(2)]
    try:
        for worker in workers:
            worker.wait_ready()
        fact = {"note": "User prefers window seats on long flights.", "type": "Preference"}
        enqueued = [enqueue_memory_writes(run_context(f"same-{i}"), [fact]) for i in range(20)]
        results = [e.results(timeout=120)[0] for e in enqueued]
    finally:
        for worker in workers:
            worker.stop()
    dispositions = Counter(r["disposition"] for r in results)
    assert dispositions == {"written": 1, "deduped": 19}
    [note] = notes(services.database_url)
    assert note["access_count"] == 20
    assert {r["note_id"] for r in results} == {str(note["id"])}


def test_two_hundred_writes_across_fifty_runs(services, db, tmp_path):
    rng = random.Random(7)
    plan: dict[str, tuple[dict, list[str]]] = {}
    for i in range(50):
        user = f"user-{i % 10}"
        plan[f"many-{i}"] = (run_context(f"many-{i}", user=user), rng.sample(FACTS[:12], 4))
    expected = {(ctx["user_id"], fact) for ctx, facts in plan.values() for fact in facts}
    workers = [WorkerProcess(f"many{i}", tmp_path, concurrency=3).start() for i in range(2)]
    try:
        for worker in workers:
            worker.wait_ready()
        enqueued = [enqueue_memory_writes(ctx, [{"note": f, "type": "Context"} for f in facts])
                    for ctx, facts in plan.values()]
        results = [r for e in enqueued for r in e.results(timeout=180)]
    finally:
        for worker in workers:
            worker.stop()
    assert len(results) == 200
    assert {r["disposition"] for r in results} <= {"written", "deduped"}
    stored = [(n["user_id"], n["note"]) for n in notes(services.database_url)]
    assert len(stored) == len(set(stored)), "no note twice"
    assert set(stored) == expected, "every expected note"
    assert Counter(r["disposition"] for r in results)["written"] == len(expected)


def test_a_pool_process_lost_mid_visit_has_its_head_delivered_again(services, tmp_path):
    """The pool process applying a chain visit dies after the head and one carried write
    committed. Its worker must deliver the head message again at once (acks late, rejected on
    a lost worker): the replay applies the rest, with no redelivery pass (no beat here). A
    head result stored before the visit ended would make Celery take the task as "succeeded
    before the worker was lost" and acknowledge it, leaving the rest of the chain behind."""
    import os
    import signal

    env = {"MEMORY_WRITE_ADMISSION": "tests.admission_hooks:slow_allow",
           "MEMORY_CHAIN_VISIT_BUDGET_S": "60"}
    worker = WorkerProcess("visit-loss", tmp_path, concurrency=1, env=env).start()
    try:
        worker.wait_ready()
        run = run_context("lost-visit", user="U-lost")
        enqueued = enqueue_memory_writes(run, [{"note": fact, "type": "Context"}
                                               for fact in FACTS[:5]])
        wait_until(lambda: _count(services.database_url, "SELECT count(*) AS n FROM write_log "
                                  "WHERE run_id = 'lost-visit'") >= 2, timeout=60, interval=0.01)
        [child] = worker.children()
        os.kill(child, signal.SIGKILL)
        assert _count(services.database_url, "SELECT count(*) AS n FROM write_log "
                      "WHERE run_id = 'lost-visit'") < 5, "the kill must land mid-visit"
        results = enqueued.results(timeout=60)
    finally:
        worker.stop()
    assert [r["disposition"] for r in results] == ["written"] * 5
    logged = rows(services.database_url, "SELECT seq, count(*) AS n FROM write_log "
                  "WHERE run_id = 'lost-visit' GROUP BY seq ORDER BY seq")
    assert [(r["seq"], r["n"]) for r in logged] == [(seq, 1) for seq in enqueued.seqs]
