"""Erasing a user while a real worker process applies that user's queued writes and another
user's: afterwards nothing anywhere names the erased user, the other lost nothing, and the
erased user's late writes were refused with `rejected-erased`.

Which of the concurrent writes land before the erasure depends on timing (on a loaded machine
the erasure can come after all of them); the held-back run does not: its numbers are reserved
before the erasure and its writes delivered after it, as a backlog reaches the worker."""

from __future__ import annotations

from tests.erasure_helpers import database_hits, redis_hits
from tests.helpers import DISTINCT_FACTS, rows, wait_until
from worker.client import Reservation

VICTIM = "victim-5830"
OTHER = "other-1164"
MARKER = "Quokkaberry"  # in every victim note, in no other
RUNS, PER_RUN = 8, 5  # per_run_cap is 5 new notes


def _run(user: str, number: int) -> dict[str, str]:
    return {"run_id": f"run-{user}-{number}", "agent_id": "A", "user_id": user,
            "company_id": "acme", "conversation_id": f"conv-{user}-{number}"}


def _deliver_reserved(run: dict[str, str], writes: list[dict[str, str]],
                      reserved: Reservation) -> list[str]:
    """Publish a chain of writes whose numbers were reserved earlier; their task ids."""
    from celery import chain

    from worker.app.tasks import memory_write

    prevs = [reserved.prev, *reserved.seqs[:-1]]
    signatures = [memory_write.si(run, write, seq, prev)
                  for write, seq, prev in zip(writes, reserved.seqs, prevs, strict=True)]
    for signature in signatures:
        signature.freeze()
    chain(*signatures).apply_async()
    return [str(signature.id) for signature in signatures]


def test_erasing_a_user_while_their_writes_are_applied(services, system_worker, runtime):
    import redis
    from celery.result import AsyncResult

    from worker.celery_app import app
    from worker.client import enqueue_memory_writes, reserve_sequence_numbers
    from worker.erasure import Subject, forget

    enqueued = []
    for number in range(RUNS):
        facts = DISTINCT_FACTS[number * PER_RUN:(number + 1) * PER_RUN]
        enqueued.append(("victim", enqueue_memory_writes(
            _run(VICTIM, number),
            [{"note": f"{MARKER} says: {fact}", "type": "Preference"} for fact in facts])))
        enqueued.append(("other", enqueue_memory_writes(
            _run(OTHER, number), [{"note": fact, "type": "Preference"} for fact in facts])))
    held = _run(VICTIM, RUNS)
    held_writes = [{"note": f"{MARKER} adds: {fact}", "type": "Preference"}
                   for fact in DISTINCT_FACTS[:PER_RUN]]
    held_reserved = reserve_sequence_numbers(held["run_id"], PER_RUN)

    # Erase once the worker is applying the victim's writes, with most still queued.
    wait_until(lambda: rows(services.database_url, "SELECT 1 FROM notes WHERE user_id = %s",
                            VICTIM), timeout=60, interval=0.01)
    report = forget(runtime.db, Subject("user", VICTIM), requested_by="dpo",
                    dry_run=False, redis_url=services.redis_url,
                    embedding_model=runtime.settings.embedding_model)
    assert report.counts["notes"] >= 1

    held_tasks = _deliver_reserved(held, held_writes, held_reserved)
    held_results = [AsyncResult(t, app=app).get(timeout=120) for t in held_tasks]
    assert [r["disposition"] for r in held_results] == ["rejected-erased"] * PER_RUN

    results: dict[str, list] = {"victim": held_results, "other": []}
    for who, batch in enqueued:
        if who == "other":
            results[who] += batch.results(timeout=120)
    # The results of victim writes applied before the erasure were erased with them (they
    # name the run and scope): wait for the queue to drain, then read what is left.
    client = redis.Redis.from_url(services.redis_url)
    wait_until(lambda: client.llen("memory.writes") == 0 and not client.hlen("unacked"),
               timeout=120, interval=0.2)
    for who, batch in enqueued:
        if who == "victim":
            for task_id in batch.task_ids:
                result = AsyncResult(task_id, app=app)
                if result.ready():
                    results[who].append(result.get(timeout=5))
    victim = [r["disposition"] for r in results["victim"]]
    assert "rejected-erased" in victim, victim
    assert set(victim) == {"rejected-erased"}, victim  # the applied ones' results are gone
    assert all(r["run_id"] is None and r["final_scope"] is None for r in results["victim"])
    assert [r["disposition"] for r in results["other"]] == ["written"] * RUNS * PER_RUN

    needles = [VICTIM, MARKER]
    assert database_hits(services.database_url, needles) == []
    assert redis_hits(services.redis_url, needles) == []
    assert len(rows(services.database_url, "SELECT 1 FROM notes WHERE user_id = %s",
                    OTHER)) == RUNS * PER_RUN
    assert len(rows(services.database_url, "SELECT 1 FROM runs WHERE user_id = %s",
                    OTHER)) == RUNS
    # A fence, an audit record; neither holds the id.
    assert len(rows(services.database_url, "SELECT 1 FROM erasure_fences")) == 1
    [audit] = rows(services.database_url, "SELECT * FROM erasures")
    assert audit["status"] == "done" and audit["requested_by"] == "dpo"
