"""Exporting a subject: what the file holds (the rows an erasure would take, nothing else),
its audit record, the CLI, the task, and memory that stays bounded at 100k notes."""

from __future__ import annotations

import io
import json
import time
import tracemalloc
import uuid

import pytest
from typer.testing import CliRunner

from tests.helpers import rows, run_context

VICTIM = "victim-5120"
OTHER = "other-7731"
VICTIM_TEXT = "User keeps a pet iguana named Bartholomew."
SHARED_TEXT = "Team standup is on Mondays at nine."
STATUSES = ("Pending", "Active", "Provisional", "Revoked", "Archived")

runner = CliRunner()


def _example(db, *, agent: str, user: str | None, company: str | None, text: str) -> None:
    from sqlalchemy import text as sql

    with db.transaction() as conn:
        conn.execute(sql(
            "INSERT INTO examples (id, agent_id, user_id, company_id, input_text, "
            "output_text, success_score) VALUES (:id, :agent, :user, :company, :input, "
            "'Here you go.', 9)"),
            {"id": uuid.uuid4(), "agent": agent, "user": user, "company": company,
             "input": text})


def _event(db, note_id, action: str, actor: str, reason: str) -> None:
    from sqlalchemy import text as sql

    with db.transaction() as conn:
        conn.execute(sql(
            "INSERT INTO note_events (note_id, action, actor, reason, detail) "
            "VALUES (:id, :action, :actor, :reason, '{\"why\": \"test\"}')"),
            {"id": note_id, "action": action, "actor": actor, "reason": reason})


def _populate(runtime, write, seed) -> dict:
    """The victim (notes of every status, one with history, an example, a conversation with
    two messages, a candidate) beside another user of the same company, an agent-wide note
    written by the victim's run, a company-wide note and another company's note."""
    from worker.manager.conversations import record_conversation

    victim_run = run_context(f"run-{VICTIM}", user=VICTIM, company="acme",
                             conversation_id=f"conv-{VICTIM}")
    assert write(victim_run, VICTIM_TEXT)["disposition"] == "written"
    assert write(victim_run, SHARED_TEXT, scope_hint="agent")["disposition"] == "written"
    candidate = write(run_context(f"run-{VICTIM}-reflect", user=VICTIM, company="acme",
                                  source="reflection"), "User seems to like reptiles.")
    assert candidate["disposition"] == "candidate", candidate
    ids = {status: seed(f"Victim {status.lower()} fact about iguanas.", user=VICTIM,
                        company="acme", status=status, run_id=None) for status in STATUSES}
    _event(runtime.db, ids["Revoked"], "revoked", "user", "asked to forget it")
    _event(runtime.db, ids["Revoked"], "restored", "operator", "undo")
    assert write(run_context(f"run-{OTHER}", user=OTHER, company="acme"),
                 "User prefers dark mode.")["disposition"] == "written"
    seed("Company fiscal year starts in April.", user=None, company="acme", run_id=None)
    seed("Globex ships from Springfield.", user=None, company="globex", run_id=None)
    seed("Agent B answers in French.", agent="B", user="u-b", company="globex", run_id=None)
    _example(runtime.db, agent="A", user=VICTIM, company="acme", text="Victim example")
    _example(runtime.db, agent="A", user=OTHER, company="acme", text="Other example")
    for user, texts in ((VICTIM, ["My iguana hates the cold.", "He likes kale."]),
                        (OTHER, ["Dark mode please."])):
        done = record_conversation(runtime.db, {
            "conversation": {"id": f"conv-{user}", "agent_id": "A", "user_id": user,
                             "company_id": "acme", "agent_run_id": f"run-{user}"},
            "messages": [{"id": f"msg-{user}-{i}", "role": "user", "text": t}
                         for i, t in enumerate(texts)]}, runtime.clock())
        assert done["ok"], done
    return ids


def _export(runtime, kind: str, subject_id: str, **narrow):
    from worker.erasure.export import export_subject
    from worker.erasure.subject import Subject

    out = io.StringIO()
    report = export_subject(runtime.db, Subject(kind, subject_id, narrow.get("agent"),
                                                narrow.get("company")),
                            out, requested_by="dpo")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return report, lines


