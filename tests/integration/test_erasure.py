"""Forgetting on request: what an erasure deletes, what it keeps, the fence, the CLI."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from tests.erasure_helpers import database_hits, redis_hits
from tests.helpers import rows, run_context

VICTIM = "victim-4471"
OTHER = "other-9902"
VICTIM_TEXT = "User keeps a pet iguana named Bartholomew."
OTHER_TEXT = "User prefers dark mode in every dashboard."
SHARED_TEXT = "Team standup is on Mondays at nine."

runner = CliRunner()


def _clock_seq() -> int:
    return time.time_ns() // 1000


def _write_at(write, run, note: str, seq: int) -> dict:
    """A write with a clock-based seq, first of its run (prev_seq 0), as the client sends."""
    from worker.writes.apply import WriteResult, apply_memory_write

    outcome = apply_memory_write(write.deps, run, {"note": note, "type": "Preference"}, seq,
                                 prev_payload=0)
    assert isinstance(outcome, WriteResult), outcome
    return outcome.as_dict()


def _forget(runtime, kind: str, subject_id: str, *, dry_run: bool = False, **narrow):
    from worker.erasure import Subject, forget

    return forget(runtime.db, Subject(kind, subject_id, narrow.get("agent"),
                                      narrow.get("company")),
                  requested_by="test-operator", dry_run=dry_run,
                  redis_url=runtime.settings.require_redis_url(),
                  embedding_model=runtime.settings.embedding_model)


def _populate(runtime, write, seed):
    """The victim and another user of the same company and agent, with a run each, a
    conversation each, an agent-wide note from the victim's run and a company-wide note."""
    from worker.manager.conversations import record_conversation

    victim_run = run_context(f"run-{VICTIM}", user=VICTIM, company="acme",
                             conversation_id=f"conv-{VICTIM}")
    other_run = run_context(f"run-{OTHER}", user=OTHER, company="acme")
    assert write(victim_run, VICTIM_TEXT)["disposition"] == "written"
    assert write(victim_run, SHARED_TEXT, scope_hint="agent")["disposition"] == "written"
    assert write(other_run, OTHER_TEXT)["disposition"] == "written"
    seed("Company fiscal year starts in April.", user=None, company="acme", run_id=None)
    for user, text in ((VICTIM, "My iguana Bartholomew hates the cold."),
                       (OTHER, "Dark mode please.")):
        done = record_conversation(runtime.db, {
            "conversation": {"id": f"conv-{user}", "agent_id": "A", "user_id": user,
                             "company_id": "acme", "agent_run_id": f"run-{user}"},
            "messages": [{"id": f"msg-{user}", "role": "user", "text": text}]},
            runtime.clock())
        assert done["ok"], done


def test_user_erasure_leaves_nothing_of_the_user_and_keeps_everyone_else(
        runtime, write, seed, services):
    _populate(runtime, write, seed)
    before = rows(services.database_url, "SELECT note FROM notes ORDER BY note")
    report = _forget(runtime, "user", VICTIM)
    assert report.counts["notes"] == 1 and report.counts["runs"] == 1
    assert report.counts["conversations"] == 1 and report.counts["principals"] == 1

    assert database_hits(services.database_url, [VICTIM, "iguana", "Bartholomew"]) == []
    assert redis_hits(services.redis_url, [VICTIM, "iguana"]) == []
    after = {r["note"] for r in rows(services.database_url, "SELECT note FROM notes")}
    assert after == {r["note"] for r in before} - {VICTIM_TEXT}
    shared = rows(services.database_url, "SELECT * FROM notes WHERE note = %s", SHARED_TEXT)
    assert shared[0]["user_id"] is None and shared[0]["source_agent_run_id"] is None
    assert rows(services.database_url, "SELECT id FROM conversations") == [
        {"id": f"conv-{OTHER}"}]
    audit = rows(services.database_url, "SELECT * FROM erasures")
    assert audit[0]["status"] == "done" and audit[0]["requested_by"] == "test-operator"
    assert audit[0]["subject_hash"] == report.subject_hash and audit[0]["counts"]["notes"] == 1


