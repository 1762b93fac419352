"""`memory-worker up`: the whole system in one foreground command.

Starts the embedded Postgres/Redis when their URLs are not set, applies migrations, then
runs a write-queue worker, a manager-queue worker, beat and Flower as child processes in
their own sessions (so a Ctrl-C reaches only us, and we stop them in order: warm shutdown
first, so in-flight writes finish).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from rich.console import Console
from rich.markup import escape

from worker.local.embedded import EmbeddedStack, die_with_parent
from worker.local.stack_file import StackLock
from worker.settings import Settings, get_settings, reset_settings_cache

console = Console()

CELERY_APP = "worker.celery_app:app"


def _celery(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", CELERY_APP, *args]


def worker_command(queues: str, concurrency: int, hostname: str,
                   loglevel: str = "INFO") -> list[str]:
    return _celery("worker", "-Q", queues, "-c", str(concurrency), "-n", hostname,
                   "-l", loglevel, "-E", "--without-gossip", "--without-mingle")


def beat_command(data_dir: Path, loglevel: str = "INFO") -> list[str]:
    return _celery("beat", "-l", loglevel, "--schedule", str(data_dir / "celerybeat-schedule"))


def flower_command(settings: Settings, data_dir: Path) -> list[str]:
    loopback = settings.flower_address in ("127.0.0.1", "localhost", "::1")
    if not loopback and not settings.flower_basic_auth:
        raise RuntimeError(
            f"refusing to expose Flower on {settings.flower_address} without authentication; "
            "set MEMORY_FLOWER_BASIC_AUTH=user:password"
        )
    args = ["flower", f"--address={settings.flower_address}", f"--port={settings.flower_port}",
            "--persistent=True", f"--db={data_dir / 'flower.db'}"]
    if settings.flower_basic_auth:
        args.append(f"--basic-auth={settings.flower_basic_auth}")
    return _celery(*args)


# A worker's exit status for a configuration it cannot run with (worker/app/embedder_start.py).
EXIT_CONFIG = 78


@dataclass
class Child:
    name: str
    command: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    # Where this start's output begins: the log is appended to across runs of `up`.
    log_offset: int = 0

    def start(self, env: dict[str, str]) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it until exit
        self.log_offset = log_file.tell()
        self.process = subprocess.Popen(
            self.command, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent,
        )
        log_file.close()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def exit_code(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def request_stop(self) -> None:
        if self.alive:
            assert self.process is not None
            self.process.send_signal(signal.SIGTERM)  # Celery: warm shutdown

    def wait_or_kill(self, timeout: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def stop_children(children: list[Child], timeout: float) -> None:
    """All children asked at once, then one shared deadline: a slow one (Flower joins its
    threads at exit without a timeout) cannot stretch Ctrl-C to the sum of every grace."""
    for child in children:
        child.request_stop()
    deadline = time.monotonic() + timeout
    for child in children:
        child.wait_or_kill(max(0.0, deadline - time.monotonic()))


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop()


def log_tail(path: Path, lines: int = 15, offset: int = 0) -> str:
    """The last lines a child wrote to its log since `offset`, to show beside a failure
    instead of sending the operator to look for the file."""
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", errors="replace")
    except OSError:
        return "(no log)"
    # Escaped: a log line such as `pip install 'agent-memory-worker[local]'` is not markup.
    return escape("\n".join(text.rstrip().splitlines()[-lines:])) or "(empty log)"


def report_exit(child: Child) -> None:
    """Why a child stopped, in its own words: the end of what it wrote this time. A worker
    that cannot run with its configuration wrote exactly one line saying what to change."""
    tail = log_tail(child.log_path, offset=child.log_offset)
    if child.exit_code == EXIT_CONFIG:
        console.print(f"[red]{child.name} cannot start with this configuration:[/red]\n{tail}",
                      highlight=False, soft_wrap=True)
        return
    console.print(f"[red]{child.name} exited (code {child.exit_code}); the end of "
                  f"{child.log_path}:[/red]\n{tail}", highlight=False, soft_wrap=True)


def failure_exit_code(children: list[Child]) -> int:
    """`up`'s own status when a child stopped: a configuration error stays one."""
    codes = {child.exit_code for child in children if not child.alive}
    return EXIT_CONFIG if EXIT_CONFIG in codes else 1