def _of(lines: list[dict], kind: str) -> list[dict]:
    return [line for line in lines if line["type"] == kind]


def test_a_user_export_holds_everything_of_the_user_and_nothing_else(runtime, write, seed):
    ids = _populate(runtime, write, seed)
    report, lines = _export(runtime, "user", VICTIM)

    header, trailer = lines[0], lines[-1]
    assert header["type"] == "header" and header["format_version"] == 1
    assert header["subject"] == {"kind": "user", "id": VICTIM, "agent": None, "company": None}
    assert header["audit_id"] == report.audit_id and header["exported_at"]
    assert trailer == {"type": "trailer", "counts": report.counts}
    assert len(lines) == report.lines

    notes = _of(lines, "note")
    assert {n["note"] for n in notes} == {VICTIM_TEXT} | {
        f"Victim {s.lower()} fact about iguanas." for s in STATUSES}
    assert {n["status"] for n in notes} == set(STATUSES) | {"Provisional"}
    assert all(n["scope"]["user_id"] == VICTIM for n in notes)
    assert all("embedding" not in n and "scope_key" not in n for n in notes)
    revoked = next(n for n in notes if n["id"] == str(ids["Revoked"]))
    assert [(e["action"], e["actor"], e["reason"]) for e in revoked["history"]] == [
        ("revoked", "user", "asked to forget it"), ("restored", "operator", "undo")]
    assert revoked["history"][0]["detail"] == {"why": "test"} and revoked["history"][0]["at"]
    assert list(revoked["history"][0]) == ["id", "action", "from_status", "to_status", "actor",
                                           "reason", "related_note_ids", "cycle_id", "detail",
                                           "at"]
    assert revoked["created_at"] and revoked["valid_from"] and "confidence" in revoked

    assert [x["input_text"] for x in _of(lines, "example")] == ["Victim example"]
    assert [c["id"] for c in _of(lines, "conversation")] == [f"conv-{VICTIM}"]
    assert [(m["conversation_id"], m["text"]) for m in _of(lines, "conversation_message")] \
        == [(f"conv-{VICTIM}", "My iguana hates the cold."), (f"conv-{VICTIM}", "He likes kale.")]
    [candidate] = _of(lines, "candidate")
    assert candidate["note"] == "User seems to like reptiles."
    assert candidate["status"] == "candidate" and candidate["note_type"] == "Preference"
    assert report.counts == {"notes": 6, "note_events": 2, "examples": 1, "conversations": 1,
                             "conversation_messages": 2, "memory_candidates": 1}
    # Nothing of anyone else: the other user, the agent-wide and company-wide notes.
    blob = "\n".join(json.dumps(line) for line in lines)
    for foreign in (OTHER, SHARED_TEXT, "fiscal year", "Globex", "Dark mode", "French"):
        assert foreign.lower() not in blob.lower(), foreign


def test_the_export_is_what_an_erasure_would_take(runtime, write, seed):
    from worker.erasure import Subject, forget

    _populate(runtime, write, seed)
    report, _ = _export(runtime, "user", VICTIM)
    plan = forget(runtime.db, Subject("user", VICTIM), requested_by="dpo", dry_run=True,
                  redis_url=None)
    for table in ("notes", "examples", "conversations", "conversation_messages",
                  "memory_candidates"):
        assert report.counts[table] == plan.counts[table], table


