"""An agent forgets one fact on its user's request: only that user's notes with that agent,
in the run's order, with lineage; nothing matching is an answer, not an error."""

from __future__ import annotations

import uuid

import pytest

from tests.helpers import rows, run_context

ADDRESS = "User's home address is 4 Rue de Lyon, Paris."
OTHER_FACT = "User prefers dark mode in the dashboard."


def _forget(runtime, run, seq: int, *, prev: int | None = None, **request):
    from worker.erasure.fact import forget_fact
    from worker.writes.operation import WriteResult

    outcome = forget_fact(runtime.write_deps(), run, request, seq,
                          prev_payload=seq - 1 if prev is None else prev)
    assert isinstance(outcome, WriteResult), outcome
    return outcome.as_dict()


def _status(services, note_id) -> str:
    return rows(services.database_url, "SELECT status FROM notes WHERE id = %s",
                note_id)[0]["status"]


def test_forgets_only_the_runs_user_notes_with_its_agent_even_when_others_match(
        runtime, seed, services):
    own = seed(ADDRESS)  # A, U, C: the run's exact scope
    own_no_company = seed("User's home address changed to 9 Elm Road.", company=None)
    own_provisional = seed("Home address: 12 Oak Lane (user said so today).",
                           status="Provisional")
    kept_fact = seed(OTHER_FACT)
    # Each of these matches the text, and none is the run's user's with the run's agent.
    agent_wide = seed("Home address format: street, then city.", user=None, company=None)
    company_wide = seed("Company home address is 1 Main St.", user=None)
    other_user = seed("User's home address is 77 Pine St.", user="U2")
    other_agent = seed("User's home address is 4 Rue de Lyon, Paris.", agent="B")
    every_agent = seed("User's home address (all agents) is 4 Rue de Lyon.", agent=None)
    other_record = seed("User's home address for account 9 is 3 Bay Rd.",
                        entity="Account", record="9")
    retired = seed("User's old home address was 1 Old St.", status="Archived")

    answer = _forget(runtime, run_context("run-f1"), 1, about="my home address")

    forgotten = {uuid.UUID(item["note_id"]) for item in answer["forgotten"]}
    assert answer["disposition"] == "forgotten"
    assert forgotten == {own, own_no_company, own_provisional}
    assert {item["note"] for item in answer["forgotten"]} >= {ADDRESS}
    for note_id in forgotten:
        assert _status(services, note_id) == "Revoked"
    for note_id in (kept_fact, agent_wide, company_wide, other_user, other_agent,
                    every_agent, other_record):
        assert _status(services, note_id) in ("Active", "Provisional"), note_id
    assert _status(services, retired) == "Archived"

    # Lineage: who asked, which run, on each forgotten note's history and the write log.
    events = rows(services.database_url,
                  "SELECT note_id, action, actor, from_status, to_status, detail "
                  "FROM note_events WHERE actor = 'forget-request'")
    assert {e["note_id"] for e in events} == forgotten
    assert all(e["action"] == "revoked" and e["to_status"] == "Revoked"
               and e["detail"]["run_id"] == "run-f1" and e["detail"]["requested_by"] == "user"
               for e in events)
    [logged] = rows(services.database_url, "SELECT * FROM write_log WHERE run_id = 'run-f1'")
    assert logged["disposition"] == "forgotten" and str(own) in logged["reason"]


def test_ids_of_other_scopes_are_refused_without_touching_them(runtime, seed, services):
    other_user = seed(ADDRESS, user="U2")
    agent_wide = seed(ADDRESS, user=None, company=None)
    company_wide = seed(ADDRESS, user=None)
    ids = [str(other_user), str(agent_wide), str(company_wide)]

    answer = _forget(runtime, run_context("run-f2"), 1, note_ids=ids)

    assert answer["disposition"] == "nothing-to-forget"
    assert answer["forgotten"] == []
    assert "3 note id(s) not among this run's user's notes" in answer["reason"]
    assert ADDRESS not in answer["reason"]
    for note_id in (other_user, agent_wide, company_wide):
        assert _status(services, note_id) == "Active"


