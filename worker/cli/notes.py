"""`memory-worker notes list|show|history`: the notes, one by one. Registered by
worker/cli/__init__.py.

Read commands print a rich table by default and JSON with `--json`. Unlike logs, traces and
Flower, these commands do print note text: they are the operator's window into the memory.
"""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from db.enums import AuthorType, NoteStatus
from worker.cli.output import JsonOption, console, dump

if TYPE_CHECKING:
    from sqlalchemy import Connection

notes_cli = typer.Typer(help="Inspect notes.", no_args_is_help=True)


_HEX = frozenset("0123456789abcdef")
_WIDE_TABLE = 140  # columns: below this, `notes list` shows its four telling columns
_MIN_PREFIX = 4


def _note_id(conn: Connection, raw: str) -> uuid.UUID:
    """A whole note id, or the start of one as `notes list` prints it (unambiguous)."""
    try:
        return uuid.UUID(raw)
    except ValueError:
        pass
    digits = raw.strip().replace("-", "").lower()
    if len(digits) < _MIN_PREFIX or not set(digits) <= _HEX or len(digits) > 32:
        raise typer.BadParameter(
            f"a note id is a UUID or its first {_MIN_PREFIX}+ hex digits, as `notes list` "
            "prints them", param_hint="NOTE_ID")
    from db.queries.inspect import note_ids_with_prefix

    found = note_ids_with_prefix(conn, digits)
    if not found:
        raise typer.BadParameter(f"no note id starts with {raw}", param_hint="NOTE_ID")
    if len(found) > 1:
        raise typer.BadParameter(f"several note ids start with {raw}; give more of it",
                                 param_hint="NOTE_ID")
    return found[0]


def _choice(value: str | None, allowed: type[StrEnum], option: str) -> str | None:
    """An enum-valued filter, checked: a typo answers with the choices, not an empty table."""
    if value is None:
        return None
    for member in allowed:
        if member.value.lower() == value.lower():
            return member.value
    choices = ", ".join(member.value for member in allowed)
    raise typer.BadParameter(f"{value!r} is not one of {choices}", param_hint=option)


@notes_cli.command("list")
def notes_list(
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="Only this agent's.")] = None,
    user: Annotated[str | None, typer.Option("--user", "-u", help="'-' = no user")] = None,
    company: Annotated[str | None, typer.Option("--company", "-c",
                                                help="'-' = no company")] = None,
    status: Annotated[str | None, typer.Option(help="Active, Provisional, Archived, …")] = None,
    author: Annotated[str | None, typer.Option(help="Agent, MemoryManager or User")] = None,
    limit: Annotated[int, typer.Option(help="Newest first.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """Notes, newest first, filtered by agent, user, company, status and author."""
    from db.queries.inspect import list_notes
    from worker.runtime import get_runtime

    status = _choice(status, NoteStatus, "--status")
    author = _choice(author, AuthorType, "--author")
    with get_runtime().db.read() as conn:
        found = list_notes(conn, agent_id=agent, user_id=user, company_id=company,
                           status=status, author_type=author, limit=limit)
    if as_json:
        dump(found)
        return
    # A narrow terminal keeps what tells notes apart (id, status, user, the note) rather
    # than squeezing nine columns into one letter each; --json has every field.
    wide = console.width >= _WIDE_TABLE
    columns = (["id", "created", "status", "author", "type", "agent", "user", "company", "note"]
               if wide else ["id", "status", "user", "note"])
    table = Table(*columns)
    for n in found:
        # A retired note's text is erased by retention after its window (content_erased_at).
        shown = n["note"][:80] if n["note"] is not None else "(erased by retention)"
        if wide:
            table.add_row(str(n["id"])[:8], n["created_at"].isoformat(timespec="minutes"),
                          n["status"], n["author_type"], n["type"], n["agent_id"] or "",
                          n["user_id"] or "", n["company_id"] or "", shown)
        else:
            table.add_row(str(n["id"])[:8], n["status"], n["user_id"] or "", shown)
    console.print(table)


@notes_cli.command("show")
def notes_show(note_id: Annotated[str, typer.Argument()], as_json: JsonOption = False) -> None:
    """Every column of one note (the vector itself is left out)."""
    from db.queries.inspect import show_note
    from worker.runtime import get_runtime

    with get_runtime().db.read() as conn:
        note = show_note(conn, _note_id(conn, note_id))
    if note is None:
        console.print("no such note")
        raise typer.Exit(1)
    if as_json:
        dump(note)
        return
    table = Table("field", "value", show_header=False)
    for key, value in note.items():
        table.add_row(key, "" if value is None else str(value))
    console.print(table)


@notes_cli.command("history")
def notes_history(
    note_id: Annotated[str, typer.Argument(help="The note's id.")],
    as_json: JsonOption = False,
) -> None:
    """Everything that happened to a note: the write that created it, every status change
    (who, why, related notes)."""
    from db.queries.manager import note_history
    from worker.runtime import get_runtime

    with get_runtime().db.read() as conn:
        history = note_history(conn, _note_id(conn, note_id))
    if as_json:
        dump(history)
        return
    if not history:
        console.print("no history for this note")
        raise typer.Exit(1)
    table = Table("when", "by", "what", "status", "why", "related")
    for h in history:
        status = (f"{h['from_status'] or ''} → {h['to_status'] or ''}"
                  if h["from_status"] or h["to_status"] else "")
        who = f"run {h['run_id']} #{h['seq']}" if h["source"] == "write" else h["actor"]
        table.add_row(h["at"].isoformat(timespec="seconds"), who, h["action"], status,
                      h["reason"], ", ".join(str(r) for r in h["related_note_ids"] or []))
    console.print(table)
