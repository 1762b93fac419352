"""The CLI, run as an operator runs it (from a directory outside the checkout), with its
services stopped, unreachable or silent, or not configured at all: within seconds, one line
naming what is wrong (the password hidden), exit 1 — never a traceback, never a hang."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SECRET = "s3cret-pw"
# Every command an operator reaches for first; each touches Postgres, Redis or both.
COMMANDS = [["migrate"], ["stats"], ["write", "A", "User prefers tea.", "--user", "U"],
            ["context", "A", "what does the user drink?", "--user", "U"], ["notes", "list"],
            ["cycle", "list"], ["cycle", "run"], ["candidates", "list"], ["explain", "A", "tea"],
            ["agent", "show", "A"], ["dead-letters", "list"], ["erasures"],
            ["forget", "user", "u-1", "--dry-run"], ["exports"],
            ["export", "user", "u-1", "--by", "dpo", "--output", "-"]]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never says a word (a hung server, a firewall that
    swallows packets after the handshake)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def _cli(args: list[str], env: dict[str, str],
         cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("DATABASE_URL", "REDIS_URL", "MEMORY_DATABASE_URL", "MEMORY_REDIS_URL")}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "worker.cli", *args], cwd=cwd,
                          env={**clean, **env}, capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - start


def _assert_one_line(done: subprocess.CompletedProcess[str], took: float, expected: str) -> None:
    assert done.returncode == 1, done.stderr[-2000:]
    assert took < 12, f"took {took:.1f} s"
    assert "Traceback" not in done.stderr and SECRET not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"memory-worker: {expected}"), done.stderr


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: "-".join(a[:2]))
def test_stopped_services_are_named_in_one_line(args, tmp_path):
    port = _free_port()  # nothing listens: a server that is stopped
    env = {"DATABASE_URL": f"postgresql://postgres:{SECRET}@127.0.0.1:{port}/memory",
           "REDIS_URL": f"redis://:{SECRET}@127.0.0.1:{port}/0"}
    done, took = _cli(args, env, tmp_path)
    expected = "cannot reach Redis" if args[0] == "write" else "cannot reach the database"
    _assert_one_line(done, took, expected)
    assert "***" in done.stderr


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: "-".join(a[:2]))
def test_a_server_that_never_answers_times_out_in_one_line(args, tmp_path, silent_port):
    env = {"DATABASE_URL": f"postgresql://postgres:{SECRET}@127.0.0.1:{silent_port}/memory",
           "REDIS_URL": f"redis://127.0.0.1:{silent_port}/0",
           "MEMORY_DATABASE_CONNECT_TIMEOUT_S": "2", "MEMORY_REDIS_CONNECT_TIMEOUT_S": "2"}
    done, took = _cli(args, env, tmp_path)
    expected = "cannot reach Redis" if args[0] == "write" else "cannot reach the database"
    _assert_one_line(done, took, expected)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: "-".join(a[:2]))
def test_no_urls_configured_is_said_in_one_line(args, tmp_path):
    done, took = _cli(args, {}, tmp_path)
    _assert_one_line(done, took, "")
    assert "_URL" in done.stderr


def test_an_invalid_setting_is_named_in_one_line(tmp_path):
    done, took = _cli(["stats"], {"MEMORY_LOG_FORMAT": "bogus",
                                  "DATABASE_URL": "postgresql://x@127.0.0.1:1/m"}, tmp_path)
    _assert_one_line(done, took, "invalid configuration: log_format")


def test_debug_shows_the_traceback(tmp_path):
    done, _ = _cli(["--debug", "stats"], {"DATABASE_URL": "postgresql://x@127.0.0.1:1/m"},
                   tmp_path)
    assert done.returncode != 0 and "Traceback" in done.stderr


def test_version_is_the_installed_distributions():
    from importlib.metadata import version

    done = subprocess.run([sys.executable, "-m", "worker.cli", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == (
        f"memory-worker {version('agent-memory-worker')}")


@pytest.mark.parametrize(("env", "expected"), [
    ({"DATABASE_URL": "postgres-host:5432/memory"},
     "invalid configuration: DATABASE_URL has no scheme; expected a URL such as postgresql://"),
    ({"DATABASE_URL": "http://127.0.0.1:5432/memory"},
     "invalid configuration: DATABASE_URL has the scheme 'http'"),
    ({"REDIS_URL": "127.0.0.1:6379/0"},
     "invalid configuration: REDIS_URL has no scheme; expected a URL such as redis://"),
    ({"BROKER_URL": "rabbitmq.internal:5672"},
     "invalid configuration: BROKER_URL has no scheme"),
], ids=["database-no-scheme", "database-http", "redis-no-scheme", "broker-no-scheme"])
def test_a_url_with_a_wrong_or_missing_scheme_is_one_line(env, expected, tmp_path):
    base = {"DATABASE_URL": "postgresql://x@127.0.0.1:1/m", "REDIS_URL": "redis://127.0.0.1:1/0"}
    done, took = _cli(["stats"], {**base, **env}, tmp_path)
    _assert_one_line(done, took, expected)


@pytest.fixture
def bare_database(services) -> Iterator[str]:
    """A reachable database that was never migrated (pgvector available, not created)."""
    from tests.conftest import _database_url, _recreate_database

    _recreate_database(services.admin_url, "cli_unmigrated")
    yield _database_url(services.admin_url, "cli_unmigrated")


@pytest.mark.parametrize("args", [a for a in COMMANDS if a[0] not in ("migrate", "write")],
                         ids=lambda a: "-".join(a[:2]))
def test_a_command_before_migrate_says_to_migrate(args, tmp_path, services, bare_database):
    done, _ = _cli(args, {"DATABASE_URL": bare_database, "REDIS_URL": services.redis_url},
                      tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "run `memory-worker migrate`" in done.stderr, done.stderr


def test_a_write_nobody_consumes_says_it_is_queued(tmp_path, services):
    """No worker: the write stays queued, and the command says so in one line (no timeout
    traceback, no "Exception ignored" at exit)."""
    import redis

    queue = f"cli-nobody-{os.getpid()}"
    env = {"DATABASE_URL": "postgresql://x@127.0.0.1:1/m", "REDIS_URL": services.redis_url,
           "MEMORY_WRITE_QUEUE": queue}
    done, _ = _cli(["write", "A", "User prefers green tea.", "--user", "u-1",
                       "--timeout", "2"], env, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()], done.stderr
    assert done.stderr.startswith("memory-worker: the write is queued (run cli-"), done.stderr
    assert "no worker answered within 2 s" in done.stderr
    client = redis.Redis.from_url(services.redis_url)
    try:
        assert client.llen(queue) == 1, "the write waits in its queue for a worker"
    finally:
        client.delete(queue)
        client.close()
