"""Two beats at once (a second beat started by mistake, or a tick and an operator's forced
cycle together): their cycles never overlap, and no note is hardened twice."""

from __future__ import annotations

import itertools

from tests.helpers import DISTINCT_FACTS, rows
from tests.system.conftest import send


def test_simultaneous_ticks_run_one_cycle_at_a_time(services, system_worker):
    pending = []
    for r in range(8):
        run = {"run_id": f"beats-{r}", "agent_id": "A", "user_id": f"u-{r}"}
        pending += [send("memory.write", run, {"note": fact, "type": "Context"}, i)
                    for i, fact in enumerate(DISTINCT_FACTS[r * 5:r * 5 + 5], start=1)]
    results = [p.get(timeout=60) for p in pending]
    assert [r["disposition"] for r in results] == ["written"] * 40, results

    ticks = [send("memory.manager.cycle", True, True) for _ in range(4)]
    reports = [t.get(timeout=300) for t in ticks]
    statuses = sorted(r["status"] for r in reports)
    assert "succeeded" in statuses and set(statuses) <= {"succeeded", "skipped"}, statuses

    cycles = rows(services.database_url, "SELECT id, started_at, finished_at FROM "
                  "manager_cycles WHERE status <> 'skipped' ORDER BY started_at")
    for earlier, later in itertools.pairwise(cycles):
        assert earlier["finished_at"] <= later["started_at"], "two cycles overlapped"
    hardened = rows(services.database_url, "SELECT note_id, count(*) AS n FROM note_events "
                    "WHERE action = 'hardened' GROUP BY note_id")
    assert len(hardened) == 40 and {h["n"] for h in hardened} == {1}
