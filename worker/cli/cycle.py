"""`memory-worker cycle run|list`: the Memory Manager on the command line. Registered by
worker/cli/__init__.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.table import Table

from worker.cli.output import console, database_reachable, dump

cycle_cli = typer.Typer(help="Run or list Memory Manager cycles.", no_args_is_help=True)


@cycle_cli.command("run")
def cycle_run(
    maintenance: Annotated[bool, typer.Option(
        "--maintenance", help="Run the maintenance phases whatever their trigger says.")] = False,
    via_worker: Annotated[bool, typer.Option(
        "--via-worker", help="Send it to the manager queue instead of running it here.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the cycle report as JSON.")]
    = False,
) -> None:
    """Run one cycle now (recorded as forced). Skipped if another cycle is running."""
    from worker.runtime import get_runtime

    if via_worker:
        from worker.app.tasks import memory_manager_cycle

        result = memory_manager_cycle.apply_async(kwargs={"force": True,
                                                          "maintenance": maintenance})
        report = result.get(timeout=3600)
    else:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        from worker.manager.cycle import EVERY_CYCLE, MAINTENANCE, run_manager_cycle

        database_reachable()  # before the judge's model loads
        runtime = get_runtime()
        phases = len(EVERY_CYCLE) + len(MAINTENANCE)
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                      console=console, disable=as_json, transient=True) as progress:
            bar = progress.add_task("hardening", total=phases)

            def on_phase(record: dict[str, Any]) -> None:
                progress.advance(bar)
                progress.update(bar, description=f"after {record['phase']}")
                if not as_json:
                    state = f"[red]{record['error']}[/red]" if record["error"] else "ok"
                    progress.console.print(
                        f"  {record['phase']:<17} {record['duration_ms']:>9.1f} ms  {state}  "
                        f"{json.dumps(record['counts'])}")

            report = run_manager_cycle(
                runtime.db, runtime.settings, runtime.embedder_or_none(),
                now=datetime.now(UTC), force=True, force_maintenance=maintenance,
                on_phase=on_phase).as_dict()
    if as_json:
        dump(report)
    else:
        console.print(f"cycle {report['cycle_id']}: {report['status']} "
                      f"(maintenance: {report['maintenance_reason']}); "
                      f"model calls {report['model_calls']}, tokens {report['model_tokens']}")
    if report["status"] == "failed":
        raise typer.Exit(1)


@cycle_cli.command("list")
def cycle_list(
    limit: Annotated[int, typer.Option(help="How many, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Recent cycles: status, maintenance, duration, counts."""
    from db.queries.manager import list_cycles
    from worker.runtime import get_runtime

    with get_runtime().db.read() as conn:
        cycles = list_cycles(conn, limit)
    if as_json:
        dump(cycles)
        return
    table = Table("id", "status", "started", "seconds", "maintenance", "new notes",
                  "model calls", "error")
    for c in cycles:
        seconds = ((c["finished_at"] - c["started_at"]).total_seconds()
                   if c["finished_at"] else None)
        table.add_row(str(c["id"]), c["status"], c["started_at"].isoformat(timespec="seconds"),
                      "" if seconds is None else f"{seconds:.1f}", str(c["maintenance"]),
                      str((c["counts"] or {}).get("new_notes", "")), str(c["model_calls"]),
                      c["error"] or "")
    console.print(table)
