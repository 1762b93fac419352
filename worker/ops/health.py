"""Liveness and readiness, for container probes, systemd and operators.

Liveness (`python -m worker.ops.health live`, `memory-worker health live`) asks one question: is
this worker or beat process still turning its loop? Each process touches a heartbeat file
every few seconds; the check only compares the file's mtime with the clock. It imports no
Celery, torch, SQLAlchemy or pydantic and never talks to the broker, so a probe costs a bare
interpreter start, and a broker or database outage never gets a healthy process restarted
(that is readiness's business).

- Workers: a bootstep (`WorkerHeartbeat`) registers a timer on the worker's event loop that
  records each turn, and a small thread writes the file while the loop turns. While the
  consumer is (re)connecting to the broker the loop does not run, by design, so the thread
  keeps writing then; once connected, a loop that stops turning for `LOOP_STALL_S` stops the
  heartbeat and the process is restarted. The file is written through warm shutdown and
  removed once the worker has stopped.
- Beat: `HeartbeatScheduler` (Celery's PersistentScheduler) writes the file on every tick and
  never sleeps longer than the heartbeat interval. Beat's own schedule file is no substitute:
  it is synced only every few minutes or when an entry runs, so its mtime says nothing about
  a beat with a quiet schedule.

Readiness (`memory-worker health ready`, `python -m worker.ops.health ready`): the broker answers
PING and does not evict keys, the database answers `SELECT 1`, no migration is pending, and
no worker running here has recorded that it cannot embed (worker/ops/embedder_state.py: a
file beside each worker's heartbeat). The checks live in worker/ops/readiness.py; this module
prints them and is the probes' entry point.

Exit codes, both commands: 0 live / ready, 1 not live / not ready (the output names the
failing check), 2 usage error.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from worker.ops.readiness import DEFAULT_CHECK_TIMEOUT_S, check_readiness

EXIT_OK = 0
EXIT_FAILED = 1

# How often a process touches its heartbeat, and how old a heartbeat may be before the
# process counts as dead: twelve missed beats, so a busy machine never trips it.
HEARTBEAT_INTERVAL_S = 5.0
DEFAULT_MAX_AGE_S = 60.0
# A worker connected to its broker whose event loop has not turned for this long is hung.
LOOP_STALL_S = 30.0

HEARTBEAT_SUFFIX = ".heartbeat"
BEAT_ROLE = "beat"


# --- where heartbeats live ----------------------------------------------------------------

def _env(name: str) -> str | None:
    # pydantic-settings matches variable names case-insensitively; so must this mirror of it.
    wanted = name.lower()
    for key, value in os.environ.items():
        if key.lower() == wanted and value != "":
            return value
    return None


def configured_heartbeat_file() -> Path | None:
    """`MEMORY_HEARTBEAT_FILE`, read the way `Settings.heartbeat_file` reads it."""
    value = _env("MEMORY_HEARTBEAT_FILE")
    return Path(value) if value else None


def heartbeat_dir() -> Path:
    """`<data_dir>/health`, with the data dir read the way `Settings.data_dir` reads it."""
    data_dir = _env("MEMORY_DATA_DIR")
    # The default of `Settings.data_dir`, spelled here so that liveness does not import
    # pydantic (tests/integration/test_health.py checks the two agree).
    return (Path(data_dir) if data_dir else Path.cwd() / ".memory-data") / "health"


def worker_role(queues: Sequence[str]) -> str:
    return "worker-" + "+".join(sorted(queues))


def heartbeat_path(role: str) -> Path:
    """The heartbeat a process of this role writes: the configured file, else one per role."""
    return configured_heartbeat_file() or heartbeat_dir() / f"{role}{HEARTBEAT_SUFFIX}"


def write_heartbeat(path: Path, role: str) -> None:
    """Replace the file atomically: a probe never reads a half-written one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"role": role, "pid": os.getpid(), "written_at": time.time()})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(body + "\n", encoding="utf-8")
    os.replace(tmp, path)


