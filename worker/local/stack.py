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

from worker.local.embedded import EmbeddedStack, die_with_parent
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


@dataclass
class Child:
    name: str
    command: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self, env: dict[str, str]) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it until exit
        self.process = subprocess.Popen(
            self.command, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent,
        )
        log_file.close()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

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


def log_tail(path: Path, lines: int = 15) -> str:
    """The last lines of a child's log, to show beside a failure instead of sending the
    operator to look for the file."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.rstrip().splitlines()[-lines:]) or "(empty log)"


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
            code = child.process.returncode if child.process else None
            console.print(f"[red]{child.name} exited (code {code}); the end of "
                          f"{child.log_path}:[/red]\n{log_tail(child.log_path)}")
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
        console.print(f"the end of {writes.log_path}:\n{log_tail(writes.log_path)}")
    return False


def run_stack(settings: Settings, data_dir: Path, *, demo: bool, flower: bool) -> None:
    from db.migrate import migrate

    data_dir = data_dir.resolve()
    flower_cmd = flower_command(settings, data_dir) if flower else None  # refuse early
    data_dir.mkdir(parents=True, exist_ok=True)
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

        env = {**os.environ, "MEMORY_TORCH_THREADS": os.environ.get("MEMORY_TORCH_THREADS", "1")}
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
            return
        console.print("[green]Ready.[/green] Ctrl-C stops everything.")
        if demo:
            from worker.local.demo import play_demo

            play_demo(console)
        while all(child.alive for child in children):
            time.sleep(1.0)
        dead = [child.name for child in children if not child.alive]
        console.print(f"[red]{', '.join(dead)} exited; stopping[/red]")
    except (KeyboardInterrupt, _Stop):
        console.print("\nStopping…")
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        # Workers finish their in-flight writes while beat and Flower stop; then the data.
        stop_children(children, timeout=60.0)
        stack.stop()
        console.print("Stopped.")
