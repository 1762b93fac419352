"""An agent service's first call, in a fresh interpreter: import the app, send a task."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from celery.result import AsyncResult

from tests.helpers import PROJECT_ROOT


def _client(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=PROJECT_ROOT,
                          env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_send_task_as_the_first_use_of_the_app(services, system_worker):
    task_id = _client("""
        from worker.celery_app import app
        result = app.send_task("memory.write", kwargs={
            "run": {"run_id": "first-call", "agent_id": "A", "user_id": "u-1"},
            "write": {"note": "User prefers metric units.", "type": "Preference"},
            "seq": 1})
        print(result.id)
    """)
    from worker.celery_app import app

    result = AsyncResult(task_id, app=app).get(timeout=60)
    assert result["disposition"] == "written" and result["seq"] == 1


def test_context_as_the_first_use_of_the_app(services, system_worker):
    rendered = _client("""
        from worker.celery_app import app
        reply = app.send_task("memory.context", args=[{"agent_id": "A", "user_id": "u-1"}])
        print(reply.get(timeout=60)["ok"])
    """)
    assert rendered == "True"