def remove_heartbeat(path: Path) -> None:
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    # Only our own: a successor process may already have taken the same file over.
    if isinstance(content, dict) and content.get("pid") == os.getpid():
        path.unlink(missing_ok=True)


class _Beater:
    """Writes one process's heartbeat; a failing disk is logged once, never fatal."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.path = heartbeat_path(role)
        self._warned = False

    def beat(self) -> None:
        try:
            write_heartbeat(self.path, self.role)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                import logging

                logging.getLogger(__name__).warning(
                    "cannot write the liveness heartbeat %s: %s", self.path, exc)

    def remove(self) -> None:
        remove_heartbeat(self.path)


# --- liveness -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Heartbeat:
    path: str
    live: bool
    age_s: float | None
    detail: str


def inspect_heartbeat(path: Path, max_age_s: float, now: float | None = None) -> Heartbeat:
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        return Heartbeat(str(path), False, None, "no heartbeat file (process not started?)")
    except OSError as exc:
        return Heartbeat(str(path), False, None, f"unreadable: {exc}")
    # A file dated in the future (clock stepped back) counts as just written.
    age = max(0.0, (time.time() if now is None else now) - mtime)
    role = ""
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(content, dict):
            role = f" ({content.get('role')}, pid {content.get('pid')})"
    except (OSError, ValueError):
        pass
    if age > max_age_s:
        return Heartbeat(str(path), False, age,
                         f"stale: {age:.1f} s old, max {max_age_s:g} s{role}")
    return Heartbeat(str(path), True, age, f"fresh: {age:.1f} s old{role}")


def check_liveness(file: Path | None = None, max_age_s: float = DEFAULT_MAX_AGE_S,
                   now: float | None = None) -> list[Heartbeat]:
    """The explicit file, else `MEMORY_HEARTBEAT_FILE`, else every heartbeat in the data
    dir's health folder (all must be fresh, and there must be one)."""
    target = file or configured_heartbeat_file()
    if target is not None:
        return [inspect_heartbeat(target, max_age_s, now)]
    folder = heartbeat_dir()
    found = sorted(folder.glob(f"*{HEARTBEAT_SUFFIX}")) if folder.is_dir() else []
    if not found:
        return [Heartbeat(str(folder), False, None,
                          "no heartbeat files (no worker or beat running here?)")]
    return [inspect_heartbeat(path, max_age_s, now) for path in found]


def run_live(file: Path | None, max_age_s: float, as_json: bool,
             out: Callable[[str], None] = print) -> int:
    beats = check_liveness(file, max_age_s)
    live = all(b.live for b in beats)
    if as_json:
        out(json.dumps({"live": live, "heartbeats": [asdict(b) for b in beats]}))
    else:
        for b in beats:
            out(f"{'ok    ' if b.live else 'FAILED'}  {b.path}: {b.detail}")
        out("live" if live else "not live")
    return EXIT_OK if live else EXIT_FAILED


# --- readiness (the checks: worker/ops/readiness.py) ---------------------------------------

def run_ready(as_json: bool, timeout_s: float = DEFAULT_CHECK_TIMEOUT_S,
              out: Callable[[str], None] = print) -> int:
    result = check_readiness(timeout_s=timeout_s)
    if as_json:
        out(json.dumps(result.as_dict()))
    else:
        for c in result.checks:
            out(f"{'ok    ' if c.ok else 'FAILED'}  {c.name:<10}  {c.detail}  "
                f"({c.duration_ms:g} ms)")
        out("ready" if result.ready else f"not ready: {', '.join(result.failed)}")
    return EXIT_OK if result.ready else EXIT_FAILED


# --- the heartbeat writers, built on first use (importing Celery here would put it on the
# --- liveness path); Celery finds them by name: worker.ops.health:WorkerHeartbeat, ...) -------

