"""A worker process a test session starts (tests.helpers.WorkerProcess) dies with that
session, even when the session is killed before its finalizers run: left behind, it keeps
dialling its Redis port and takes the tasks of whichever later session's Redis gets it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil

from tests.helpers import PROJECT_ROOT, wait_until

SESSION = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.helpers import WorkerProcess
worker = WorkerProcess("left-behind", Path({log_dir!r}), concurrency=1).start()
print(worker.process.pid, flush=True)
worker.wait_ready()
print("ready", flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_worker_dies_with_the_session_that_started_it(services, tmp_path):
    session = subprocess.Popen(
        [sys.executable, "-c", SESSION.format(root=str(PROJECT_ROOT), log_dir=str(tmp_path))],
        stdout=subprocess.PIPE, text=True, cwd=PROJECT_ROOT)
    assert session.stdout is not None
    worker_pid = int(session.stdout.readline())
    try:
        assert session.stdout.readline().strip() == "ready"
        pool = psutil.Process(worker_pid).children()
        assert pool, "a prefork worker has its pool processes"
        session.kill()  # as a CI timeout or the OOM killer would: no finalizer runs
        session.wait()
        wait_until(lambda: _gone(worker_pid) and all(_gone(p.pid) for p in pool),
                   timeout=60, interval=0.2)
    finally:
        session.kill()
        if not _gone(worker_pid):
            os.killpg(worker_pid, signal.SIGKILL)
