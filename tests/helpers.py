"""Helpers shared by the tests: direct writes, reading rows back, worker processes."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from worker.writes.apply import WaitForSequence, WriteDeps, WriteResult, apply_memory_write

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the source checkout


def run_context(run_id: str, agent: str = "A", user: str | None = "U", company: str | None = "C",
                **extra: Any) -> dict[str, Any]:
    ctx: dict[str, Any] = {"run_id": run_id, "agent_id": agent}
    if user is not None:
        ctx["user_id"] = user
    if company is not None:
        ctx["company_id"] = company
    ctx.update(extra)
    return ctx


class Writer:
    """Applies writes through the plain write path, numbering each run's writes 1, 2, 3…"""

    def __init__(self, deps: WriteDeps) -> None:
        self.deps = deps
        self._seqs: dict[str, itertools.count[int]] = defaultdict(lambda: itertools.count(1))

    def __call__(self, run: dict[str, Any], note: Any, type: Any = "Preference",
                 scope_hint: Any = None, seq: int | None = None) -> dict[str, Any]:
        write: dict[str, Any] = {"note": note, "type": type}
        if scope_hint is not None:
            write["scope_hint"] = scope_hint
        return self.raw(run, write, seq)

    def raw(self, run: Any, write: Any, seq: Any = None) -> dict[str, Any]:
        if seq is None:
            seq = next(self._seqs[run["run_id"]])
        outcome = apply_memory_write(self.deps, run, write, seq)
        assert isinstance(outcome, WriteResult), outcome
        return outcome.as_dict()

    def attempt(self, run: Any, write: Any, seq: Any) -> WriteResult | WaitForSequence:
        return apply_memory_write(self.deps, run, write, seq)


def rows(database_url: str, sql: str, *params: Any) -> list[dict[str, Any]]:
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        register_vector(conn)
        return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]


def notes(database_url: str, where: str = "true", *params: Any) -> list[dict[str, Any]]:
    return rows(database_url, f"SELECT * FROM notes WHERE {where} ORDER BY created_at, id",
                *params)


def wait_until(predicate: Any, timeout: float = 30.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def stop_process_group(process: subprocess.Popen[Any], grace_s: float = 15.0) -> None:
    """SIGTERM the group, SIGKILL what is left after the grace period (as Kubernetes does).

    Flower's executor threads are joined at interpreter exit with no timeout, so an
    inspect call in flight can hold a terminated Flower for a long time.
    """
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def spawn_celery(args: list[str], env: dict[str, str], log_path: Path
                 ) -> subprocess.Popen[bytes]:
    """`celery -A worker.celery_app:app <args>` in its own process group, output to a log.

    It dies with the test session: a pytest killed before its finalizers ran (a CI timeout,
    SIGKILL) otherwise leaves the process dialling its Redis port for good, and it takes the
    tasks of whichever later session's Redis gets that port."""
    from worker.local.embedded import die_with_parent

    with open(log_path, "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "worker.celery_app:app",
                                 *args], cwd=PROJECT_ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent)


class WorkerProcess:
    """A real `celery worker` in its own process group (prefork pool), for crash tests."""

    def __init__(self, name: str, log_dir: Path, *, concurrency: int = 2,
                 queues: str = "memory.writes", env: dict[str, str] | None = None) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self.concurrency = concurrency
        self.queues = queues
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> WorkerProcess:
        self.process = spawn_celery(
            ["worker", "-Q", self.queues, "-c", str(self.concurrency), "-n",
             f"{self.name}@%h", "-l", "INFO", "--without-gossip", "--without-mingle",
             "--without-heartbeat"], self.env, self.log_path)
        return self

    def wait_ready(self, timeout: float = 90.0) -> None:
        def ready() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"worker exited: {self.log_path.read_text()[-3000:]}")
            text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
            return " ready." in text

        wait_until(ready, timeout=timeout, interval=0.2)

    def children(self) -> set[int]:
        """The pids of its pool processes."""
        assert self.process is not None
        found = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True,
                               text=True).stdout.split()
        return {int(pid) for pid in found}

    def kill(self) -> None:
        """SIGKILL the whole process group: main process and pool children, no cleanup."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()


class BeatProcess:
    """A real `celery beat` in its own process group, with its schedule under `log_dir`."""

    def __init__(self, log_dir: Path, *, env: dict[str, str] | None = None) -> None:
        self.log_path = log_dir / "beat.log"
        self.schedule = log_dir / "beat-schedule"
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> BeatProcess:
        self.process = spawn_celery(["beat", "-s", str(self.schedule), "-l", "INFO"], self.env,
                                    self.log_path)
        return self

    def stop(self) -> None:
        if self.process is not None:
            stop_process_group(self.process)


class TaskEvents:
    """Collects the Celery events (what Flower shows) published while the block runs."""

    def __init__(self, app: Any, seconds: float = 20.0) -> None:
        self.app = app
        self.seconds = seconds
        self.events: list[dict[str, Any]] = []
        self._ready = threading.Event()

    def _capture(self) -> None:
        with self.app.connection_for_read() as connection:
            receiver = self.app.events.Receiver(connection, handlers={"*": self.events.append})
            self._ready.set()
            with contextlib.suppress(Exception):
                receiver.capture(limit=None, timeout=self.seconds, wakeup=True)

    def __enter__(self) -> TaskEvents:
        threading.Thread(target=self._capture, daemon=True).start()
        self._ready.wait(10)
        time.sleep(0.5)  # the receiver's queue is bound once capture() starts consuming
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def wait_for(self, kind: str, count: int = 1, timeout: float = 20.0) -> None:
        wait_until(lambda: sum(e.get("type") == kind for e in self.events) >= count,
                   timeout=timeout)


def hold_memory_for(database_url: str, *, users: tuple[str, ...] = (),
                    companies: tuple[str, ...] = ()) -> None:
    """Make users and companies known, as their first run or conversation would."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        for kind, ids in (("user", users), ("company", companies)):
            for principal in ids:
                conn.execute("INSERT INTO principals (kind, folded_id) VALUES (%s, lower(%s)) "
                             "ON CONFLICT DO NOTHING", (kind, principal))


# The fixed "now" of the read-path tests: their deps' clock and their seeded notes' times.
READ_NOW = __import__("datetime").datetime(2026, 6, 15, 12, 0,
                                           tzinfo=__import__("datetime").UTC)


def configure(db: Any, agent: str = "A", **changes: Any) -> None:
    """Set part of an agent's configuration, as `memory.agent.configure` does."""
    from worker.agents import configure_agent

    with db.transaction() as conn:
        configure_agent(conn, agent, changes)


DATA = PROJECT_ROOT / "tests" / "data"  # the labeled sets every tier reads

# Forty facts no two of which are duplicates, corrections or refinements of each other.
DISTINCT_FACTS = [line.strip() for line in (DATA / "distinct_facts.txt").read_text(
    encoding="utf-8").splitlines() if line.strip()]


def nested(depth: int, leaf: Any = "x", *, as_list: bool = False) -> Any:
    """`leaf` inside `depth` objects (or lists): a payload deeper than any real one."""
    for _ in range(depth):
        leaf = [leaf] if as_list else {"a": leaf}
    return leaf

