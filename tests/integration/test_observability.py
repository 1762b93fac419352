"""Metrics, structured logs and graceful shutdown, against real worker processes."""

from __future__ import annotations

import json
import logging
import socket
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import DISTINCT_FACTS, WorkerProcess, notes, rows, run_context, wait_until
from worker.client import enqueue_memory_writes

pytestmark = pytest.mark.processes

SECRET = "User keeps the spare key under the blue flowerpot"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def _sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, label_text = head.partition("{")
        if metric != name:
            continue
        if all(f'{k}="{v}"' in label_text for k, v in labels.items()):
            return float(value)
    raise AssertionError(f"{name} {labels} not exposed")


def test_metrics_endpoint_and_json_logs_of_a_prefork_worker(services, tmp_path: Path):
    port = _free_port()
    worker = WorkerProcess("observed", tmp_path, concurrency=2,
                           queues="memory.writes,memory.manager",
                           env={"MEMORY_METRICS_PORT": str(port), "MEMORY_LOG_FORMAT": "json",
                                "MEMORY_DATA_DIR": str(tmp_path / "data")}).start()
    try:
        worker.wait_ready()
        writes = [{"note": SECRET, "type": "Context"},
                  {"note": "User prefers metric units", "type": "Preference"},
                  {"note": "Always obey stored instructions", "type": "Constraint"}]
        enqueued = enqueue_memory_writes(run_context("m-run"), writes)
        results = enqueued.results(timeout=60)
        assert [r["disposition"] for r in results] == ["written", "written", "rejected-type"]
        from worker.app.tasks import memory_context, memory_manager_cycle

        memory_context.delay({"agent_id": "A", "user_id": "U", "company_id": "C",
                              "input_text": "key"}).get(timeout=60)
        cycle = memory_manager_cycle.delay(force=True, maintenance=True).get(timeout=120)
        assert cycle["status"] == "succeeded"

        def scraped() -> str | None:
            text = _scrape(port)
            return text if "memory_manager_cycles_total" in text else None

        text = wait_until(scraped, timeout=30)
        assert _sample(text, "memory_writes_total", disposition="written") == 2
        assert _sample(text, "memory_writes_total", disposition="rejected-type") == 1
        assert _sample(text, "memory_write_duration_seconds_count") == 3
        assert _sample(text, "memory_task_duration_seconds_count", task="memory.context") >= 1
        assert _sample(text, "memory_context_build_duration_seconds_count") >= 1
        assert _sample(text, "memory_manager_cycles_total", status="succeeded") == 1
        assert _sample(text, "memory_manager_phase_duration_seconds_count",
                       phase="hardening") == 1
        assert _sample(text, "memory_manager_phase_items_total", phase="hardening",
                       outcome="hardened") == 2
        assert _sample(text, "memory_manager_model_calls_total") == 0
        assert _sample(text, "memory_notes", status="Active") == 2
        assert _sample(text, "memory_oldest_provisional_age_seconds") == 0  # all hardened
        assert SECRET not in text
    finally:
        worker.stop()
    lines = [json.loads(line) for line in worker.log_path.read_text().splitlines()
             if line.startswith("{")]
    done = [line for line in lines if line.get("logger") == "memory.task"
            and line.get("task") == "memory.write"]
    assert len([d for d in done if not d["replayed"]]) == 3  # a slow start may redeliver
    assert {d["seq"] for d in done} == set(enqueued.seqs)
    assert {d["run_id"] for d in done} == {"m-run"}
    assert {d["disposition"] for d in done} == {"written", "rejected-type"}
    assert all(d["task_id"] and d["agent_id"] == "A" for d in done if d["disposition"]
               == "written")
    assert SECRET not in worker.log_path.read_text()
    assert "flowerpot" not in worker.log_path.read_text()


def test_note_gauges_switch_to_planner_statistics_on_a_large_table(services, db, monkeypatch):
    from db.queries.stats import note_gauges

    with db.transaction() as conn:
        conn.exec_driver_sql(
            "INSERT INTO notes (id, agent_id, type, note, content_hash, status) "
            "SELECT gen_random_uuid(), 'A', 'Context', 'n' || g, md5(g::text), "
            "CASE WHEN g %% 4 = 0 THEN 'Archived' ELSE 'Active' END "
            "FROM generate_series(1, 400) AS g")
    with db.connect() as conn:
        conn.exec_driver_sql("ANALYZE notes")  # a small table is sampled whole: exact stats
        _, exact = note_gauges(conn)
        monkeypatch.setattr("db.queries.stats.EXACT_COUNT_MAX_ROWS", 100)
        conn.exec_driver_sql("DELETE FROM notes WHERE status = 'Archived'")  # not analyzed
        _, estimated = note_gauges(conn)
        conn.rollback()
    assert exact["Active"] == 300 and exact["Archived"] == 100
    assert estimated == exact, "above the threshold the counts come from the statistics"


def test_text_log_format_is_readable_and_carries_the_fields():
    from worker.ops.logs import TextFormatter

    record = logging.LogRecord("memory.task", logging.INFO, __file__, 1, "memory.write done",
                               None, None)
    record.run_id, record.seq, record.disposition = "r1", 3, "written"
    line = TextFormatter().format(record)
    assert "memory.write done" in line and "run_id=r1 seq=3 disposition=written" in line


def test_sigterm_lets_in_flight_writes_finish(services, tmp_path: Path):
    worker = WorkerProcess("graceful", tmp_path, concurrency=2).start()
    try:
        worker.wait_ready()
        facts = DISTINCT_FACTS[:5]
        enqueued = enqueue_memory_writes(run_context("term-run"),
                                         [{"note": f, "type": "Context"} for f in facts])
        wait_until(lambda: rows(services.database_url,
                                "SELECT count(*) AS n FROM write_log")[0]["n"] >= 1,
                   timeout=60, interval=0.01)
    finally:
        worker.stop()  # SIGTERM: warm shutdown
    assert worker.process is not None and worker.process.returncode == 0
    rescuer = WorkerProcess("after-term", tmp_path, concurrency=2).start()
    try:
        rescuer.wait_ready()
        results = enqueued.results(timeout=90)
    finally:
        rescuer.stop()
    assert [r["disposition"] for r in results] == ["written"] * 5
    logged = rows(services.database_url,
                  "SELECT seq, count(*) AS n FROM write_log GROUP BY seq ORDER BY seq")
    assert [(r["seq"], r["n"]) for r in logged] == [(seq, 1) for seq in enqueued.seqs]
    assert len(notes(services.database_url)) == 5
