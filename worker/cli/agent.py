"""`memory-worker agent show|set`: an agent's memory configuration."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from worker.cli.output import console

agent_cli = typer.Typer(help="Show or change an agent's memory configuration.",
                        no_args_is_help=True)


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
