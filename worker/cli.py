"""`memory-worker`: run the system, migrate it, and talk to it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from worker.settings import get_settings, reset_settings_cache

cli = typer.Typer(
    name="memory-worker",
    help="Durable memory for AI agents: Celery workers over Postgres/pgvector.",
    no_args_is_help=True,
    add_completion=False,
)
agent_cli = typer.Typer(help="Show or change an agent's memory configuration.",
                        no_args_is_help=True)
cli.add_typer(agent_cli, name="agent")
console = Console()

@cli.command()
def migrate(
    database_url: Annotated[str | None, typer.Option(envvar="DATABASE_URL")] = None,
) -> None:
    """Apply pending schema migrations."""
    from db.migrate import migrate as apply_migrations

    url = database_url or get_settings().require_database_url()
    applied = apply_migrations(url)
    console.print(f"applied: {', '.join(applied)}" if applied else "schema is up to date")


@cli.command()
def up(
    demo: Annotated[bool, typer.Option(help="Run a short agent session once it is up.")] = False,
    flower: Annotated[bool, typer.Option(help="Start Flower.")] = True,
    data_dir: Annotated[Path | None, typer.Option(help="Folder for embedded data.")] = None,
) -> None:
    """Start the whole system: embedded Postgres/Redis (unless URLs are set), migrations,
    write and manager workers, beat and Flower. Ctrl-C stops everything."""
    from worker.stack import run_stack

    settings = get_settings()
    run_stack(settings, data_dir or settings.data_dir, demo=demo, flower=flower)


@cli.command()
def worker(
    queues: Annotated[str | None, typer.Option("--queues", "-Q")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-c")] = None,
    loglevel: Annotated[str, typer.Option("--loglevel", "-l")] = "INFO",
    hostname: Annotated[str | None, typer.Option(
        "--hostname", "-n", help="Node name (default: from the queues, e.g. writes@%h).")]
    = None,
) -> None:
    """Run a Celery worker (default: the write queue)."""
    from worker.stack import worker_command

    settings = get_settings()
    queues = queues or settings.write_queue
    # Workers of different queues on one host must not share a node name (Flower, inspect).
    default_name = "-".join(q.rsplit(".", 1)[-1] for q in queues.split(",")) + "@%h"
    command = worker_command(queues, concurrency or settings.worker_concurrency,
                             hostname or default_name, loglevel)
    os.execv(command[0], command)


@cli.command()
def beat(loglevel: Annotated[str, typer.Option("--loglevel", "-l")] = "INFO") -> None:
    """Run Celery beat (exactly one per deployment)."""
    from worker.stack import beat_command

    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    command = beat_command(settings.data_dir, loglevel)
    os.execv(command[0], command)


@cli.command()
def demo(
    run_id: Annotated[str | None, typer.Option(help="Run id to use.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for results.")] = 60.0,
) -> None:
    """Play a short agent session against a running system and show each write's outcome."""
    from worker.demo import play_demo

    play_demo(console, run_id=run_id, timeout=timeout)


@cli.command()
def context(
    agent_id: Annotated[str, typer.Argument(help="Agent id.")],
    input_text: Annotated[str | None, typer.Argument(help="The run's input.")] = None,
    user: Annotated[str | None, typer.Option("--user", "-u")] = None,
    company: Annotated[str | None, typer.Option("--company", "-c")] = None,
    primary: Annotated[str | None, typer.Option(help="Tenant record as Entity:record_id.")] = None,
    scope: Annotated[list[str] | None, typer.Option(help="Secondary dimension=value.")] = None,
    shared_only: Annotated[bool, typer.Option(help="An audience is present.")] = False,
    policy: Annotated[bool, typer.Option(help="Include the <memory_policy> block.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the notes as JSON.")] = False,
) -> None:
    """Print the memory context an agent would receive (nothing is recorded as accessed)."""
    from db.scope import ScopeError
    from worker.context import build_context
    from worker.payloads import Invalid, parse_request_scope
    from worker.runtime import get_runtime

    payload: dict[str, Any] = {"agent_id": agent_id, "user_id": user, "company_id": company,
                               "shared_only": shared_only, "secondary_scopes": {}}
    if primary:
        entity, _, record = primary.partition(":")
        payload.update(primary_scope_entity=entity, primary_scope_record_id=record or None)
    for item in scope or []:
        name, _, value = item.partition("=")
        values = payload["secondary_scopes"].setdefault(name, [])
        values.append(value)
    request = parse_request_scope(payload)
    if isinstance(request, Invalid):
        raise typer.BadParameter(request.reason)
    try:
        result = build_context(get_runtime().context_deps(), request, input_text,
                               include_policy=policy, record_access=False)
    except ScopeError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if as_json:
        print(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(result.rendered or "(no memory to inject)\n")


@agent_cli.command("show")
def agent_show(agent_id: str) -> None:
    """Print an agent's memory configuration (defaults for an unknown agent)."""
    from worker.agents import load_agent_config
    from worker.runtime import get_runtime

    with get_runtime().db.connect() as conn:
        config = load_agent_config(conn, agent_id)
    console.print_json(json.dumps(config.as_dict()))


@agent_cli.command("set")
def agent_set(
    agent_id: str,
    changes: Annotated[list[str], typer.Argument(help="field=value pairs (JSON values)")],
) -> None:
    """Change an agent's memory configuration, e.g. `allow_memory_write=false`."""
    from worker.agents import AgentConfigError, configure_agent
    from worker.runtime import get_runtime

    parsed: dict[str, Any] = {}
    for change in changes:
        name, sep, raw = change.partition("=")
        if not sep:
            raise typer.BadParameter(f"expected field=value, got {change!r}")
        try:
            parsed[name] = json.loads(raw)
        except json.JSONDecodeError:
            parsed[name] = raw
    try:
        with get_runtime().db.transaction() as conn:
            config = configure_agent(conn, agent_id, parsed)
    except AgentConfigError as exc:
        raise typer.BadParameter(str(exc)) from exc
    console.print_json(json.dumps(config.as_dict()))


# `memory-worker health live|ready` (worker/cli_health.py): registered here, defined there.
from worker.cli_health import health_cli  # noqa: E402

cli.add_typer(health_cli, name="health")

# `memory-worker cycle run|list` (worker/cli_manager.py); `notes list|show|history`,
# `explain`, `stats`, `write` (worker/cli_notes.py).
from worker import cli_notes  # noqa: E402
from worker.cli_manager import cycle_cli, dead_letters_cli  # noqa: E402

cli.add_typer(cycle_cli, name="cycle")
cli.add_typer(dead_letters_cli, name="dead-letters")
cli.add_typer(cli_notes.notes_cli, name="notes")
cli.command()(cli_notes.explain)
cli.command()(cli_notes.stats)
cli.command()(cli_notes.write)

# `memory-worker candidates list|promote|reject` (worker/cli_candidates.py).
from worker.cli_candidates import candidates_cli  # noqa: E402

cli.add_typer(candidates_cli, name="candidates")


def main() -> None:
    reset_settings_cache()
    cli()


if __name__ == "__main__":
    main()
