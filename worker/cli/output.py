"""What every command group shares: the console, JSON output, the `--json` option."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console

console = Console()

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def dump(value: Any) -> None:
    """Print a value as indented JSON (dates and ids as strings)."""
    print(json.dumps(value, indent=2, default=str, ensure_ascii=False))


def database_reachable() -> None:
    """Connect once before anything slow (loading the embedding model takes seconds): a
    database that is down is then reported at once, in one line (worker.cli.main)."""
    from worker.runtime import get_runtime

    with get_runtime().db.connect() as conn:
        conn.exec_driver_sql("SELECT 1")
