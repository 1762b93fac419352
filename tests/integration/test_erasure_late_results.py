"""A task that read or wrote a subject's rows before an erasure but stores its result after
the erasure swept the result backend deletes that result itself (worker/app/erased_results.py);
refusals, other subjects' results and results of tasks begun afterwards stay."""

from __future__ import annotations

import uuid

import worker.app.operator_tasks
import worker.app.tasks  # noqa: F401
from tests.erasure_helpers import redis_hits
from tests.helpers import run_context
from worker.app import task_names

VICTIM = "late-victim-204"


def _erase(runtime, user: str) -> None:
    from worker.erasure import Subject, forget

    forget(runtime.db, Subject("user", user), requested_by="dpo", dry_run=False,
           redis_url=runtime.settings.require_redis_url(),
           embedding_model=runtime.settings.embedding_model)


def _finish(task_name: str, args: tuple, result: dict, *, erase_between=None) -> str:
    """Run the task's signal hooks around a result stored the way Celery stores it: prerun,
    then (optionally) an erasure, then the stored result, then postrun."""
    from celery import signals

    from worker.celery_app import app

    task = app.tasks[task_name]
    task_id = str(uuid.uuid4())
    signals.task_prerun.send(sender=task, task_id=task_id, task=task, args=args, kwargs={})
    if erase_between is not None:
        erase_between()
    task.backend.store_result(task_id, result, "SUCCESS")
    signals.task_postrun.send(sender=task, task_id=task_id, task=task, args=args, kwargs={},
                              retval=result, state="SUCCESS")
    return task_id


def _stored(task_id: str) -> bool:
    from worker.celery_app import app

    return app.backend.client.exists(app.backend.get_key_for_task(task_id)) == 1


def test_a_context_result_stored_after_the_sweep_is_deleted(runtime, seed, services):
    from worker.celery_app import app

    seed("User's locker code is 4471.", user=VICTIM)
    request = {"agent_id": "A", "user_id": VICTIM, "company_id": "C",
               "input_text": "What is the locker code?"}
    # The real task body read the victim's memory before the erasure ...
    result = app.tasks[task_names.CONTEXT](request)
    assert "4471" in result["rendered"]
    # ... and Celery stores it only after the erasure swept the backend.
    task_id = _finish(task_names.CONTEXT, (request,), result,
                      erase_between=lambda: _erase(runtime, VICTIM))
    assert not _stored(task_id)
    assert redis_hits(services.redis_url, [VICTIM, "4471"]) == []


def test_a_write_result_naming_the_erased_run_is_deleted_and_a_refusal_stays(
        runtime, write, services):
    run = run_context("late-run-1", user=VICTIM)
    applied = write(run, "User's bike is a green Brompton.")
    assert applied["disposition"] in ("written", "provisional"), applied
    named = _finish(task_names.WRITE, (run,), applied,
                    erase_between=lambda: _erase(runtime, VICTIM))
    assert not _stored(named)
    refused = write(run, "User's bike lock is in the hall.")
    assert refused["disposition"] == "rejected-erased" and refused["run_id"] is None
    # A refusal of the erased run that overlapped the erasure names nothing: it stays, the
    # client gets its answer.
    kept = _finish(task_names.WRITE, (run,), refused,
                   erase_between=lambda: _erase(runtime, VICTIM))
    assert _stored(kept)
    assert redis_hits(services.redis_url, [VICTIM]) == []


def test_other_subjects_and_tasks_begun_after_the_erasure_keep_their_results(
        runtime, write, services):
    other_run = run_context("late-run-2", user="someone-else")
    other = write(other_run, "User's favourite tea is sencha.")
    overlapping = _finish(task_names.WRITE, (other_run,), other,
                          erase_between=lambda: _erase(runtime, VICTIM))
    assert _stored(overlapping)

    _erase(runtime, VICTIM)
    new_run = run_context("late-run-3", user=VICTIM)
    # A new run's write result, as the worker would store it (the write path itself refuses
    # a run begun in the second after an erasure: test_erasure covers new runs).
    new = {**other, "run_id": "late-run-3",
           "final_scope": {**other["final_scope"], "user_id": VICTIM}}
    after = _finish(task_names.WRITE, (new_run,), new)
    assert _stored(after), "a new run begun after the erasure keeps its result"


def test_a_conversation_record_result_stored_after_the_sweep_is_deleted(runtime, services):
    from worker.celery_app import app

    payload = {"conversation": {"id": "late-conv-204", "agent_id": "A", "user_id": VICTIM,
                                "company_id": "C", "agent_run_id": "late-run-9"},
               "messages": [{"id": "late-msg-1", "role": "user", "text": "I have a cat."}]}
    # The real task body recorded the victim's conversation before the erasure; its result
    # names only the conversation ...
    result = app.tasks[task_names.CONVERSATION_RECORD](payload)
    assert result["ok"] and set(result) == {"ok", "conversation_id", "messages"}, result
    # ... and Celery stores it only after the erasure swept the backend.
    task_id = _finish(task_names.CONVERSATION_RECORD, (payload,), result,
                      erase_between=lambda: _erase(runtime, VICTIM))
    assert not _stored(task_id)
    assert redis_hits(services.redis_url, [VICTIM, "late-conv-204"]) == []

    # Queued before the erasure, recorded after it: refused, and the refusal stays.
    refused = app.tasks[task_names.CONVERSATION_RECORD](payload)
    assert refused["disposition"] == "rejected-erased", refused
    kept = _finish(task_names.CONVERSATION_RECORD, (payload,), refused,
                   erase_between=lambda: _erase(runtime, VICTIM))
    assert _stored(kept)
