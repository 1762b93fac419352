"""`memory-worker`: run the system, migrate it, and talk to it.

One module per command group, named after it: `run` (migrate, up, worker, beat, demo),
`agent`, `memory` (context, write, explain, stats), `notes`, `cycle`, `candidates`,
`dead_letters`, `health`; `output` holds what they share. This module only assembles them.
"""

from __future__ import annotations

import sys

import typer

from worker.cli import memory, run
from worker.cli.agent import agent_cli
from worker.cli.candidates import candidates_cli
from worker.cli.cycle import cycle_cli
from worker.cli.dead_letters import dead_letters_cli
from worker.cli.health import health_cli
from worker.cli.notes import notes_cli
from worker.settings import get_settings, reset_settings_cache

cli = typer.Typer(
    name="memory-worker",
    help="Durable memory for AI agents: Celery workers over Postgres/pgvector.",
    no_args_is_help=True,
    add_completion=False,
)
for command in (run.migrate, run.up, run.worker, run.beat, run.demo, memory.context,
                memory.explain, memory.stats, memory.write):
    cli.command()(command)
for group, name in ((agent_cli, "agent"), (health_cli, "health"), (cycle_cli, "cycle"),
                    (dead_letters_cli, "dead-letters"), (notes_cli, "notes"),
                    (candidates_cli, "candidates")):
    cli.add_typer(group, name=name)


def _unreachable(exc: BaseException) -> str | None:
    """One line naming the service a command could not reach, or None for other errors."""
    import redis
    import sqlalchemy.exc

    settings = get_settings()
    if isinstance(exc, sqlalchemy.exc.OperationalError | sqlalchemy.exc.InterfaceError):
        from sqlalchemy.engine import make_url

        where = (make_url(settings.database_url).render_as_string(hide_password=True)
                 if settings.database_url else "DATABASE_URL")
        return f"cannot reach the database at {where}: {str(exc.orig).splitlines()[0]}"
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        return f"cannot reach Redis at {settings.redis_url}: {exc}"
    if isinstance(exc, RuntimeError) and "is not set" in str(exc):
        return str(exc)
    return None


def main() -> None:
    """The `memory-worker` entry point: a service that is down is said in one line (exit 1),
    not with a traceback."""
    reset_settings_cache()
    try:
        cli()
    except Exception as exc:
        message = _unreachable(exc)
        if message is None:
            raise
        print(f"memory-worker: {message}", file=sys.stderr)
        raise SystemExit(1) from None