def test_kept_notes_lose_provenance_naming_the_users_unrecorded_conversations(
        runtime, write, seed, services):
    """A conversation the user's run named but nobody recorded has no row to be found by;
    the kept notes must not name it, nor one only the user's own notes name."""
    from sqlalchemy import text

    run = run_context(f"run-{VICTIM}", user=VICTIM, company="acme",
                      conversation_id="conv-unrecorded-4471")
    assert write(run, SHARED_TEXT, scope_hint="agent")["disposition"] == "written"
    assert write(run, VICTIM_TEXT)["disposition"] == "written"
    extracted = seed("Company fiscal year starts in April.", user=None, company="acme",
                     run_id=None)
    own = seed("User's iguana eats kale.", user=VICTIM, company="acme", run_id=None)
    from_own = seed("Invoices go out on the first.", user=None, company="acme", run_id=None)
    with runtime.db.transaction() as conn:
        for note_id, conversation in ((extracted, "conv-unrecorded-4471"),
                                      (own, "conv-only-in-notes-4471"),
                                      (from_own, "conv-only-in-notes-4471")):
            conn.execute(text("UPDATE notes SET source_conversation_id = :c, "
                              "source_conversation_detail_id = 'detail-4471' WHERE id = :id"),
                         {"c": conversation, "id": note_id})

    _forget(runtime, "user", VICTIM)

    kept = rows(services.database_url, "SELECT note, source_conversation_id, "
                "source_conversation_detail_id, source_agent_run_id FROM notes ORDER BY note")
    assert [r["note"] for r in kept] == ["Company fiscal year starts in April.",
                                         "Invoices go out on the first.", SHARED_TEXT]
    assert all(r["source_conversation_id"] is None and r["source_agent_run_id"] is None
               and r["source_conversation_detail_id"] is None for r in kept), kept
    assert database_hits(services.database_url, [VICTIM, "conv-unrecorded",
                                                 "conv-only-in-notes", "detail-4471"]) == []


def test_dry_run_counts_and_changes_nothing(runtime, write, seed, services):
    _populate(runtime, write, seed)
    snapshot = {t: rows(services.database_url, f"SELECT count(*) AS n FROM {t}")[0]["n"]
                for t in ("notes", "runs", "write_log", "conversations", "principals",
                          "conversation_messages", "trace_events")}
    report = _forget(runtime, "user", VICTIM, dry_run=True)
    assert report.dry_run and report.audit_id is None
    assert report.counts["notes"] == 1 and report.counts["runs"] == 1
    assert report.counts["write_log"] == 2 and report.counts["conversation_messages"] == 1
    assert report.counts["redis_seq_counters"] == 0  # written directly, no counter
    after = {t: rows(services.database_url, f"SELECT count(*) AS n FROM {t}")[0]["n"]
             for t in snapshot}
    assert after == snapshot
    assert rows(services.database_url, "SELECT * FROM erasure_fences") == []


def test_company_erasure_keeps_other_companies_and_agent_wide_notes(
        runtime, write, seed, services):
    seed("Acme ships from Rotterdam.", user=None, company="acme", run_id=None)
    seed("Acme user likes tea.", user="u-1", company="acme", run_id=None)
    seed("Globex ships from Springfield.", user=None, company="globex", run_id=None)
    seed("Agents answer in English.", user=None, company=None, run_id=None)
    write(run_context("run-acme-1", user="u-1", company="acme"), "User likes green tea.")
    report = _forget(runtime, "company", "acme")
    assert report.counts["notes"] == 3
    left = {r["note"] for r in rows(services.database_url, "SELECT note FROM notes")}
    assert left == {"Globex ships from Springfield.", "Agents answer in English."}
    assert database_hits(services.database_url, ["acme"]) == []


def test_narrowed_user_erasure_keeps_the_users_memory_with_other_agents(
        runtime, write, services):
    write(run_context("run-n-1", agent="A", user="u-9"), "User likes jazz.")
    write(run_context("run-n-2", agent="B", user="u-9"), "User likes techno.")
    report = _forget(runtime, "user", "u-9", agent="A")
    assert report.counts["notes"] == 1 and report.counts["principals"] == 0
    left = rows(services.database_url, "SELECT agent_id, note FROM notes")
    assert left == [{"agent_id": "B", "note": "User likes techno."}]