def test_a_forgotten_note_is_never_injected_again(runtime, seed):
    from db.scope import RequestScope
    from worker.reads.context import build_context

    seed(ADDRESS)
    seed(OTHER_FACT)
    request = RequestScope("A", "U", "C")
    before = build_context(runtime.context_deps(), request, None)
    assert ADDRESS in before.rendered
    address_id = next(n["id"] for n in before.as_dict()["notes"] if n["note"] == ADDRESS)

    answer = _forget(runtime, run_context("run-f3"), 1, note_ids=[address_id])
    assert [item["matched"] for item in answer["forgotten"]] == ["id"]

    after = build_context(runtime.context_deps(), request, None)
    assert ADDRESS not in after.rendered and OTHER_FACT in after.rendered


def test_a_close_meaning_matches_and_an_unrelated_note_does_not(runtime, seed, services):
    allergy = seed("User is allergic to peanuts.")
    dog = seed("User has a dog named Rex.")
    answer = _forget(runtime, run_context("run-f4"), 1, about="my allergy")
    assert [item["matched"] for item in answer["forgotten"]] == ["meaning"]
    assert _status(services, allergy) == "Revoked" and _status(services, dog) == "Active"


def test_nothing_matching_is_a_clear_answer(runtime, seed, services):
    seed(OTHER_FACT)
    answer = _forget(runtime, run_context("run-f5"), 1, about="my passport number")
    assert answer["disposition"] == "nothing-to-forget"
    assert answer["reason"].startswith("Nothing forgotten")
    assert rows(services.database_url, "SELECT status FROM notes") == [{"status": "Active"}]


def test_the_request_waits_for_the_runs_earlier_write_and_forgets_it(runtime, write):
    from worker.erasure.fact import forget_fact
    from worker.writes.operation import WaitForSequence

    run = run_context("run-f6")
    early = forget_fact(runtime.write_deps(), run, {"about": "home address"}, 2,
                        prev_payload=1)
    assert isinstance(early, WaitForSequence)  # write 1 has not been applied yet
    assert write(run, ADDRESS, seq=1)["disposition"] == "written"
    answer = _forget(runtime, run, 2, about="home address")
    assert [item["note"] for item in answer["forgotten"]] == [ADDRESS]
    # A later write of the same run is a new fact and lands normally.
    assert write(run, "User's home address is now 8 New St.", seq=3)["disposition"] \
        == "written"


def test_a_redelivered_request_is_a_replay(runtime, seed):
    seed(ADDRESS)
    first = _forget(runtime, run_context("run-f7"), 1, about="home address")
    again = _forget(runtime, run_context("run-f7"), 1, about="home address")
    assert first["disposition"] == again["disposition"] == "forgotten"
    assert again["replayed"] is True and again["reason"] == first["reason"]


def test_immutable_notes_are_kept_and_said_so(runtime, seed, services):
    note = seed(ADDRESS)
    with runtime.db.transaction() as conn:
        from sqlalchemy import text
        conn.execute(text("UPDATE notes SET protection_tier = 'Immutable' WHERE id = :id"),
                     {"id": note})
    answer = _forget(runtime, run_context("run-f8"), 1, about="home address")
    assert answer["disposition"] == "nothing-to-forget"
    assert "1 matching Immutable note(s) kept" in answer["reason"]
    assert _status(services, note) == "Active"


@pytest.mark.parametrize(("run", "request_payload", "expected"), [
    (run_context("run-f9", user=None), {"about": "home address"}, "has no user_id"),
    (run_context("run-f9"), {}, "needs about"),
    (run_context("run-f9"), {"about": "please forget my"}, "names nothing"),
    (run_context("run-f9"), {"note_ids": ["not-a-uuid"]}, "UUID"),
    (run_context("run-f9"), {"note_ids": [7]}, "UUID"),
    (run_context("run-f9"), {"about": "x", "user_id": "U2"}, "unknown field"),
    (run_context("run-f9"), ["about"], "must be an object"),
    (run_context("run-f9"), {"about": "x" * 501}, "longer than"),
    (run_context("run-f9"), {"about": "address", "requested_by": ""}, "requested_by"),
])
def test_bad_requests_get_a_reason_and_change_nothing(runtime, seed, services, run,
                                                      request_payload, expected):
    seed(ADDRESS)
    from worker.erasure.fact import forget_fact

    answer = forget_fact(runtime.write_deps(), run, request_payload, 1,
                         prev_payload=0).as_dict()
    assert answer["disposition"] == "rejected-invalid"
    assert expected in answer["reason"]
    assert rows(services.database_url, "SELECT status FROM notes") == [{"status": "Active"}]


