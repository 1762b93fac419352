"""`memory-worker migrate|up|worker|beat|demo`: run the system and its parts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from worker.cli.output import console
from worker.settings import get_settings


def migrate(
    database_url: Annotated[str | None, typer.Option(
        envvar="DATABASE_URL", help="Default: DATABASE_URL.")] = None,
    status: Annotated[bool, typer.Option(
        "--status", help="List every migration: applied (when), pending or edited. Changes "
        "nothing and takes no lock.")] = False,
    json_output: Annotated[bool, typer.Option(
        "--json", help="With --status: print a JSON list of {name, state, applied_at}.")]
    = False,
) -> None:
    """Apply pending schema migrations, one line per file as it runs."""
    import time

    from db.migrate import Progress
    from db.migrate import migrate as apply_migrations
    from db.migrate import status as statuses
    from db.migration_files import Migration
    from worker.cli.output import dump

    if json_output and not status:
        raise typer.BadParameter("--json goes with --status", param_hint="--json")
    url = database_url or get_settings().require_database_url()
    if status:
        listed = statuses(url)
        if json_output:
            dump([entry.as_json() for entry in listed])
            return
        width = max((len(e.migration.filename) for e in listed), default=0)
        for entry in listed:
            when = (entry.applied_at.isoformat(sep=" ", timespec="seconds")
                    if entry.applied_at else "")
            note = "  (file differs from the one applied)" if entry.state == "edited" else ""
            # soft_wrap: one line per file even when piped (rich wraps at 80 columns).
            console.print(f"{entry.migration.filename:{width}s}  {entry.state:7s}  {when}{note}"
                          .rstrip(), highlight=False, markup=False, soft_wrap=True)
        counts = {s: sum(e.state == s for e in listed) for s in ("applied", "pending", "edited")}
        console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no migrations",
                      highlight=False)
        return

    class Lines(Progress):
        # `applying X ...` is printed before the file runs (a concurrent index build can take
        # minutes) and completed on the same line; a failure ends the open line first, so the
        # one-line error that follows stands on its own line.
        open_line = False

        def waiting_for_lock(self) -> None:
            console.print("waiting for another migrate to finish ...", highlight=False)

        def started(self, migration: Migration) -> None:
            mode = "" if migration.transactional else " (no transaction)"
            console.print(f"applying {migration.filename}{mode} ...", end="", highlight=False,
                          soft_wrap=True)
            self.open_line = True

        def finished(self, migration: Migration, seconds: float) -> None:
            console.print(f" done in {seconds:.1f} s", highlight=False)
            self.open_line = False

    lines = Lines()
    began = time.perf_counter()
    try:
        applied = apply_migrations(url, progress=lines)
    finally:
        if lines.open_line:
            console.print(" failed", highlight=False)
    if applied:
        console.print(f"applied {len(applied)} migration{'s' if len(applied) > 1 else ''} "
                      f"in {time.perf_counter() - began:.1f} s; schema is up to date",
                      highlight=False)
    else:
        console.print("schema is up to date (nothing to apply)", highlight=False)


def up(
    demo: Annotated[bool, typer.Option(help="Run a short agent session once it is up.")] = False,
    flower: Annotated[bool, typer.Option(help="Start Flower.")] = True,
    data_dir: Annotated[Path | None, typer.Option(help="Folder for embedded data.")] = None,
) -> None:
    """Start the whole system: embedded Postgres/Redis (unless URLs are set), migrations,
    write and manager workers, beat and Flower. Ctrl-C stops everything."""
    from worker.local.stack import run_stack

    settings = get_settings()
    code = run_stack(settings, data_dir or settings.data_dir, demo=demo, flower=flower)
    if code:
        raise typer.Exit(code)


def worker(
    queues: Annotated[str | None, typer.Option(
        "--queues", "-Q", help="Comma-separated; default: the write queue.")] = None,
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", "-c", help="Processes; default: MEMORY_WORKER_CONCURRENCY.")] = None,
    loglevel: Annotated[str, typer.Option(
        "--loglevel", "-l", help="DEBUG, INFO, WARNING or ERROR.")] = "INFO",
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


def beat(loglevel: Annotated[str, typer.Option(
        "--loglevel", "-l", help="DEBUG, INFO, WARNING or ERROR.")] = "INFO") -> None:
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