def test_company_agent_conversation_and_narrowed_subjects(runtime, write, seed):
    _populate(runtime, write, seed)

    _, lines = _export(runtime, "company", "acme")
    notes = {n["note"] for n in _of(lines, "note")}
    assert "Company fiscal year starts in April." in notes and "User prefers dark mode." in notes
    # The agent-wide note the victim's run wrote is still the company's.
    assert VICTIM_TEXT in notes and SHARED_TEXT in notes
    assert "Globex ships from Springfield." not in notes
    assert {c["id"] for c in _of(lines, "conversation")} == {f"conv-{VICTIM}", f"conv-{OTHER}"}

    _, lines = _export(runtime, "agent", "B")
    assert [n["note"] for n in _of(lines, "note")] == ["Agent B answers in French."]
    assert _of(lines, "conversation") == [] and _of(lines, "example") == []

    _, lines = _export(runtime, "conversation", f"conv-{VICTIM}")
    # Derived from the conversation: the notes its run wrote (the agent-wide one too).
    assert {n["note"] for n in _of(lines, "note")} == {VICTIM_TEXT, SHARED_TEXT}
    assert len(_of(lines, "conversation_message")) == 2

    report, lines = _export(runtime, "user", VICTIM, agent="B")
    assert report.counts["notes"] == 0 and lines[0]["subject"]["agent"] == "B"
    assert [line["type"] for line in lines] == ["header", "trailer"]


def test_the_audit_record_holds_counts_and_never_the_id_or_text(runtime, write, seed, services):
    _populate(runtime, write, seed)
    report, _ = _export(runtime, "user", VICTIM)
    [audit] = rows(services.database_url, "SELECT * FROM exports")
    assert audit["id"] == report.audit_id and audit["status"] == "done"
    assert audit["requested_by"] == "dpo" and audit["subject_kind"] == "user"
    assert audit["subject_hash"] == report.subject_hash and audit["finished_at"]
    assert audit["counts"] == report.counts
    blob = json.dumps(audit, default=str).lower()
    for needle in (VICTIM, "iguana", "acme"):
        assert needle.lower() not in blob
    assert rows(services.database_url, "SELECT * FROM erasures") == []


def test_a_failed_export_is_audited_and_leaves_no_file(runtime, write, seed, services,
                                                       tmp_path, monkeypatch):
    import worker.erasure.export as export_module
    from worker.erasure import Subject

    _populate(runtime, write, seed)

    def broken(*_args, **_kwargs):
        yield from ()
        raise RuntimeError("connection lost")

    monkeypatch.setattr(export_module, "stream_subject_records", broken)
    target = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError):
        export_module.export_to_file(runtime.db, Subject("user", VICTIM), target,
                                     requested_by="dpo")
    assert list(tmp_path.iterdir()) == []
    [audit] = rows(services.database_url, "SELECT status, error FROM exports")
    assert audit == {"status": "failed", "error": "RuntimeError"}


def test_bad_subjects_and_requesters_are_refused(runtime):
    from worker.erasure import SubjectError, parse_subject
    from worker.erasure.export import export_subject
    from worker.erasure.subject import Subject

    with pytest.raises(SubjectError):
        parse_subject("planet", "earth")
    with pytest.raises(SubjectError):
        parse_subject("company", "acme", "A")
    with pytest.raises(ValueError, match="requested_by"):
        export_subject(runtime.db, Subject("user", VICTIM), io.StringIO(), requested_by=" ")


def test_cli_exports_to_a_file_and_to_stdout_and_lists_the_audit(runtime, write, seed,
                                                                 tmp_path):
    from worker.cli import cli

    _populate(runtime, write, seed)
    target = tmp_path / "victim.jsonl"
    done = runner.invoke(cli, ["export", "user", VICTIM, "--by", "dpo", "--output",
                               str(target)])
    assert done.exit_code == 0, done.output
    assert "audit record 1" in done.stderr and "6 notes" in done.stderr
    assert done.stdout == ""
    assert target.stat().st_mode & 0o777 == 0o600
    from_file = [json.loads(line) for line in target.read_text().splitlines()]
    assert from_file[0]["type"] == "header" and from_file[-1]["counts"]["notes"] == 6

    piped = runner.invoke(cli, ["export", "user", VICTIM, "--company", "acme", "--by", "dpo"])
    assert piped.exit_code == 0, piped.output
    lines = [json.loads(line) for line in piped.stdout.splitlines()]
    assert lines[0]["subject"]["company"] == "acme" and lines[-1]["type"] == "trailer"
    assert [line["type"] for line in lines[1:-1]] == [
        line["type"] for line in from_file[1:-1]]
    assert "audit record 2" in piped.stderr

    bad = runner.invoke(cli, ["export", "planet", "earth", "--by", "dpo"])
    assert bad.exit_code == 2 and "subject kind must be one of" in bad.stderr
    missing_by = runner.invoke(cli, ["export", "user", VICTIM])
    assert missing_by.exit_code == 2
    nowhere = runner.invoke(cli, ["export", "user", VICTIM, "--by", "dpo", "--output",
                                  str(tmp_path / "missing" / "x.jsonl")])
    assert nowhere.exit_code == 2 and "does not exist" in nowhere.stderr

    log = runner.invoke(cli, ["exports", "--json"])
    assert log.exit_code == 0, log.output
    records = json.loads(log.stdout)
    assert [r["id"] for r in records] == [2, 1] and records[0]["requested_by"] == "dpo"
    assert VICTIM not in log.stdout and "iguana" not in log.stdout
    table = runner.invoke(cli, ["exports"])
    assert table.exit_code == 0 and "done" in table.stdout