@pytest.mark.usefixtures("celery_worker")
def test_client_forgets_through_the_worker_after_the_runs_writes(runtime, services):
    from worker.client import enqueue_memory_writes, forget_fact

    run = run_context("run-f10")
    enqueue_memory_writes(run, [{"note": ADDRESS, "type": "Preference"},
                                {"note": OTHER_FACT, "type": "Preference"}])
    # Sent at once, behind the writes: it waits for them in the run's order.
    answer = forget_fact(run, about="my home address", requested_by="user U")
    assert answer["disposition"] == "forgotten"
    assert [item["note"] for item in answer["forgotten"]] == [ADDRESS]
    statuses = {r["note"]: r["status"] for r in
                rows(services.database_url, "SELECT note, status FROM notes")}
    assert statuses == {ADDRESS: "Revoked", OTHER_FACT: "Provisional"}
    with pytest.raises(ValueError):
        forget_fact({"agent_id": "A"}, about="x")


def test_matching_pending_candidates_are_rejected_so_no_promotion_brings_them_back(
        runtime, write, services):
    from worker.writes.candidates import promote_candidate

    def held(run_id: str, text: str, **scope) -> str:
        answer = write(run_context(run_id, source="reflection", **scope), text)
        assert answer["disposition"] == "candidate", answer
        return answer["candidate_id"]

    own = held("refl-1", ADDRESS)
    named = held("refl-2", "User's passport number is X1234567.")
    unrelated = held("refl-3", OTHER_FACT)
    other_user = held("refl-4", "User's home address is 77 Pine St.", user="U2")
    agent_wide = held("refl-5", "Home address format: street, then city.", user=None,
                      company=None)

    answer = _forget(runtime, run_context("run-f11"), 1, about="my home address",
                     note_ids=[named])

    assert answer["disposition"] == "forgotten" and answer["forgotten"] == []
    assert {(c["candidate_id"], c["matched"]) for c in answer["forgotten_candidates"]} == {
        (own, "words"), (named, "id")}
    assert "2 pending candidate(s) rejected" in answer["reason"]
    status = {str(r["id"]): r for r in rows(services.database_url,
                                            "SELECT * FROM memory_candidates")}
    for candidate in (own, named):
        assert status[candidate]["status"] == "rejected"
        assert status[candidate]["decided_by"] == "forget-request"
        assert "run-f11" in status[candidate]["decision_reason"]
        assert ADDRESS not in status[candidate]["decision_reason"]
    for candidate in (unrelated, other_user, agent_wide):
        assert status[candidate]["status"] == "candidate", candidate
    # A reviewer approving it afterwards cannot bring the fact back.
    assert promote_candidate(runtime.write_deps(), own, actor="reviewer").status == "rejected"
    assert rows(services.database_url, "SELECT * FROM notes WHERE note = %s", ADDRESS) == []


def test_extraction_does_not_learn_a_forgotten_fact_again(runtime, seed, services):
    from tests.manager_helpers import now_utc, phase_deps
    from worker.manager.conversations import record_conversation
    from worker.manager.extraction import extract_from_conversations

    fact = "User's timezone is Europe/Berlin"
    seed(fact)
    answer = _forget(runtime, run_context("run-f12"), 1, about="my timezone")
    assert [item["note"] for item in answer["forgotten"]] == [fact]

    said = "My timezone is Europe/Berlin. I prefer metric units."
    for conversation, user in (("conv-u", "U"), ("conv-u2", "U2")):
        recorded = record_conversation(runtime.db, {
            "conversation": {"id": conversation, "agent_id": "A", "user_id": user,
                             "company_id": "C", "agent_run_id": f"run-{conversation}"},
            "messages": [{"id": f"{conversation}-m1", "role": "user", "text": said}]},
            now_utc())
        assert recorded["ok"]
    counts = extract_from_conversations(phase_deps(runtime))

    assert counts["rejected_forgotten"] == 1, counts
    learned = rows(services.database_url,
                   "SELECT user_id, note, status FROM notes WHERE author_type = 'MemoryManager'"
                   " ORDER BY user_id, note")
    # U's forgotten fact stays forgotten; the rest of what U said, and U2's same words, land.
    assert [(n["user_id"], n["note"]) for n in learned] == [
        ("U", "User prefers metric units"), ("U2", "User prefers metric units"),
        ("U2", fact)], counts