@cache
def _worker_heartbeat_step() -> type:
    from celery import bootsteps

    class WorkerHeartbeat(bootsteps.StartStopStep):
        """Touches the heartbeat while the worker's event loop turns (see the module doc)."""

        # After the pool: the first fork of pool processes happens before this thread exists.
        requires = ("celery.worker.components:Timer", "celery.worker.components:Pool")

        def __init__(self, w: Any, **kwargs: Any) -> None:
            super().__init__(w, **kwargs)
            self.last_turn = time.monotonic()
            self.beater: _Beater | None = None
            self.turn_timer: Any = None

        def start(self, w: Any) -> None:
            queues = list(w.app.amqp.queues.consume_from or w.app.amqp.queues)
            self.beater = _Beater(worker_role(queues))
            self.last_turn = time.monotonic()
            # Fired by the event loop (prefork) or the timer thread (threads/solo pools).
            self.turn_timer = w.timer.call_repeatedly(HEARTBEAT_INTERVAL_S, self._turned,
                                                      priority=10)
            self.beater.beat()
            threading.Thread(target=self._run, args=(w,), name="memory-heartbeat",
                             daemon=True).start()
            # The thread removes the file once the worker has stopped, but the interpreter
            # may exit first and kill it; this makes the clean-exit removal certain.
            atexit.register(self.beater.remove)

        def _turned(self) -> None:
            self.last_turn = time.monotonic()

        def loop_healthy(self, w: Any) -> bool:
            consumer = getattr(w, "consumer", None)
            connected = getattr(consumer, "connection", None) is not None
            # Not connected: starting, reconnecting to the broker, or shutting down. None
            # of them is helped by a restart, and the loop does not run meanwhile.
            return not connected or time.monotonic() - self.last_turn < LOOP_STALL_S

        def _run(self, w: Any) -> None:
            assert self.beater is not None
            stopped = w.blueprint.shutdown_complete  # set once the worker has fully stopped
            while not stopped.wait(HEARTBEAT_INTERVAL_S):
                if self.loop_healthy(w):
                    self.beater.beat()
            self.beater.remove()

    return WorkerHeartbeat


@cache
def _heartbeat_scheduler() -> type:
    from celery.beat import PersistentScheduler

    class HeartbeatScheduler(PersistentScheduler):
        """Celery's PersistentScheduler that touches beat's heartbeat on every tick."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._beater = _Beater(BEAT_ROLE)
            super().__init__(*args, **kwargs)

        def tick(self, *args: Any, **kwargs: Any) -> float:
            interval = super().tick(*args, **kwargs)
            self._beater.beat()
            return min(interval, HEARTBEAT_INTERVAL_S)

        def close(self) -> None:
            try:
                super().close()
            finally:
                self._beater.remove()

    HeartbeatScheduler.__qualname__ = "HeartbeatScheduler"  # for beat's startup banner
    return HeartbeatScheduler


_LAZY: dict[str, Callable[[], type]] = {
    "WorkerHeartbeat": _worker_heartbeat_step,
    "HeartbeatScheduler": _heartbeat_scheduler,
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- python -m worker.ops.health ----------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m worker.ops.health",
        description="Liveness and readiness checks. Exit 0: live/ready, 1: not, 2: usage.")
    commands = parser.add_subparsers(dest="command", required=True)
    live = commands.add_parser("live", help="is this worker/beat process's heartbeat fresh?")
    live.add_argument("--file", type=Path, default=None,
                      help="heartbeat file (default: MEMORY_HEARTBEAT_FILE, else every "
                           "heartbeat under <data_dir>/health)")
    live.add_argument("--max-age", type=float, default=DEFAULT_MAX_AGE_S,
                      help=f"seconds (default {DEFAULT_MAX_AGE_S:g})")
    live.add_argument("--json", action="store_true")
    ready = commands.add_parser("ready", help="broker, database, schema and embedder ready?")
    ready.add_argument("--timeout", type=float, default=DEFAULT_CHECK_TIMEOUT_S,
                       help=f"seconds per check (default {DEFAULT_CHECK_TIMEOUT_S:g})")
    ready.add_argument("--json", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "live":
        return run_live(args.file, args.max_age, args.json)
    return run_ready(args.json, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
