"""The CLI, run as an operator runs it, with its services down: one line naming what could
not be reached (the password hidden), exit 1 — never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from worker.settings import PROJECT_ROOT

DOWN = {"DATABASE_URL": "postgresql://postgres:secret@127.0.0.1:1/memory",
        "REDIS_URL": "redis://127.0.0.1:1/0"}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "worker.cli", *args], cwd=PROJECT_ROOT,
                          env={**os.environ, **DOWN}, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args", [["stats"], ["notes", "list"], ["dead-letters", "list"],
                                  ["agent", "show", "A"], ["cycle", "list"]])
def test_a_database_that_is_down_is_named_in_one_line(args):
    done = _cli(*args)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.startswith("memory-worker: cannot reach the database at "
                                  "postgresql://postgres:***@127.0.0.1:1/memory")
    assert "Traceback" not in done.stderr and "secret" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_redis_that_is_down_is_named_in_one_line():
    done = _cli("write", "A", "User prefers tea.", "--user", "U")
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.startswith("memory-worker: cannot reach Redis at redis://127.0.0.1:1/0")
    assert "Traceback" not in done.stderr
