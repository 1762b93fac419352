"""`memory-worker candidates list|promote|reject`: internal memory held for review (SPEC 5).
Registered by worker/cli/__init__.py.

`list` prints the candidates' text (it is the operator's review queue); promote and reject
print only ids and outcomes. `--via-worker` sends promote/reject to the write queue instead of
running them here (same code, same run lock).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.table import Table

from worker.cli.output import JsonOption, console, database_reachable, dump

candidates_cli = typer.Typer(
    help="Internal memory (reflection, self-learning, delegation, tools) held as candidates: "
         "list, promote into notes, reject.",
    no_args_is_help=True,
)
ActorOption = Annotated[str, typer.Option(help="Who decides (recorded).")]
ViaWorker = Annotated[bool, typer.Option("--via-worker",
                                         help="Send it to the write queue instead.")]


def _print(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        dump(result)
    elif result.get("ok"):
        note = f" note {result['note_id']}" if result.get("note_id") else ""
        console.print(f"{result['candidate_id']}: {result['status']}"
                      f"{' (unchanged)' if not result['changed'] else ''}{note} — "
                      f"{result['reason']}", markup=False)
    else:
        console.print(f"error: {result.get('error')}", markup=False)
    if not result.get("ok"):
        raise typer.Exit(1)


@candidates_cli.command("list")
def candidates_list(
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="Only this agent's.")] = None,
    run: Annotated[str | None, typer.Option("--run", "-r", help="Only this run's.")] = None,
    status: Annotated[str, typer.Option(help="candidate, promoted, rejected or all.")]
    = "candidate",
    limit: Annotated[int, typer.Option(help="Oldest first.")] = 100,
    as_json: JsonOption = False,
) -> None:
    """Candidates of an agent and/or run."""
    from worker.runtime import get_runtime
    from worker.writes.candidates import list_candidates

    database_reachable()  # before write_deps loads the embedding model
    found = list_candidates(get_runtime().write_deps(), agent_id=agent, run_id=run,
                            status=None if status == "all" else status, limit=limit)
    if as_json:
        print(json.dumps(found, indent=2, default=str, ensure_ascii=False))
        return
    table = Table("id", "created", "status", "held for", "source", "agent", "user", "run", "type",
                  "note")
    for c in found:
        table.add_row(c["candidate_id"], c["created_at"][:16], c["status"],
                      c["held_reason"] or "", c["source"], c["agent_id"], c["user_id"] or "",
                      c["run_id"], c["type"], c["note"])
    console.print(table)


def _decide(task_name: str, decide: Callable[..., Any], candidate_id: str, *, actor: str,
            via_worker: bool, **options: Any) -> dict[str, Any]:
    """One decision on a candidate: here, or by a worker running the same function."""
    if via_worker:
        from worker.app import operator_tasks

        task = getattr(operator_tasks, task_name)
        result: dict[str, Any] = task.apply_async(kwargs={
            "candidate_id": candidate_id, "actor": actor, **options}).get(timeout=60)
        return result
    from worker.runtime import get_runtime
    from worker.writes.candidates import CandidateError

    database_reachable()
    try:
        decided: dict[str, Any] = decide(get_runtime().write_deps(), candidate_id, actor=actor,
                                         **options).as_dict()
    except CandidateError as exc:
        return {"ok": False, "error": str(exc)}
    return decided


@candidates_cli.command("promote")
def candidates_promote(
    candidate_id: str,
    rewrite: Annotated[str | None, typer.Option(help="Store this text instead.")] = None,
    actor: ActorOption = "operator",
    via_worker: ViaWorker = False,
    as_json: JsonOption = False,
) -> None:
    """Write a candidate as a note through the normal pipeline (dedupe, scope, TTL)."""
    from worker.writes.candidates import promote_candidate

    _print(_decide("memory_candidate_promote", promote_candidate, candidate_id, actor=actor,
                   via_worker=via_worker, rewrite=rewrite), as_json)


@candidates_cli.command("reject")
def candidates_reject(
    candidate_id: str,
    reason: Annotated[str | None, typer.Option(help="Why (recorded; never note text).")]
    = None,
    actor: ActorOption = "operator",
    via_worker: ViaWorker = False,
    as_json: JsonOption = False,
) -> None:
    """Reject a candidate: it is kept for audit and never injected."""
    from worker.writes.candidates import reject_candidate

    _print(_decide("memory_candidate_reject", reject_candidate, candidate_id, actor=actor,
                   via_worker=via_worker, reason=reason), as_json)
