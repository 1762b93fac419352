"""Flower as `memory-worker up` starts it: basic auth enforced, tasks listed by name,
payloads masked, state kept in the data folder."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import PROJECT_ROOT, stop_process_group, wait_until
from worker.client import enqueue_memory_writes

SECRET = "User hides the spare key under the blue flowerpot"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str, auth: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization",
                           "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except (urllib.error.URLError, ConnectionError):
        return 0, ""  # not listening yet


@pytest.mark.usefixtures("celery_worker")
def test_flower_requires_auth_and_never_shows_note_text(services, settings, tmp_path: Path):
    from worker.local.stack import flower_command

    port = _free_port()
    auth = "ops:s3cret"
    flower_settings = settings.model_copy(update={"flower_port": port,
                                                  "flower_basic_auth": auth})
    command = flower_command(flower_settings, tmp_path)
    log = open(tmp_path / "flower.log", "wb")  # noqa: SIM115 - the child owns it
    flower = subprocess.Popen(command, cwd=PROJECT_ROOT, env=os.environ.copy(), stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _get(f"{base}/api/tasks")[0] == 401, timeout=60, interval=0.3)
        assert _get(f"{base}/api/tasks", "ops:wrong")[0] == 401
        def listed() -> dict | None:
            status, body = _get(f"{base}/api/tasks", auth)
            tasks = json.loads(body) if status == 200 and body else {}
            done = [t for t in tasks.values() if t.get("name") == "memory.write"
                    and t.get("state") == "SUCCESS"]
            return tasks if done else None

        # Task events are broadcast, not queued: a write finished before Flower's event
        # receiver is listening is never seen. Write again until one is.
        tasks = None
        for attempt in range(12):
            enqueue_memory_writes({"run_id": f"flower-run-{attempt}", "agent_id": "A",
                                   "user_id": "U"},
                                  [{"note": SECRET, "type": "Context"}]).results(timeout=30)
            try:
                tasks = wait_until(listed, timeout=8, interval=0.5)
                break
            except AssertionError:
                continue
        assert tasks, "Flower never listed a finished memory.write"
        page = json.dumps(tasks)
        assert "memory.write" in page
        assert SECRET not in page and "flowerpot" not in page
        task = next(t for t in tasks.values() if t.get("name") == "memory.write"
                    and t.get("state") == "SUCCESS")
        assert "flower-run" in task["args"] and "chars>" in task["args"]
    finally:
        stop_process_group(flower)
    assert (tmp_path / "flower.db").exists() or any(tmp_path.glob("flower.db*"))


def test_flower_refuses_a_public_address_without_auth(settings):
    from worker.local.stack import flower_command

    with pytest.raises(RuntimeError, match="without authentication"):
        flower_command(settings.model_copy(update={"flower_address": "0.0.0.0",
                                                   "flower_basic_auth": None}), Path("/tmp"))
