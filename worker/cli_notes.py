"""`memory-worker notes list|show|history`, `explain`, `stats` and `write`: looking at the
memory and talking to it as an agent service would. Registered by worker/cli.py.

Read commands print a rich table by default and JSON with `--json`. Unlike logs, traces and
Flower, these commands do print note text: they are the operator's window into the memory.
"""

from __future__ import annotations

import json
import uuid
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

notes_cli = typer.Typer(help="Inspect notes.", no_args_is_help=True)
console = Console()

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _dump(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str, ensure_ascii=False))


def _note_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError as exc:
        raise typer.BadParameter("note id must be a UUID") from exc


@notes_cli.command("list")
def notes_list(
    agent: Annotated[str | None, typer.Option("--agent", "-a")] = None,
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

    with get_runtime().db.read() as conn:
        found = list_notes(conn, agent_id=agent, user_id=user, company_id=company,
                           status=status, author_type=author, limit=limit)
    if as_json:
        _dump(found)
        return
    table = Table("id", "created", "status", "author", "type", "agent", "user", "company",
                  "note")
    for n in found:
        table.add_row(str(n["id"])[:8], n["created_at"].isoformat(timespec="minutes"),
                      n["status"], n["author_type"], n["type"], n["agent_id"] or "",
                      n["user_id"] or "", n["company_id"] or "", n["note"][:80])
    console.print(table)


@notes_cli.command("show")
def notes_show(note_id: Annotated[str, typer.Argument()], as_json: JsonOption = False) -> None:
    """Every column of one note (the vector itself is left out)."""
    from db.queries.inspect import show_note
    from worker.runtime import get_runtime

    with get_runtime().db.read() as conn:
        note = show_note(conn, _note_id(note_id))
    if note is None:
        console.print("no such note")
        raise typer.Exit(1)
    if as_json:
        _dump(note)
        return
    table = Table("field", "value", show_header=False)
    for key, value in note.items():
        table.add_row(key, "" if value is None else str(value))
    console.print(table)


@notes_cli.command("history")
def notes_history(
    note_id: Annotated[str, typer.Argument(help="The note's id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Everything that happened to a note: the write that created it, every status change
    (who, why, related notes)."""
    from db.queries.manager import note_history
    from worker.runtime import get_runtime

    try:
        parsed = uuid.UUID(note_id)
    except ValueError as exc:
        raise typer.BadParameter("note id must be a UUID") from exc
    with get_runtime().db.read() as conn:
        history = note_history(conn, parsed)
    if as_json:
        _dump(history)
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


def explain(
    agent_id: Annotated[str, typer.Argument(help="Agent id.")],
    about: Annotated[str, typer.Argument(help="What it should (or should not) remember.")],
    user: Annotated[str | None, typer.Option("--user", "-u")] = None,
    company: Annotated[str | None, typer.Option("--company", "-c")] = None,
    limit: Annotated[int, typer.Option(help="How many matching notes to explain.")] = 10,
    as_json: JsonOption = False,
) -> None:
    """Why does (or doesn't) AGENT remember ABOUT for this user? Each matching note: status,
    scope match, expiry, rank under the agent's strategy and cap, and its history."""
    from worker.explain import explain as run_explain
    from worker.payloads import Invalid, parse_request_scope
    from worker.runtime import get_runtime

    request = parse_request_scope({"agent_id": agent_id, "user_id": user,
                                   "company_id": company})
    if isinstance(request, Invalid):
        raise typer.BadParameter(request.reason)
    explanations = run_explain(get_runtime().context_deps(), request, about, limit=limit)
    if as_json:
        _dump([e.as_dict() for e in explanations])
        return
    if not explanations:
        console.print(f"no note of agent {agent_id} matches {about!r} by words or meaning")
        return
    for e in explanations:
        colour = "green" if e.injected else "yellow"
        console.print(f"[bold]{e.note}[/bold]  ({str(e.note_id)[:8]})")
        console.print(f"  [{colour}]{e.verdict}[/{colour}]")
        for name, check in e.checks.items():
            console.print(f"  {name:<7} {check}")
        for h in e.history:
            who = f"run {h['run_id']} #{h['seq']}" if h["source"] == "write" else h["actor"]
            console.print(f"  history {h['at']}  {who}: {h['action']} — {h['reason']}")


def stats(as_json: JsonOption = False) -> None:
    """Notes by status, author and type; pending writes; the last cycle; the oldest
    provisional note."""
    from db.queries.stats import overview
    from worker.runtime import get_runtime

    runtime = get_runtime()
    with runtime.db.read() as conn:
        summary = overview(conn)
    summary["pending_writes"] = _queue_length(runtime.settings)
    if as_json:
        _dump(summary)
        return
    for title in ("notes_by_status", "notes_by_author", "notes_by_type"):
        console.print(f"{title.replace('_', ' ')}: " + ", ".join(
            f"{k} {v}" for k, v in sorted(summary[title].items())))
    console.print(f"pending writes: {summary['pending_writes']}")
    console.print(f"oldest provisional note: {summary['oldest_provisional_age_s']:.0f} s old")
    last = summary["last_cycle"]
    console.print("last cycle: none" if last is None else
                  f"last cycle: #{last['id']} {last['status']} at {last['started_at']}"
                  f"{' (maintenance)' if last['maintenance'] else ''}")
    console.print(f"skipped cycles: {summary['skipped_cycles']}")
    console.print(f"chain continuations waiting for the broker: "
                  f"{summary['waiting_continuations']}")
    console.print(f"dead letters: {summary['dead_letters']} (memory-worker dead-letters list)")


def _queue_length(settings: Any) -> int | None:
    """Messages waiting in the write queue (Redis list), or None if Redis is unreachable."""
    import redis

    try:
        client = redis.Redis.from_url(settings.require_redis_url(), socket_timeout=2)
        return int(client.llen(settings.write_queue))
    except Exception:
        return None


def write(
    agent_id: Annotated[str, typer.Argument(help="Agent id.")],
    note: Annotated[str, typer.Argument(help="The note, as the agent would write it.")],
    user: Annotated[str | None, typer.Option("--user", "-u")] = None,
    company: Annotated[str | None, typer.Option("--company", "-c")] = None,
    type_: Annotated[str, typer.Option("--type", help="Preference or Context")] = "Preference",
    run_id: Annotated[str | None, typer.Option(help="Default: a new run.")] = None,
    scope_hint: Annotated[str | None, typer.Option(help="user or agent")] = None,
    source: Annotated[str, typer.Option(help="The run's source.")] = "user",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the result.")] = 60.0,
    as_json: JsonOption = False,
) -> None:
    """Enqueue one write as an agent service would (needs a running worker) and print its
    disposition."""
    from worker.client import enqueue_memory_writes

    run: dict[str, Any] = {"run_id": run_id or f"cli-{uuid.uuid4().hex[:12]}",
                           "agent_id": agent_id, "source": source}
    if user:
        run["user_id"] = user
    if company:
        run["company_id"] = company
    request: dict[str, Any] = {"note": note, "type": type_}
    if scope_hint:
        request["scope_hint"] = scope_hint
    [result] = enqueue_memory_writes(run, [request]).results(timeout=timeout)
    if as_json:
        _dump(result)
        return
    console.print(f"{result['disposition']}: {result['reason']}")
    if result.get("note_id"):
        console.print(f"note {result['note_id']} (run {result['run_id']}, seq {result['seq']})")
