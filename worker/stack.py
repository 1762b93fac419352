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
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from rich.console import Console

from worker.embedded import EmbeddedStack
from worker.settings import Settings, get_settings, reset_settings_cache

console = Console()


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
            stderr=subprocess.STDOUT, start_new_session=True,
        )
        log_file.close()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float) -> None:
        if not self.alive:
            return
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)  # Celery: warm shutdown
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop()


def wait_for_workers(timeout: float = 120.0) -> bool:
    from worker.celery_app import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=1.0) or []
        if any(name.startswith("writes@") for reply in replies for name in reply):
            return True
    return False


def run_stack(settings: Settings, data_dir: Path, *, demo: bool, flower: bool) -> None:
    from db.migrate import migrate
    from worker.cli import beat_command, flower_command, worker_command

    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    stack = EmbeddedStack(data_dir)
    children: list[Child] = []
    previous = signal.signal(signal.SIGTERM, _raise_stop)
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
        if flower:
            children.append(Child("flower", flower_command(data_dir), logs / "flower.log"))
        for child in children:
            child.start(env)
            console.print(f"  {child.name:8s} pid {child.process.pid if child.process else '?'}"
                          f"  log {child.log_path}")
        if flower:
            console.print(f"  Flower   http://{settings.flower_address}:{settings.flower_port}")
        if not wait_for_workers():
            console.print("[red]the write worker did not come up; see its log[/red]")
            return
        console.print("[green]Ready.[/green] Ctrl-C stops everything.")
        if demo:
            from worker.demo import play_demo

            play_demo(console)
        while all(child.alive for child in children):
            time.sleep(1.0)
        dead = [child.name for child in children if not child.alive]
        console.print(f"[red]{', '.join(dead)} exited; stopping[/red]")
    except (KeyboardInterrupt, _Stop):
        console.print("\nStopping…")
    finally:
        signal.signal(signal.SIGTERM, previous)
        # Workers first (they finish in-flight writes), then beat and Flower, then the data.
        for child in children:
            child.stop(timeout=60.0)
        stack.stop()
        console.print("Stopped.")
