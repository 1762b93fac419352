"""A run's `conversation_id` is provenance, not a reference that can go stale: notes of a run
whose conversation was never recorded survive maintenance; a conversation that was recorded
and then deleted makes its notes' reference stale."""

from __future__ import annotations

import psycopg

from tests.helpers import notes, rows
from tests.system.conftest import send


def _run(run_id: str, conversation_id: str) -> dict:
    return {"run_id": run_id, "agent_id": "A", "user_id": "u-1", "company_id": "acme",
            "conversation_id": conversation_id, "conversation_detail_id": "m-9"}


def test_notes_of_an_unrecorded_conversation_survive_maintenance(services, system_worker):
    facts = ["User prefers bar charts over pie charts.", "User's timezone is UTC+1.",
             "User works on the billing team."]
    unrecorded = _run("run-unrecorded", "c-never-recorded")
    results = [send("memory.write", unrecorded, {"note": fact, "type": "Context"}, seq)
               for seq, fact in enumerate(facts, start=1)]
    assert [r.get(timeout=60)["disposition"] for r in results] == ["written"] * 3

    # A conversation that was recorded, wrote a note, and was then deleted by an operator.
    recorded = send("memory.conversation.record", {
        "conversation": {"id": "c-deleted", "agent_id": "A", "user_id": "u-1",
                         "company_id": "acme"},
        "messages": [{"id": "m-1", "role": "user", "text": "hello"}]}).get(timeout=60)
    assert recorded["ok"], recorded
    deleted = send("memory.write", _run("run-deleted", "c-deleted"),
                   {"note": "User's manager is Dana.", "type": "Context"}, 1).get(timeout=60)
    assert deleted["disposition"] == "written"
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute("DELETE FROM conversations WHERE id = 'c-deleted'")

    report = send("memory.manager.cycle", force=True, maintenance=True).get(timeout=120)
    assert report["maintenance"] and report["status"] == "succeeded", report

    kept = notes(services.database_url, "source_conversation_id = 'c-never-recorded'")
    assert sorted(n["note"] for n in kept) == sorted(facts)
    assert {n["status"] for n in kept} == {"Active"}, "hardened, not pruned"
    [stale] = notes(services.database_url, "source_conversation_id = 'c-deleted'")
    assert stale["status"] == "Archived"
    [event] = rows(services.database_url,
                   "SELECT actor, reason FROM note_events WHERE note_id = %s AND action = "
                   "'pruned'", stale["id"])
    assert event == {"actor": "stale_references", "reason": "source conversation deleted"}