def wait_for_workers(children: list[Child], timeout: float = 120.0,
                     every_s: float = 5.0) -> bool:
    """Until the write worker answers a ping: a progress line every few seconds, and as soon
    as a child exits (or at the timeout) the tail of its log."""
    from worker.celery_app import app

    start = time.monotonic()
    said = start
    while time.monotonic() - start < timeout:
        dead = [child for child in children if not child.alive]
        for child in dead:
            report_exit(child)
        if dead:
            return False
        replies = app.control.ping(timeout=1.0) or []
        if any(name.startswith("writes@") for reply in replies for name in reply):
            return True
        if time.monotonic() - said >= every_s:
            said = time.monotonic()
            console.print(f"  waiting for the write worker… {said - start:.0f} s")
    writes = next((c for c in children if c.name == "writes"), None)
    console.print(f"[red]the write worker did not answer within {timeout:.0f} s[/red]")
    if writes is not None:
        console.print(f"the end of {writes.log_path}:\n"
                      f"{log_tail(writes.log_path, offset=writes.log_offset)}")
    return False


def _cli_path() -> str:
    """How to type `memory-worker` here: relative to this folder when it is inside it (the
    Makefile's .venv/bin), bare when it is on PATH."""
    import shutil

    here = Path(sys.argv[0]).resolve() if Path(sys.argv[0]).name == "memory-worker" \
        else Path(sys.executable).parent / "memory-worker"
    if shutil.which("memory-worker") == str(here):
        return "memory-worker"
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)


def run_stack(settings: Settings, data_dir: Path, *, demo: bool, flower: bool) -> int:
    """Runs until Ctrl-C (returns 0) or until a child stops (returns non-zero, after saying
    why)."""
    from db.migrate import migrate

    data_dir = data_dir.resolve()
    flower_cmd = flower_command(settings, data_dir) if flower else None  # refuse early
    data_dir.mkdir(parents=True, exist_ok=True)
    lock = StackLock(data_dir)
    lock.acquire()  # before anything starts: a second `up` here must change nothing
    stack = EmbeddedStack(data_dir)
    children: list[Child] = []
    previous = signal.signal(signal.SIGTERM, _raise_stop)
    # Ctrl-C must stop the stack even when `up` was started with SIGINT ignored (a
    # non-interactive shell's background job inherits that, and Python keeps it).
    previous_int = signal.signal(signal.SIGINT, _raise_stop)
    try:
        console.print("[bold]Starting the agent memory worker[/bold]")
        started = stack.start(need_postgres=not settings.database_url,
                              need_redis=not settings.redis_url)
        for name, url in started.items():
            console.print(f"  embedded {name.split('_')[0].lower():8s} {url}")
        os.environ.update(started)
        reset_settings_cache()
        settings = get_settings()
        applied = migrate(settings.require_database_url())
        console.print(f"  migrations: {', '.join(applied) if applied else 'up to date'}")
        lock.publish({"DATABASE_URL": settings.require_database_url(),
                      "REDIS_URL": settings.require_redis_url()})

        env = dict(os.environ)  # one embedding thread per process: the settings' default
        logs = data_dir / "logs"
        children = [
            Child("writes", worker_command(settings.write_queue, settings.worker_concurrency,
                                           "writes@%h"), logs / "writes.log"),
            Child("manager", worker_command(settings.manager_queue, 1, "manager@%h"),
                  logs / "manager.log"),
            Child("beat", beat_command(data_dir), logs / "beat.log"),
        ]
        if flower_cmd:
            children.append(Child("flower", flower_cmd, logs / "flower.log"))
        for child in children:
            child.start(env)
            console.print(f"  {child.name:8s} pid {child.process.pid if child.process else '?'}"
                          f"  log {child.log_path}")
        if flower:
            console.print(f"  Flower   http://{settings.flower_address}:{settings.flower_port}")
        if not wait_for_workers(children):
            console.print("[red]Not started.[/red]")
            return failure_exit_code(children)
        console.print("[green]Ready.[/green] Ctrl-C stops everything.")
        console.print(f"  In another terminal, in this folder: {_cli_path()} stats "
                      "(or notes list, context, explain …; it finds this stack)",
                      highlight=False, soft_wrap=True)
        if demo:
            from worker.local.demo import play_demo

            play_demo(console)
        while all(child.alive for child in children):
            time.sleep(1.0)
        for child in children:
            if not child.alive:
                report_exit(child)
        console.print("[red]stopping[/red]")
        return failure_exit_code(children)
    except (KeyboardInterrupt, _Stop):
        console.print("\nStopping…")
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        # Workers finish their in-flight writes while beat and Flower stop; then the data.
        stop_children(children, timeout=60.0)
        stack.stop()
        lock.release()
        console.print("Stopped.")