def test_late_writes_of_an_erased_run_are_refused_and_a_new_run_works(
        runtime, write, services):
    from worker.client import reserve_sequence_numbers

    old = run_context(f"run-{VICTIM}", user=VICTIM)
    queued_seq = _clock_seq()  # reserved (enqueued) before the erasure
    assert _write_at(write, old, VICTIM_TEXT, queued_seq - 10)["disposition"] == "written"
    _forget(runtime, "user", VICTIM)
    late = _write_at(write, old, "User's iguana eats kale.", queued_seq)
    assert late["disposition"] == "rejected-erased" and late["run_id"] is None
    # Redelivered: refused again, and still nothing of the run is kept.
    again = _write_at(write, old, "User's iguana eats kale.", queued_seq)
    assert again["disposition"] == "rejected-erased"
    assert database_hits(services.database_url, [VICTIM, "iguana"]) == []

    time.sleep(1.1)  # past the fence's margin
    fresh = run_context("run-new-after-erase", user=VICTIM)
    [seq] = reserve_sequence_numbers(fresh["run_id"], 1).seqs
    assert _write_at(write, fresh, "User now keeps a cat.", seq)["disposition"] == "written"


def test_a_queued_conversation_record_is_refused_after_the_erasure(runtime, services):
    from worker.manager.conversations import record_conversation

    _forget(runtime, "user", VICTIM)
    payload = {"conversation": {"id": f"conv-{VICTIM}", "agent_id": "A", "user_id": VICTIM},
               "messages": [{"id": "m-1", "role": "user", "text": "I have an iguana."}]}
    done = record_conversation(runtime.db, payload, runtime.clock())
    assert done == {"ok": False, "disposition": "rejected-erased", "error": done["error"]}
    assert rows(services.database_url, "SELECT * FROM conversations") == []


def test_cli_refuses_without_yes_and_erases_with_it(runtime, write, services):
    from worker.cli import cli

    write(run_context(f"run-{VICTIM}", user=VICTIM), VICTIM_TEXT)
    refused = runner.invoke(cli, ["forget", "user", VICTIM])
    assert refused.exit_code == 2 and "without --yes" in refused.output
    assert len(rows(services.database_url, "SELECT * FROM notes")) == 1
    dry = runner.invoke(cli, ["forget", "user", VICTIM, "--dry-run", "--json"])
    assert dry.exit_code == 0 and '"notes": 1' in dry.output
    done = runner.invoke(cli, ["forget", "user", VICTIM, "--yes", "--by", "dpo", "--json"])
    assert done.exit_code == 0, done.output
    assert rows(services.database_url, "SELECT * FROM notes") == []
    log = runner.invoke(cli, ["erasures", "--json"])
    assert '"requested_by": "dpo"' in log.output and VICTIM not in log.output


@pytest.mark.usefixtures("celery_worker")
def test_forget_task_and_client(runtime, write, services):
    from worker.client import forget_subject

    write(run_context(f"run-{VICTIM}", user=VICTIM), VICTIM_TEXT)
    assert forget_subject("user", VICTIM, requested_by="x", dry_run=True)["counts"]["notes"] == 1
    report = forget_subject("user", VICTIM, requested_by="support ticket 12")
    assert report["ok"] and report["counts"]["notes"] == 1
    assert rows(services.database_url, "SELECT * FROM notes") == []
    bad = forget_subject("planet", "earth", requested_by="x")
    assert bad["ok"] is False
    # Who asked: a dry run needs nobody, an erasure always does.
    from worker.app import task_names
    from worker.celery_app import app

    subject = {"kind": "user", "subject_id": "someone"}
    assert app.send_task(task_names.FORGET, args=[subject, None, True]).get(timeout=30)["ok"]
    nobody = app.send_task(task_names.FORGET, args=[subject, None, False]).get(timeout=30)
    assert nobody["ok"] is False and "requested_by" in nobody["error"]


def test_judge_memos_decided_on_the_users_text_go_with_it(runtime, write, seed, services):
    from db.queries.manager import memo_put
    from worker.normalize import content_hash

    _populate(runtime, write, seed)
    with runtime.db.transaction() as conn:
        memo_put(conn, "pair", "victim-pair", "distinct", "model", runtime.clock(),
                 [content_hash(VICTIM_TEXT), content_hash("User keeps a pet gecko.")])
        memo_put(conn, "pair", "other-pair", "duplicate", "model", runtime.clock(),
                 [content_hash(OTHER_TEXT), content_hash("Dark mode please.")])
    assert _forget(runtime, "user", VICTIM, dry_run=True).counts["judge_memo"] == 1
    assert _forget(runtime, "user", VICTIM).counts["judge_memo"] == 1
    assert [r["key"] for r in rows(services.database_url, "SELECT key FROM judge_memo")] \
        == ["other-pair"]