@pytest.mark.usefixtures("celery_worker")
def test_export_task_and_client(write, settings, embedder, services, tmp_path):
    from worker.client import export_subject
    from worker.runtime import Runtime, set_runtime

    runtime = Runtime(settings=settings.model_copy(update={"export_dir": tmp_path / "x"}),
                      embedder_override=embedder)
    set_runtime(runtime)
    try:
        write(run_context(f"run-{VICTIM}", user=VICTIM, company="acme"), VICTIM_TEXT)
        result = export_subject("user", VICTIM, agent_id="A", requested_by="ticket 12")
        assert result["ok"] and result["counts"]["notes"] == 1, result
        assert VICTIM not in json.dumps(result) and "iguana" not in json.dumps(result)
        path = tmp_path / "x" / result["path"].rsplit("/", 1)[-1]
        assert str(path) == result["path"] and path.name.startswith("export-user-")
        assert (tmp_path / "x").stat().st_mode & 0o777 == 0o700
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert [line["type"] for line in lines] == ["header", "note", "trailer"]
        assert lines[1]["note"] == VICTIM_TEXT
        [audit] = rows(services.database_url, "SELECT * FROM exports")
        assert audit["id"] == result["audit_id"] and audit["requested_by"] == "ticket 12"

        bad = export_subject("planet", "earth", requested_by="x")
        assert bad["ok"] is False and "subject kind" in bad["error"]
        nobody = export_subject("user", VICTIM, requested_by="")
        assert nobody["ok"] is False and "requested_by" in nobody["error"]
    finally:
        set_runtime(None)


BULK = 100_000


def test_a_subject_with_100k_notes_exports_in_bounded_memory(runtime, services, tmp_path):
    import psycopg

    from worker.erasure.export import export_to_file
    from worker.erasure.subject import Subject

    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute("""
            INSERT INTO notes (id, agent_id, user_id, company_id, type, note, content_hash,
                               status, created_at, updated_at, valid_from)
            SELECT gen_random_uuid(), 'A', 'bulk-user', 'acme', 'Preference',
                   'Bulk note number ' || g || ' about the user''s many preferences.',
                   md5(g::text), 'Active', now() - g * interval '1 second', now(),
                   now() - g * interval '1 second'
            FROM generate_series(1, %s) g""", [BULK])
        conn.execute("""
            INSERT INTO notes (id, agent_id, user_id, type, note, content_hash, status)
            VALUES (gen_random_uuid(), 'A', 'someone-else', 'Preference', 'Not theirs.',
                    'x', 'Active')""")
        conn.execute("ANALYZE notes")
    target = tmp_path / "bulk.jsonl"
    began = time.monotonic()
    tracemalloc.start()
    try:
        report = export_to_file(runtime.db, Subject("user", "bulk-user"), target,
                                requested_by="load test")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    took = time.monotonic() - began
    assert report.counts["notes"] == BULK
    assert peak < 20 * 1024 * 1024, f"peak Python memory {peak / 2**20:.1f} MiB"
    with target.open(encoding="utf-8") as lines:
        count = sum(1 for _ in lines)
    assert count == BULK + 2
    assert took < 60, f"took {took:.1f} s"
