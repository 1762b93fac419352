"""Liveness (heartbeat files written by real workers and beat) and readiness (real Redis,
real Postgres, real migrations), through the commands the probes run."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
import redis
from sqlalchemy.engine import make_url

from tests.helpers import PROJECT_ROOT, WorkerProcess, wait_until
from worker.ops import health, readiness
from worker.settings import Settings

CLI = str(Path(sys.executable).parent / "memory-worker")
UNREACHABLE_DB = "postgresql://memory:s3cret-pw@127.0.0.1:1/memory"
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"


def _run(*args: str, env: dict[str, str] | None = None,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), env={**os.environ, **(env or {})}, cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False)


def _live(file: Path, max_age: float = health.DEFAULT_MAX_AGE_S) -> int:
    return _run(CLI, "health", "live", "--file", str(file), "--max-age", str(max_age)).returncode


# --- liveness: the check itself ---------------------------------------------------------------

def test_liveness_probe_imports_neither_celery_nor_torch_nor_sqlalchemy(tmp_path):
    beat = tmp_path / "hb"
    health.write_heartbeat(beat, "test")
    result = _run(sys.executable, "-X", "importtime", "-m", "worker.ops.health", "live",
                  "--file", str(beat))
    assert result.returncode == 0, result.stdout + result.stderr
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0]
                for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "json" in imported  # the parse works: importtime lines were read
    heavy = {"celery", "kombu", "torch", "sqlalchemy", "pydantic", "pydantic_settings",
             "redis", "psycopg", "typer", "numpy"}
    assert not imported & heavy, imported & heavy


def test_fresh_heartbeat_is_live_and_a_stale_one_is_not(tmp_path):
    beat = tmp_path / "worker.heartbeat"
    assert health.main(["live", "--file", str(beat)]) == health.EXIT_FAILED  # not written yet
    health.write_heartbeat(beat, "worker-memory.writes")
    assert health.main(["live", "--file", str(beat), "--max-age", "60"]) == health.EXIT_OK

    old = time.time() - 61
    os.utime(beat, (old, old))  # the process stopped beating a minute ago
    assert health.main(["live", "--file", str(beat), "--max-age", "60"]) == health.EXIT_FAILED
    assert health.main(["live", "--file", str(beat), "--max-age", "120"]) == health.EXIT_OK

    # The same through the real entry points, with real exit codes.
    assert _run(sys.executable, "-m", "worker.ops.health", "live", "--file", str(beat)
                ).returncode == 1
    assert _live(beat) == 1
    health.write_heartbeat(beat, "worker-memory.writes")
    assert _run(sys.executable, "-m", "worker.ops.health", "live", "--file", str(beat)
                ).returncode == 0
    assert _live(beat) == 0
    assert _run(sys.executable, "-m", "worker.ops.health", "bogus").returncode == 2


def test_moving_the_clock_makes_a_heartbeat_stale(tmp_path):
    beat = tmp_path / "hb"
    health.write_heartbeat(beat, "beat")
    now = time.time()
    assert health.check_liveness(beat, max_age_s=60, now=now + 59)[0].live
    stale = health.check_liveness(beat, max_age_s=60, now=now + 61)[0]
    assert not stale.live and "stale" in stale.detail and "beat" in stale.detail


def test_without_a_file_every_heartbeat_under_the_data_dir_must_be_fresh(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMORY_HEARTBEAT_FILE", raising=False)
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path))
    assert not health.check_liveness()[0].live  # nothing running here
    writes = health.heartbeat_path(health.worker_role(["memory.writes"]))
    manager = health.heartbeat_path(health.worker_role(["memory.manager"]))
    beat = health.heartbeat_path(health.BEAT_ROLE)
    assert len({writes, manager, beat}) == 3  # processes sharing a data dir never collide
    for path in (writes, manager, beat):
        health.write_heartbeat(path, path.stem)
    assert all(b.live for b in health.check_liveness())
    old = time.time() - 300
    os.utime(manager, (old, old))
    beats = {Path(b.path).name: b.live for b in health.check_liveness()}
    assert beats == {writes.name: True, manager.name: False, beat.name: True}
    assert health.main(["live"]) == health.EXIT_FAILED


def test_heartbeat_location_is_the_one_settings_describe(tmp_path, monkeypatch):
    # health.py mirrors the settings without importing pydantic; the two must agree, and the
    # default follows the working directory, never the package's location.
    for key in ("MEMORY_DATA_DIR", "MEMORY_HEARTBEAT_FILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    assert health.heartbeat_dir().parent == Settings().data_dir == tmp_path / ".memory-data"
    assert health.configured_heartbeat_file() is None and Settings().heartbeat_file is None
    monkeypatch.setenv("memory_data_dir", str(tmp_path / "d"))  # pydantic ignores the case
    assert health.heartbeat_dir().parent == Settings().data_dir == tmp_path / "d"
    monkeypatch.setenv("MEMORY_HEARTBEAT_FILE", str(tmp_path / "x.hb"))
    assert health.configured_heartbeat_file() == Settings().heartbeat_file == tmp_path / "x.hb"
    assert health.heartbeat_path("beat") == tmp_path / "x.hb"


def test_a_process_removes_only_its_own_heartbeat(tmp_path):
    beat = tmp_path / "hb"
    beat.write_text(json.dumps({"role": "beat", "pid": os.getpid() + 1}))  # a successor's
    health.remove_heartbeat(beat)
    assert beat.exists()
    health.write_heartbeat(beat, "beat")
    health.remove_heartbeat(beat)
    assert not beat.exists()


# --- liveness: real processes write the heartbeat --------------------------------------------

def _mtime(path: Path) -> float:
    return path.stat().st_mtime


@pytest.mark.processes
def test_a_real_worker_beats_stops_beating_when_frozen_and_cleans_up(services, tmp_path):
    beat = tmp_path / "worker.heartbeat"
    worker = WorkerProcess("hb", tmp_path, concurrency=1,
                           env={"MEMORY_HEARTBEAT_FILE": str(beat)}).start()
    try:
        worker.wait_ready()
        wait_until(beat.exists, timeout=30)
        content = json.loads(beat.read_text())
        assert content["role"] == "worker-memory.writes"
        assert worker.process is not None and content["pid"] == worker.process.pid
        first = _mtime(beat)
        wait_until(lambda: _mtime(beat) > first, timeout=3 * health.HEARTBEAT_INTERVAL_S)
        assert _live(beat, max_age=10) == 0

        os.killpg(worker.process.pid, signal.SIGSTOP)  # alive, but nothing turns any more
        try:
            time.sleep(2 * health.HEARTBEAT_INTERVAL_S + 2)
            assert _live(beat, max_age=10) == 1
        finally:
            os.killpg(worker.process.pid, signal.SIGCONT)
        wait_until(lambda: _live(beat, max_age=10) == 0, timeout=30, interval=1)
    finally:
        worker.stop()
    assert worker.process.returncode == 0
    assert not beat.exists(), "a cleanly stopped worker leaves no heartbeat behind"
    assert _live(beat) == 1


def test_a_connected_worker_whose_loop_stops_turning_goes_stale(services, tmp_path,
                                                                 monkeypatch):
    from celery.contrib.testing.worker import start_worker

    from worker.celery_app import app

    beat = tmp_path / "worker.heartbeat"
    monkeypatch.setenv("MEMORY_HEARTBEAT_FILE", str(beat))
    with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING",
                      queues=["health-test-idle"], shutdown_timeout=30.0) as worker:
        step = worker.blueprint.steps["worker.ops.health.WorkerHeartbeat"]
        wait_until(lambda: worker.consumer.connection is not None, timeout=30)
        assert step.loop_healthy(worker)
        first = _mtime(beat)
        wait_until(lambda: _mtime(beat) > first, timeout=3 * health.HEARTBEAT_INTERVAL_S)
        # The loop's timer stops firing, as it would in a wedged event loop, while the
        # consumer stays connected: the heartbeat must stop within the stall limit.
        step.turn_timer.cancel()
        step.last_turn -= health.LOOP_STALL_S
        assert not step.loop_healthy(worker)
        time.sleep(health.HEARTBEAT_INTERVAL_S)  # a write already under way may still land
        stalled_at = _mtime(beat)
        time.sleep(2 * health.HEARTBEAT_INTERVAL_S + 1)
        assert _mtime(beat) == stalled_at
        assert _live(beat, max_age=2 * health.HEARTBEAT_INTERVAL_S) == 1
    # Removed by the heartbeat thread once the worker has fully stopped.
    wait_until(lambda: not beat.exists(), timeout=2 * health.HEARTBEAT_INTERVAL_S)


@pytest.mark.processes
def test_a_worker_without_its_broker_stays_live(services, tmp_path):
    beat = tmp_path / "worker.heartbeat"
    worker = WorkerProcess("nobroker", tmp_path, concurrency=1,
                           env={"MEMORY_HEARTBEAT_FILE": str(beat),
                                "REDIS_URL": UNREACHABLE_REDIS}).start()
    try:
        def retrying() -> bool:
            assert worker.process is not None and worker.process.poll() is None, \
                worker.log_path.read_text(errors="replace")[-3000:]
            return "Cannot connect to" in worker.log_path.read_text(errors="replace")

        wait_until(retrying, timeout=90, interval=0.5)
        wait_until(beat.exists, timeout=30)
        first = _mtime(beat)
        # Past the loop-stall limit too: a worker that cannot reach its broker is not hung.
        time.sleep(health.LOOP_STALL_S + health.HEARTBEAT_INTERVAL_S)
        assert worker.process is not None and worker.process.poll() is None
        assert _mtime(beat) > first + health.LOOP_STALL_S - health.HEARTBEAT_INTERVAL_S
        assert _live(beat, max_age=10) == 0
    finally:
        worker.stop()


@pytest.mark.processes
def test_beat_beats_on_every_tick_and_cleans_up(services, tmp_path):
    env = {**os.environ, "MEMORY_DATA_DIR": str(tmp_path)}
    env.pop("MEMORY_HEARTBEAT_FILE", None)
    log = open(tmp_path / "beat.log", "wb")  # noqa: SIM115 - the child owns it
    beat_process = subprocess.Popen([CLI, "beat"], env=env, cwd=PROJECT_ROOT, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    beat = tmp_path / "health" / "beat.heartbeat"
    try:
        wait_until(beat.exists, timeout=60, interval=0.2)
        first = _mtime(beat)
        # The schedule may be quiet for minutes; beat still wakes every heartbeat interval.
        wait_until(lambda: _mtime(beat) > first, timeout=3 * health.HEARTBEAT_INTERVAL_S)
        result = _run(CLI, "health", "live", "--json", env={"MEMORY_DATA_DIR": str(tmp_path)})
        assert result.returncode == 0, result.stdout
        beats = json.loads(result.stdout)["heartbeats"]
        assert [Path(b["path"]).name for b in beats] == ["beat.heartbeat"]
    finally:
        os.killpg(beat_process.pid, signal.SIGTERM)
        beat_process.wait(timeout=30)
    assert not beat.exists()
    assert _run(CLI, "health", "live", env={"MEMORY_DATA_DIR": str(tmp_path)}).returncode == 1


# --- readiness ----------------------------------------------------------------------------

def _ready(env: dict[str, str]) -> tuple[int, dict]:
    result = _run(CLI, "health", "ready", "--json", "--timeout", "3", env=env)
    return result.returncode, json.loads(result.stdout)


def test_ready_when_broker_database_and_schema_are(services):
    code, report = _ready({"DATABASE_URL": services.database_url,
                           "REDIS_URL": services.redis_url})
    assert code == 0, report
    assert report["ready"] and report["failed"] == []
    assert [c["name"] for c in report["checks"]] == ["broker", "database", "migrations",
                                                     "embedder"]
    text = _run(sys.executable, "-m", "worker.ops.health", "ready",
                env={"DATABASE_URL": services.database_url, "REDIS_URL": services.redis_url})
    assert text.returncode == 0 and text.stdout.strip().endswith("ready"), text.stdout


def test_database_down_is_not_ready_and_says_so(services):
    env = {"DATABASE_URL": UNREACHABLE_DB, "REDIS_URL": services.redis_url}
    code, report = _ready(env)
    assert code == 1
    assert report["failed"] == ["database", "migrations"]
    assert [c["ok"] for c in report["checks"]] == [True, False, False, True]
    text = _run(CLI, "health", "ready", "--timeout", "3", env=env)
    assert text.returncode == 1
    assert "not ready: database, migrations" in text.stdout
    assert "s3cret-pw" not in text.stdout + text.stderr  # URLs are shown without passwords


def test_broker_down_is_not_ready(services):
    code, report = _ready({"DATABASE_URL": services.database_url,
                           "REDIS_URL": UNREACHABLE_REDIS})
    assert code == 1 and report["failed"] == ["broker"]


def test_rabbitmq_as_the_broker_is_checked_and_redis_beside_it(services, rabbitmq):
    env = {"DATABASE_URL": services.database_url, "REDIS_URL": services.redis_url,
           "BROKER_URL": rabbitmq.url}
    code, report = _ready(env)
    assert code == 0, report
    assert [c["name"] for c in report["checks"]] == ["broker", "redis", "database",
                                                      "migrations", "embedder"]
    assert "RabbitMQ" in report["checks"][0]["detail"]
    assert "guest:***@" in report["checks"][0]["detail"], "the password is not shown"
    code, report = _ready({**env, "BROKER_URL": "amqp://guest:guest@127.0.0.1:1/none"})
    assert code == 1 and report["failed"] == ["broker"]


def test_servers_that_never_answer_cannot_hang_the_probe():
    # A socket that accepts connections (the kernel's backlog) but never says a word: the
    # shape of a wedged server or a half-open network path.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        started = time.monotonic()
        result = readiness.check_readiness(f"postgresql://u:p@127.0.0.1:{port}/db",
                                           f"redis://127.0.0.1:{port}/0", timeout_s=2)
        elapsed = time.monotonic() - started
    assert result.failed == ["broker", "database", "migrations"]
    assert elapsed < 10, elapsed


def test_unconfigured_is_not_ready():
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    result = subprocess.run([CLI, "health", "ready", "--json"], env=env, capture_output=True,
                            text=True, timeout=60, check=False, cwd=PROJECT_ROOT)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["failed"] == ["broker", "database", "migrations"]
    assert "REDIS_URL is not set" in report["checks"][0]["detail"]


def test_pending_migrations_are_not_ready_until_migrated(services):
    from db.migrate import migrate
    from db.migration_files import discover

    name = "memory_health_pending"
    with psycopg.connect(services.admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(services.admin_url).set(database=name).render_as_string(hide_password=False)
    env = {"DATABASE_URL": url, "REDIS_URL": services.redis_url}
    try:
        code, report = _ready(env)
        assert code == 1 and report["failed"] == ["migrations"]
        detail = report["checks"][2]["detail"]
        assert all(f"{m.version}_{m.name}" in detail for m in discover())
        migrate(url)
        code, report = _ready(env)
        assert code == 0, report
    finally:
        with psycopg.connect(services.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_an_evicting_broker_is_not_ready(services):
    client = redis.Redis.from_url(services.redis_url)
    before = client.config_get("maxmemory-policy")["maxmemory-policy"]
    assert before == "noeviction"
    client.config_set("maxmemory-policy", "allkeys-lru")
    try:
        result = readiness.check_readiness(services.database_url, services.redis_url,
                                           timeout_s=3)
        assert result.failed == ["broker"]
        assert "noeviction" in result.checks[0].detail
    finally:
        client.config_set("maxmemory-policy", before)
    assert readiness.check_readiness(services.database_url, services.redis_url).ready


def test_the_embedder_check_reads_what_the_workers_here_recorded(tmp_path, monkeypatch):
    from worker.ops import embedder_state

    monkeypatch.delenv("MEMORY_HEARTBEAT_FILE", raising=False)
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path))
    nothing = readiness.check_embedder()
    assert nothing.ok and "nothing to check" in nothing.detail  # beat, an init container

    writes = embedder_state.state_path_for_role(health.worker_role(["memory.writes"]))
    manager = embedder_state.state_path_for_role(health.worker_role(["memory.manager"]))
    assert writes.parent == manager.parent == health.heartbeat_dir() and writes != manager
    since = time.time() - 120
    embedder_state.write_state(writes, embedder_state.EmbedderState(
        True, since, "openai text-embedding-3-small", os.getpid(), since))
    embedder_state.write_state(manager, embedder_state.EmbedderState(
        False, since, "embedding endpoint failed: APIConnectionError", os.getpid(), since))
    failing = readiness.check_embedder(now=since + 120)
    assert not failing.ok
    assert "worker-memory.manager" in failing.detail and "APIConnectionError" in failing.detail
    assert "120 s" in failing.detail and "memory.writes" not in failing.detail

    # A worker killed before it could remove its file is not a worker here any more.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    embedder_state.write_state(manager, embedder_state.EmbedderState(
        False, since, "embedding endpoint failed: APIConnectionError", dead.pid, since))
    passing = readiness.check_embedder()
    assert passing.ok and "embeds with openai text-embedding-3-small" in passing.detail
