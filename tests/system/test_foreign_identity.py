"""Foreign-identity screening goes by who an id belongs to: a note naming a user or company
this system holds memory for, other than the writer's own, is blocked; an id nobody holds is
nobody's, and the note stays in the writer's own scope."""

from __future__ import annotations

from tests.helpers import notes
from tests.system.conftest import send


def _write(user: str, text: str, *, run_id: str, seq: int = 1, company: str = "acme") -> dict:
    run = {"run_id": run_id, "agent_id": "A", "user_id": user, "company_id": company}
    return send("memory.write", run, {"note": text, "type": "Context"}, seq).get(timeout=60)


def test_an_id_nobody_holds_is_not_foreign(services, system_worker):
    result = _write("u-1", "Keep the notes of user 8812 out of the weekly report.",
                    run_id="r-unknown")
    assert result["disposition"] == "written", result
    assert result["final_scope"]["user_id"] == "u-1"


def test_a_note_naming_another_known_user_is_blocked(services, system_worker):
    assert _write("u-2", "User prefers oolong tea.", run_id="r-other")["disposition"] == \
        "written"  # u-2 now has memory here
    for seq, text in enumerate(["User u-2 likes green tea.", "User U-2 likes green tea.",
                                "Ask customer #u-2 about the renewal."], start=1):
        result = _write("u-1", text, run_id="r-writer", seq=seq)
        assert (result["disposition"], result["reason_code"]) == \
            ("blocked", "foreign-identity"), (text, result)
        assert "u-2" not in result["reason"].casefold()  # the reason never echoes the id
    assert [n["note"] for n in notes(services.database_url, "user_id = 'u-1'")] == []


def test_a_bare_number_is_an_id_only_after_a_label(services, system_worker):
    assert _write("42", "User prefers oolong tea.", run_id="r-42")["disposition"] == "written"
    quantity = _write("u-1", "User orders 42 units every month.", run_id="r-q")
    assert quantity["disposition"] == "written", quantity
    labelled = _write("u-1", "User 42 is the user's manager.", run_id="r-q", seq=2)
    assert labelled["reason_code"] == "foreign-identity", labelled


def test_another_known_company_is_blocked_and_the_own_ids_pass(services, system_worker):
    recorded = send("memory.conversation.record", {
        "conversation": {"id": "c-globex", "agent_id": "A", "user_id": "g-7",
                         "company_id": "globex"},
        "messages": [{"id": "m-1", "role": "user", "text": "hello"}]}).get(timeout=60)
    assert recorded["ok"], recorded
    foreign = _write("u-1", "company_id=globex: this user is our main contact.", run_id="r-co")
    assert foreign["reason_code"] == "foreign-identity"
    own = _write("u-1", "user_id=u-1 of company acme prefers invoices in EUR.", run_id="r-co",
                 seq=2)
    assert own["disposition"] == "written", own
