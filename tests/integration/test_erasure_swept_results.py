"""An erasure removes from the result backend every task result that names the subject or
anything of the subject's — its conversations (recorded or not) and its runs — whatever the
subject's kind; another subject's results stay. The tasks run on a real worker and store
their results as Celery does; the erasure runs as the memory.forget task."""

from __future__ import annotations

import pytest

from tests.erasure_helpers import redis_hits
from tests.helpers import Writer, run_context

VICTIM = "swept-victim-3391"
VICTIM_AGENT = "swept-agent-3391"
VICTIM_COMPANY = "swept-company-3391"
RECORDED = "conv-recorded-3391"
UNRECORDED = "conv-unrecorded-3391"  # named by the victim's run, never recorded
VICTIM_RUN = "run-swept-3391"
NEEDLES = [VICTIM, VICTIM_AGENT, VICTIM_COMPANY, RECORDED, UNRECORDED, VICTIM_RUN]


def _send(name: str, *args):
    from worker.celery_app import app

    result = app.send_task(name, args=list(args))
    result.get(timeout=30)
    return result.id


def _record(conversation_id: str, agent: str, user: str, company: str, run: str) -> str:
    from worker.app import task_names

    return _send(task_names.CONVERSATION_RECORD, {
        "conversation": {"id": conversation_id, "agent_id": agent, "user_id": user,
                         "company_id": company, "agent_run_id": run},
        "messages": [{"id": f"msg-{conversation_id}", "role": "user",
                      "text": "Please remember that I keep an iguana."}]})


def _stored(task_id: str) -> bool:
    from worker.celery_app import app

    return app.backend.client.exists(app.backend.get_key_for_task(task_id)) == 1


@pytest.mark.usefixtures("celery_worker")
@pytest.mark.parametrize("kind, subject_id", [("user", VICTIM), ("company", VICTIM_COMPANY),
                                              ("agent", VICTIM_AGENT)])
def test_an_erasure_removes_the_results_naming_its_conversations_and_runs(
        kind, subject_id, services):
    from worker.app import task_names
    from worker.client import enqueue_memory_writes, forget_subject

    run = run_context(VICTIM_RUN, agent=VICTIM_AGENT, user=VICTIM, company=VICTIM_COMPANY,
                      conversation_id=UNRECORDED)
    write = enqueue_memory_writes(run, [{"note": "User keeps an iguana.",
                                         "type": "Preference"}])
    assert write.results()[0]["disposition"] == "written"
    # Its result names the conversation and nothing else of the victim.
    recorded = _record(RECORDED, VICTIM_AGENT, VICTIM, VICTIM_COMPANY, VICTIM_RUN)
    context = _send(task_names.CONTEXT, {"agent_id": VICTIM_AGENT, "user_id": VICTIM,
                                         "company_id": VICTIM_COMPANY})
    other = _record("conv-other-3391", "agent-other", "user-other", "company-other",
                    "run-other-3391")
    assert all(_stored(t) for t in (*write.task_ids, recorded, context, other))

    report = forget_subject(kind, subject_id, requested_by="dpo")
    assert report["ok"], report

    assert not any(_stored(t) for t in (*write.task_ids, recorded, context))
    assert _stored(other)
    assert redis_hits(services.redis_url, NEEDLES) == []


def test_a_result_naming_a_conversation_only_the_users_run_names_goes(runtime, services):
    """The conversation has no row (never recorded here, or its row already gone): the
    erasure finds it through the run, for the dry run's count and for the deletion."""
    from worker.celery_app import app
    from worker.erasure import Subject, forget

    Writer(runtime.write_deps())(run_context(VICTIM_RUN, user=VICTIM,
                                             conversation_id=UNRECORDED),
                                 "User keeps an iguana.")
    app.backend.store_result("result-naming-3391", {"ok": True, "conversation_id": UNRECORDED,
                                                    "messages": []}, "SUCCESS")
    app.backend.store_result("result-of-another-3391", {"ok": True,
                                                        "conversation_id": "conv-x"},
                             "SUCCESS")

    def erase(dry_run: bool):
        return forget(runtime.db, Subject("user", VICTIM), requested_by="dpo",
                      dry_run=dry_run, redis_url=services.redis_url)

    assert erase(dry_run=True).counts["redis_task_results"] == 1
    assert erase(dry_run=False).counts["redis_task_results"] == 1
    assert not _stored("result-naming-3391") and _stored("result-of-another-3391")
    assert redis_hits(services.redis_url, NEEDLES) == []


def test_an_erasure_deletes_the_write_records_of_the_subjects_writes(runtime, services):
    """Writes accepted and not yet applied (no worker here) hold their text in their
    records: an erasure of their user deletes those — found by the run they carry, even
    for a run Postgres has never seen — and keeps another user's."""
    import redis

    from worker.client import RecordedTask, record_writes
    from worker.delivery.records import DUE_KEY, records_key
    from worker.erasure import Subject, forget

    def record(run_id: str, user: str, note: str) -> None:
        record_writes(run_id, [RecordedTask("memory.write", f"task-{run_id}", [
            run_context(run_id, user=user), {"note": note, "type": "Preference"}])])

    record("run-unseen-3391", VICTIM, "User's home address is 4 Rue de Lyon.")
    record("run-other-3391", "user-other", "User keeps a parrot.")

    def erase(dry_run: bool):
        return forget(runtime.db, Subject("user", VICTIM), requested_by="dpo",
                      dry_run=dry_run, redis_url=services.redis_url)

    assert erase(dry_run=True).counts["redis_write_records"] == 1
    client = redis.Redis.from_url(services.redis_url)
    assert client.exists(records_key("run-unseen-3391")) == 1, "a dry run deletes nothing"
    assert erase(dry_run=False).counts["redis_write_records"] == 1
    assert client.exists(records_key("run-unseen-3391")) == 0
    assert client.exists(records_key("run-other-3391")) == 1
    assert [m.decode().split("|", 1)[1] for m in client.zrange(DUE_KEY, 0, -1)] == [
        "run-other-3391"]
    assert redis_hits(services.redis_url, ["4 Rue de Lyon", VICTIM]) == []
