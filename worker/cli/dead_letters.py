"""`memory-worker dead-letters list|show`: the messages the worker moved aside instead of
handling (worker/app/poison.py). Registered by worker/cli/__init__.py."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from worker.cli.output import console, dump

dead_letters_cli = typer.Typer(help="Messages the worker moved aside instead of handling.",
                               no_args_is_help=True)


@dead_letters_cli.command("list")
def dead_letters_list(
    limit: Annotated[int, typer.Option(help="How many, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Moved-aside messages: task, why, how many deliveries (bodies with `show`)."""
    from db.queries.dead_letters import list_dead_letters
    from worker.runtime import get_runtime

    with get_runtime().db.read() as conn:
        letters = list_dead_letters(conn, limit)
    if as_json:
        dump(letters)
        return
    table = Table("id", "at", "task", "task id", "deliveries", "reason", "body chars")
    for letter in letters:
        table.add_row(str(letter["id"]), letter["created_at"].isoformat(timespec="seconds"),
                      letter["task_name"] or "", letter["task_id"] or "",
                      str(letter["deliveries"] or ""), letter["reason"],
                      str(letter["body_chars"] or 0))
    console.print(table)


@dead_letters_cli.command("show")
def dead_letters_show(letter_id: int) -> None:
    """One moved-aside message with its raw body (JSON)."""
    from db.queries.dead_letters import get_dead_letter
    from worker.runtime import get_runtime

    with get_runtime().db.read() as conn:
        letter = get_dead_letter(conn, letter_id)
    if letter is None:
        print(f"no dead letter {letter_id}")
        raise typer.Exit(1)
    dump(letter)

