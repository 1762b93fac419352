"""`memory-worker context|write|explain|stats`: the memory as an agent sees it, written as
an agent service would, and explained for an operator. Registered by worker/cli/__init__.py.

Unlike logs, traces and Flower, these commands print note text: they are the operator's
window into the memory.
"""

from __future__ import annotations

import contextlib
import json
import sys
import uuid
from typing import Annotated, Any

import typer

from worker.cli.output import JsonOption, console, database_reachable, dump


def context(
    agent_id: Annotated[str, typer.Argument(help="Agent id.")],
    input_text: Annotated[str | None, typer.Argument(help="The run's input.")] = None,
    user: Annotated[str | None, typer.Option("--user", "-u", help="The run's user id.")] = None,
    company: Annotated[str | None, typer.Option("--company", "-c",
                                                help="The run's company id.")] = None,
    primary: Annotated[str | None, typer.Option(help="Tenant record as Entity:record_id.")] = None,
    scope: Annotated[list[str] | None, typer.Option(help="Secondary dimension=value.")] = None,
    shared_only: Annotated[bool, typer.Option(help="An audience is present.")] = False,
    policy: Annotated[bool, typer.Option(help="Include the <memory_policy> block.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the notes as JSON.")] = False,
) -> None:
    """Print the memory context an agent would receive (nothing is recorded as accessed)."""
    from db.scope import ScopeError
    from worker.reads.context import build_context
    from worker.runtime import get_runtime
    from worker.writes.payloads import Invalid, parse_request_scope

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
    database_reachable()
    try:
        result = build_context(get_runtime().context_deps(), request, input_text,
                               include_policy=policy, record_access=False)
    except ScopeError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if as_json:
        print(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(result.rendered or "(no memory to inject)\n")
        if not result.rendered:
            # The question that follows is "why not?": say which command answers it.
            print(f"(why a note is not here: memory-worker explain {agent_id} "
                  "'words from the note')", file=sys.stderr)


def explain(
    agent_id: Annotated[str, typer.Argument(help="Agent id.")],
    about: Annotated[str, typer.Argument(help="What it should (or should not) remember.")],
    user: Annotated[str | None, typer.Option("--user", "-u", help="The run's user id.")] = None,
    company: Annotated[str | None, typer.Option("--company", "-c",
                                                help="The run's company id.")] = None,
    limit: Annotated[int, typer.Option(help="How many matching notes to explain.")] = 10,
    as_json: JsonOption = False,
) -> None:
    """Why does (or doesn't) AGENT remember ABOUT for this user? Each matching note: status,
    scope match, expiry, rank under the agent's strategy and cap, and its history."""
    from worker.reads.explain import explain as run_explain
    from worker.runtime import get_runtime
    from worker.writes.payloads import Invalid, parse_request_scope

    request = parse_request_scope({"agent_id": agent_id, "user_id": user,
                                   "company_id": company})
    if isinstance(request, Invalid):
        raise typer.BadParameter(request.reason)
    database_reachable()
    explanations = run_explain(get_runtime().context_deps(), request, about, limit=limit)
    if as_json:
        dump([e.as_dict() for e in explanations])
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
    summary["recorded_writes"], summary["oldest_recorded_write_age_s"] = _recorded_writes(
        runtime.settings)
    if as_json:
        dump(summary)
        return
    for title in ("notes_by_status", "notes_by_author", "notes_by_type"):
        console.print(f"{title.replace('_', ' ')}: " + ", ".join(
            f"{k} {v}" for k, v in sorted(summary[title].items())))
    console.print(f"pending writes: {summary['pending_writes']}")
    oldest = summary["oldest_recorded_write_age_s"]
    console.print(f"writes accepted, not yet applied: {summary['recorded_writes']}"
                  + ("" if oldest is None else f" (oldest {oldest:.0f} s)"))
    if summary["notes_by_status"].get("Provisional"):
        console.print(
            f"oldest provisional note: {summary['oldest_provisional_age_s']:.0f} s old")
    else:
        console.print("oldest provisional note: none")
    last = summary["last_cycle"]
    console.print("last cycle: none" if last is None else
                  f"last cycle: #{last['id']} {last['status']} at {last['started_at']}"
                  f"{' (maintenance)' if last['maintenance'] else ''}")
    console.print(f"skipped cycles: {summary['skipped_cycles']}")
    console.print(f"chain continuations waiting for the broker: "
                  f"{summary['waiting_continuations']}")
    console.print(f"dead letters: {summary['dead_letters']} (memory-worker dead-letters list)")


def _queue_length(settings: Any) -> int | None:
    """Messages waiting in the write queue (a Redis list, or a RabbitMQ queue), or None if
    the broker is unreachable."""
    try:
        if settings.broker_kind == "rabbitmq":
            from kombu import Connection

            from worker.app.rabbitmq import queue_length

            with Connection(settings.broker_url,
                            connect_timeout=settings.redis_connect_timeout_s) as connection:
                return queue_length(connection, settings.write_queue)
        import redis

        client = redis.Redis.from_url(settings.require_broker_url(), socket_timeout=2,
                                      socket_connect_timeout=settings.redis_connect_timeout_s)
        return int(client.llen(settings.write_queue))
    except Exception:
        return None


def _recorded_writes(settings: Any) -> tuple[int | None, float | None]:
    """Writes their clients recorded that are not applied yet, and the oldest one's age
    (worker/delivery/records.py); None when Redis is unreachable."""
    from worker.delivery.records import write_records

    try:
        records = write_records(settings.require_redis_url())
        return records.pending() if records is not None else (None, None)
    except Exception:
        return None, None


def write(
    agent_id: Annotated[str, typer.Argument(help="Agent id.")],
    note: Annotated[str, typer.Argument(help="The note, as the agent would write it.")],
    user: Annotated[str | None, typer.Option("--user", "-u", help="The run's user id.")] = None,
    company: Annotated[str | None, typer.Option("--company", "-c",
                                                help="The run's company id.")] = None,
    type_: Annotated[str, typer.Option("--type", help="Preference or Context")] = "Preference",
    run_id: Annotated[str | None, typer.Option(help="Default: a new run.")] = None,
    scope_hint: Annotated[str | None, typer.Option(help="user or agent")] = None,
    source: Annotated[str, typer.Option(help="The run's source.")] = "user",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the result.")] = 60.0,
    as_json: JsonOption = False,
) -> None:
    """Enqueue one write as an agent service would (needs a running worker) and print its
    disposition."""
    from celery.exceptions import TimeoutError as CeleryTimeout

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
    enqueued = enqueue_memory_writes(run, [request])
    answered: list[dict[str, Any]] | None = None
    with contextlib.suppress(CeleryTimeout):  # said below, outside the handler
        answered = enqueued.results(timeout=timeout)
    if answered is None:
        print(f"memory-worker: the write is queued (run {run['run_id']}, task "
              f"{enqueued.task_ids[0]}) but no worker answered within {timeout:g} s; it is "
              "applied when a worker runs: `memory-worker up`, or `memory-worker worker`",
              file=sys.stderr)
        raise typer.Exit(1)
    [result] = answered
    if as_json:
        dump(result)
        return
    console.print(f"{result['disposition']}: {result['reason']}")
    if result.get("note_id"):
        console.print(f"note {result['note_id']} (run {result['run_id']}, seq {result['seq']})")
