"""`memory-worker migrate|up|worker|beat|demo`: run the system and its parts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from worker.cli.output import console
from worker.settings import get_settings


def migrate(
    database_url: Annotated[str | None, typer.Option(envvar="DATABASE_URL")] = None,
) -> None:
    """Apply pending schema migrations."""
    from db.migrate import migrate as apply_migrations

    url = database_url or get_settings().require_database_url()
    applied = apply_migrations(url)
    console.print(f"applied: {', '.join(applied)}" if applied else "schema is up to date")


def up(
    demo: Annotated[bool, typer.Option(help="Run a short agent session once it is up.")] = False,
    flower: Annotated[bool, typer.Option(help="Start Flower.")] = True,
    data_dir: Annotated[Path | None, typer.Option(help="Folder for embedded data.")] = None,
) -> None:
    """Start the whole system: embedded Postgres/Redis (unless URLs are set), migrations,
    write and manager workers, beat and Flower. Ctrl-C stops everything."""
    from worker.local.stack import run_stack

    settings = get_settings()
    run_stack(settings, data_dir or settings.data_dir, demo=demo, flower=flower)


def worker(
    queues: Annotated[str | None, typer.Option("--queues", "-Q")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-c")] = None,
    loglevel: Annotated[str, typer.Option("--loglevel", "-l")] = "INFO",
    hostname: Annotated[str | None, typer.Option(
        "--hostname", "-n", help="Node name (default: from the queues, e.g. writes@%h).")]
    = None,
) -> None:
    """Run a Celery worker (default: the write queue)."""
    from worker.local.stack import worker_command

    settings = get_settings()
    queues = queues or settings.write_queue
    # Workers of different queues on one host must not share a node name (Flower, inspect).
    default_name = "-".join(q.rsplit(".", 1)[-1] for q in queues.split(",")) + "@%h"
    command = worker_command(queues, concurrency or settings.worker_concurrency,
                             hostname or default_name, loglevel)
    os.execv(command[0], command)


def beat(loglevel: Annotated[str, typer.Option("--loglevel", "-l")] = "INFO") -> None:
    """Run Celery beat (exactly one per deployment)."""
    from worker.local.stack import beat_command

    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    command = beat_command(settings.data_dir, loglevel)
    os.execv(command[0], command)


def demo(
    run_id: Annotated[str | None, typer.Option(help="Run id to use.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for results.")] = 60.0,
) -> None:
    """Play a short agent session against a running system and show each write's outcome."""
    from worker.local.demo import play_demo

    play_demo(console, run_id=run_id, timeout=timeout)
