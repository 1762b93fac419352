"""`memory-worker`: run the system, migrate it, and talk to it.

One module per command group, named after it: `run` (migrate, up, worker, beat, demo),
`agent`, `memory` (context, write, explain, stats), `notes`, `cycle`, `candidates`,
`dead_letters`, `health`, `forget` (forget, erasures, reapply-erasures), `export` (export,
exports); `output` holds what they share.
This module only assembles them.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from worker.cli import export, forget, memory, run
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
    pretty_exceptions_enable=False,
)
for command in (run.migrate, run.up, run.worker, run.beat, run.demo, memory.context,
                memory.explain, memory.stats, memory.write, forget.forget, forget.erasures,
                export.export, export.exports):
    cli.command()(command)
cli.command("reapply-erasures")(forget.reapply_erasures)
for group, name in ((agent_cli, "agent"), (health_cli, "health"), (cycle_cli, "cycle"),
                    (dead_letters_cli, "dead-letters"), (notes_cli, "notes"),
                    (candidates_cli, "candidates")):
    cli.add_typer(group, name=name)

DEBUG_ENV = "MEMORY_DEBUG"


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"memory-worker {version('agent-memory-worker')}")
        except PackageNotFoundError:  # a source tree that was never installed
            print("memory-worker (not installed)")
        raise typer.Exit()


@cli.callback()
def _options(
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option(
        "--debug", help=f"Show the traceback of an error (or set {DEBUG_ENV}=1).")] = False,
) -> None:
    if debug:
        os.environ[DEBUG_ENV] = "1"


def _redacted(url: str | None) -> str:
    if not url:
        return "(not set)"
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "(unparsable URL)"


def _problem(error: Any) -> str:
    where = ".".join(map(str, error["loc"])) or "settings"
    message = str(error["msg"]).removeprefix("Value error, ")
    return message if message.startswith(where) else f"{where}: {message}"


def explain_error(exc: BaseException) -> str | None:
    """One line naming what is wrong — the service that cannot be reached with its redacted
    URL, the setting that is invalid, the migration that failed — or None for a bug."""
    import psycopg
    import pydantic
    import redis
    import sqlalchemy.exc
    from kombu.exceptions import OperationalError as BrokerError

    from db.migration_files import MigrationError
    from worker.local.stack_file import StackBusy

    if isinstance(exc, pydantic.ValidationError):
        return f"invalid configuration: {'; '.join(map(_problem, exc.errors()))}"
    if isinstance(exc, MigrationError):
        return f"migration failed: {exc}"
    if isinstance(exc, StackBusy):
        return str(exc)
    if isinstance(exc, RuntimeError) and "is not set" in str(exc):
        return str(exc)
    settings = get_settings()
    if isinstance(exc, sqlalchemy.exc.DBAPIError):
        exc = exc.orig or exc
    database = _redacted(settings.database_url)
    if isinstance(exc, psycopg.ProgrammingError) and "vector type not found" in str(exc):
        return (f"the database at {database} has no pgvector `vector` type yet: run "
                "`memory-worker migrate` (it creates the extension; the server must have "
                "pgvector installed)")
    if isinstance(exc, psycopg.errors.UndefinedTable | psycopg.errors.UndefinedColumn):
        return (f"the database at {database} lacks the memory schema or part of it: run "
                "`memory-worker migrate`")
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        reason = (str(exc).strip().splitlines() or ["connection failed"])[-1]
        return f"cannot reach the database at {database}: {reason}"
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError
                  | BrokerError):
        return f"cannot reach Redis at {_redacted(settings.redis_url)}: {exc}"
    return None


def _command(argv: list[str]) -> str | None:
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _find_running_stack() -> None:
    """A command typed in a second terminal, in the folder where `memory-worker up` runs and
    with no URL of its own, talks to that stack (`up` itself never adopts one: it refuses)."""
    if _command(sys.argv[1:]) in (None, "up"):
        return
    try:
        data_dir = get_settings().data_dir
    except Exception:  # broken settings are reported by the command itself, in one line
        return
    from worker.local.stack_file import adopt_running_stack

    if adopt_running_stack(data_dir):
        reset_settings_cache()


def _without_flag_types(command: Any) -> Any:
    """Typer's help shows a flag as `--json <bool>`, as if it took a value: flags get no
    type column."""
    for param in command.params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _without_flag_types(sub)
    return command


def main() -> None:
    """The `memory-worker` entry point: what is wrong is said in one line (exit 1), not with
    a traceback; `--debug` (or MEMORY_DEBUG=1) shows the traceback too."""
    reset_settings_cache()
    try:
        _find_running_stack()
        _without_flag_types(typer.main.get_command(cli))()
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        try:
            message = explain_error(exc)
        except Exception:  # the settings themselves are broken: say what the error was
            message = None
        if message is None:
            raise
        print(f"memory-worker: {message}", file=sys.stderr)
        raise SystemExit(1) from None
