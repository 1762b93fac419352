"""An operator's tasks: forgetting a subject, exporting it, reviewing memory candidates.
Thin, like worker/app/tasks.py: message in, plain-module call, JSON out."""

from __future__ import annotations

from typing import Any

from worker.app import task_names
from worker.app.arguments import surplus_arguments
from worker.celery_app import app
from worker.runtime import get_runtime
from worker.writes.payloads import Invalid, parse_id_value


def _subject_argument(subject: Any, requested_by: Any, *, requester_needed: bool = True) -> Any:
    """The `subject` object of memory.forget / memory.export as a Subject, or the error
    answer; and who asked, unless not needed (a dry run). Checked in full before anything
    is written: a refused request leaves no audit record, fence or file."""
    from worker.erasure import SubjectError, subject_from_request
    from worker.erasure.audit import REQUESTED_BY_ERROR, valid_requester

    try:
        parsed = subject_from_request(subject)
    except SubjectError as exc:
        return {"ok": False, "error": str(exc)}
    if requester_needed and not valid_requester(requested_by):
        return {"ok": False, "error": REQUESTED_BY_ERROR}
    return parsed


# Acknowledged late: an erasure whose worker died is delivered again, and running it again
# is harmless (the fence only moves forward; what is gone is not found twice).
@app.task(name=task_names.FORGET, acks_late=True)
def memory_forget(subject: Any = None, requested_by: Any = None, dry_run: Any = False,
                  *extra: Any, **unexpected: Any) -> dict[str, Any]:
    """Erase a subject (`{"kind": "user"|"company"|"agent"|"conversation", "subject_id": …,
    "within_agent"?, "within_company"?}`, the last two narrowing a user): counts per table
    and the audit record's id. `dry_run`: only count. The keys are not the usual `user_id`
    / `agent_id` on purpose: the masking allow-list shows those in Flower and logs, and an
    erasure request must not put the ids it erases there."""
    from worker.erasure import forget

    surplus = surplus_arguments(task_names.FORGET, "(subject, requested_by, dry_run)", extra,
                                 unexpected)
    if surplus:
        return surplus
    # Anything but true or false is refused: a dry run asked as "true" must not erase.
    if not isinstance(dry_run, bool):
        return {"ok": False, "error": "dry_run must be true or false"}
    parsed = _subject_argument(subject, requested_by, requester_needed=not dry_run)
    if isinstance(parsed, dict):
        return parsed
    runtime = get_runtime()
    settings = runtime.settings
    report = forget(runtime.db, parsed, requested_by=str(requested_by or "dry-run"),
                    dry_run=dry_run, redis_url=settings.require_redis_url(),
                    embedding_model=settings.embedding_model)
    return report.as_dict()


# Acknowledged late: an export whose worker died is delivered again and simply runs again
# (a new file and audit record). Retention closes the interrupted record a day later and
# deletes its `.partial` file with the export-file window.
@app.task(name=task_names.EXPORT, acks_late=True)
def memory_export(subject: Any = None, requested_by: Any = None, *extra: Any,
                  **unexpected: Any) -> dict[str, Any]:
    """Export everything held about a subject (the `subject` object of `memory.forget`) as
    a JSON Lines file under `export_dir` on the worker's host: the file's path, counts per
    table and the audit record's id; never the text."""
    from worker.erasure.export import export_into

    surplus = surplus_arguments(task_names.EXPORT, "(subject, requested_by)", extra,
                                 unexpected)
    if surplus:
        return surplus
    parsed = _subject_argument(subject, requested_by)
    if isinstance(parsed, dict):
        return parsed
    runtime = get_runtime()
    path, report = export_into(runtime.db, parsed, runtime.settings.export_directory(),
                               requested_by=str(requested_by))
    return {**report.as_dict(), "path": str(path)}


# --- memory candidates (SPEC 5; worker/writes/candidates.py) ---------------------------------
# On the write queue: a promotion is a write of the candidate's run and takes its lock.

def _candidate_task(action: Any) -> dict[str, Any]:
    from worker.writes.candidates import CandidateError

    try:
        return dict(action().as_dict())
    except CandidateError as exc:
        return {"ok": False, "error": str(exc)}


@app.task(name=task_names.CANDIDATE_PROMOTE, acks_late=True)
def memory_candidate_promote(candidate_id: Any = None, rewrite: Any = None,
                             actor: Any = None, *extra: Any, **unexpected: Any
                             ) -> dict[str, Any]:
    """Promote a held candidate into a (provisional) note, optionally rewritten first."""
    from worker.writes.candidates import promote_candidate

    surplus = surplus_arguments(task_names.CANDIDATE_PROMOTE, "(candidate_id, rewrite, actor)",
                                 extra, unexpected)
    if surplus:
        return surplus

    deps = get_runtime().write_deps()
    return _candidate_task(lambda: promote_candidate(deps, candidate_id, rewrite=rewrite,
                                                     actor=actor))


@app.task(name=task_names.CANDIDATE_REJECT, acks_late=True)
def memory_candidate_reject(candidate_id: Any = None, reason: Any = None,
                            actor: Any = None, *extra: Any, **unexpected: Any
                            ) -> dict[str, Any]:
    """Reject a held candidate; it is never injected."""
    from worker.writes.candidates import reject_candidate

    surplus = surplus_arguments(task_names.CANDIDATE_REJECT, "(candidate_id, reason, actor)",
                                 extra, unexpected)
    if surplus:
        return surplus

    deps = get_runtime().write_deps()
    return _candidate_task(lambda: reject_candidate(deps, candidate_id, reason=reason,
                                                    actor=actor))


# The result carries candidate text: keep it out of worker logs and task events (Flower).
@app.task(name=task_names.CANDIDATE_LIST, resultrepr_maxsize=1)
def memory_candidate_list(agent_id: Any = None, run_id: Any = None, status: Any = "candidate",
                          limit: Any = 100, *extra: Any, **unexpected: Any) -> dict[str, Any]:
    """Candidates of an agent and/or run, oldest first, with their text."""
    from worker.writes.candidates import list_candidates

    surplus = surplus_arguments(task_names.CANDIDATE_LIST, "(agent_id, run_id, status, limit)",
                                 extra, unexpected)
    if surplus:
        return surplus
    agent = parse_id_value(agent_id, "agent_id", required=False)
    run = parse_id_value(run_id, "run_id", required=False)
    if isinstance(agent, Invalid) or isinstance(run, Invalid):
        return {"ok": False, "error": next(p.reason for p in (agent, run)
                                           if isinstance(p, Invalid))}
    if status is not None and not isinstance(status, str):
        return {"ok": False, "error": "status must be a string"}
    if isinstance(limit, bool) or not isinstance(limit, int):
        return {"ok": False, "error": "limit must be an integer"}
    found = list_candidates(get_runtime().write_deps(), agent_id=agent, run_id=run,
                            status=status, limit=limit)
    return {"ok": True, "candidates": found}
