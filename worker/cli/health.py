"""`memory-worker health live|ready`: the checks of worker/ops/health.py on the main CLI.

Registered by worker/cli/__init__.py. Probes that run often
should prefer `python -m worker.ops.health live`, which skips Typer and the settings import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from worker.ops.health import DEFAULT_MAX_AGE_S, run_live, run_ready
from worker.ops.readiness import DEFAULT_CHECK_TIMEOUT_S

health_cli = typer.Typer(
    help="Liveness and readiness checks. Exit 0: live/ready; 1: not (the failing check is "
         "named); 2: usage error.",
    no_args_is_help=True,
)


@health_cli.command("live")
def live(
    file: Annotated[Path | None, typer.Option(
        help="Heartbeat file (default: MEMORY_HEARTBEAT_FILE, else every heartbeat under "
             "<data_dir>/health).")] = None,
    max_age: Annotated[float, typer.Option(
        help="Seconds after which a heartbeat is stale.")] = DEFAULT_MAX_AGE_S,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Liveness: is this worker's or beat's heartbeat fresh? Never contacts the broker."""
    raise typer.Exit(run_live(file, max_age, as_json))


@health_cli.command("ready")
def ready(
    timeout: Annotated[float, typer.Option(
        help="Seconds allowed per check.")] = DEFAULT_CHECK_TIMEOUT_S,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Readiness: broker answers PING and does not evict, database answers, schema current,
    and no worker here has recorded that it cannot embed."""
    raise typer.Exit(run_ready(as_json, timeout))
