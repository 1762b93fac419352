"""`memory-worker`: run the system, migrate it, and talk to it.

One module per command group, named after it: `run` (migrate, up, worker, beat, demo),
`agent`, `memory` (context, write, explain, stats), `notes`, `cycle`, `candidates`,
`dead_letters`, `health`; `output` holds what they share. This module only assembles them.
"""

from __future__ import annotations

import typer

from worker.cli import memory, run
from worker.cli.agent import agent_cli
from worker.cli.candidates import candidates_cli
from worker.cli.cycle import cycle_cli
from worker.cli.dead_letters import dead_letters_cli
from worker.cli.health import health_cli
from worker.cli.notes import notes_cli
from worker.settings import reset_settings_cache

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


def main() -> None:
    reset_settings_cache()
    cli()
