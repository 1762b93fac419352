"""A killed pool process is replaced, and the replacement lives: the model is loaded once in
the worker's main process before fork, so a new child starts in well under Celery's start-up
check instead of loading the model for ~11 s and being killed, again and again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.helpers import rows, wait_until
from tests.system.conftest import send


def test_a_killed_child_is_replaced_and_the_replacement_serves(services, system_worker):
    before = wait_until(lambda: len(system_worker.children()) == 2 and system_worker.children(),
                        timeout=30)
    victim = min(before)
    # A busy machine, as when a child is OOM-killed: two CPU hogs on this 2-core box.
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        killed_at = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        after = wait_until(lambda: (len(kids := system_worker.children()) == 2
                                    and victim not in kids and kids), timeout=30,
                           interval=0.05)
        replaced_in = time.monotonic() - killed_at
        # Past Celery's start-up check (4 s by default), under load: still alive.
        time.sleep(10)
        assert system_worker.children() == after, "the replacement was killed"
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    log = system_worker.log_path.read_text(errors="replace")
    assert "Timed out waiting for UP message" not in log
    print(f"\nreplacement child up {replaced_in:.2f}s after the kill")

    results = [send("memory.write", {"run_id": f"after-kill-{r}", "agent_id": "A",
                                     "user_id": f"u-{r}"},
                    {"note": f"User fact number {r}.{i} is true.", "type": "Context"}, i)
               for r in range(4) for i in (1, 2)]
    outcomes = [r.get(timeout=60) for r in results]
    assert [o["disposition"] for o in outcomes] == ["written"] * 8, outcomes
    embedded = rows(services.database_url, "SELECT embedding IS NOT NULL AS embedded "
                    "FROM notes WHERE source_agent_run_id LIKE 'after-kill-%%'")
    assert [n["embedded"] for n in embedded] == [True] * 8, "the shared model embeds"
