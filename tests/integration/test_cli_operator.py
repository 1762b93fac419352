"""Operator CLI against the real stack: notes list/show/history, explain, stats, write."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from typer.testing import CliRunner

from tests.manager_helpers import now_utc, seed_note
from worker.cli import cli

runner = CliRunner()


def _json(*args: str) -> object:
    result = runner.invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_notes_list_show_and_history(runtime, services):
    a = seed_note(runtime, "User prefers metric units", user="U1")
    seed_note(runtime, "User prefers dark mode", user="U2", status="Archived")
    seed_note(runtime, "Team uses ISO weeks", user=None, author="MemoryManager")
    listed = _json("notes", "list", "--agent", "A", "--user", "U1")
    assert [n["note"] for n in listed] == ["User prefers metric units"]
    archived = _json("notes", "list", "--status", "Archived")
    assert [n["user_id"] for n in archived] == ["U2"]
    agent_wide = _json("notes", "list", "--user", "-", "--author", "MemoryManager")
    assert [n["note"] for n in agent_wide] == ["Team uses ISO weeks"]
    shown = _json("notes", "show", str(a))
    assert shown["note"] == "User prefers metric units" and "embedding" not in shown
    assert _json("notes", "history", str(a)) == []
    table = runner.invoke(cli, ["notes", "list"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "metric units" in table.output
    assert "MemoryManager" in table.output, "a wide terminal shows every column"
    narrow = runner.invoke(cli, ["notes", "list"], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0
    assert "User prefers metric" in narrow.output, "the note stays readable at 80 columns"
    assert all(len(line) <= 80 for line in narrow.output.splitlines())


def test_notes_are_found_by_the_id_prefix_notes_list_prints(runtime, services):
    a = seed_note(runtime, "User prefers metric units", user="U1")
    seed_note(runtime, "User prefers dark mode", user="U2")
    table = runner.invoke(cli, ["notes", "list"], env={"COLUMNS": "200"})
    short = str(a)[:8]
    assert short in table.output
    history = runner.invoke(cli, ["notes", "history", short])  # a seeded note has none
    assert history.exit_code == 1 and "no history for this note" in history.output
    assert _json("notes", "show", short)["id"] == str(a)
    from db.queries.inspect import note_ids_with_prefix

    with runtime.db.read() as conn:
        assert len(note_ids_with_prefix(conn, "", limit=5)) == 2, "an empty prefix: both"
        assert note_ids_with_prefix(conn, str(a)[:13]) == [a], "dashes as printed"
    missing = runner.invoke(cli, ["notes", "show", "ffff0000" if short != "ffff0000"
                                  else "0000ffff"])
    assert missing.exit_code == 2 and "no note id starts with" in missing.output
    bad = runner.invoke(cli, ["notes", "show", "xyz"])
    assert bad.exit_code == 2 and "first 4+ hex digits" in bad.output


def test_a_mistyped_status_or_author_is_refused_with_the_choices(runtime, services):
    seed_note(runtime, "User prefers metric units", user="U1")
    typo = runner.invoke(cli, ["notes", "list", "--status", "Activ"])
    assert typo.exit_code == 2
    assert "'Activ' is not one of Pending, Active, Provisional, Revoked, Archived" in " ".join(
        typo.output.split()).replace("│ ", "")
    assert runner.invoke(cli, ["notes", "list", "--author", "bot"]).exit_code == 2
    lower = _json("notes", "list", "--status", "active")  # the case is forgiven
    assert [n["note"] for n in lower] == ["User prefers metric units"]


def test_explain_names_the_reason_for_each_matching_note(runtime, services):
    from worker.agents import configure_agent

    with runtime.db.transaction() as conn:
        configure_agent(conn, "A", {"note_injection_strategy": "Recent",
                                    "max_notes_to_inject": 1})
    now = now_utc()
    outranked = seed_note(runtime, "User thinks pie charts are fine for budgets",
                          at=now - timedelta(hours=2))
    injected = seed_note(runtime, "User prefers bar charts over pie charts",
                         at=now - timedelta(hours=1))
    other_user = seed_note(runtime, "User prefers bar charts over pie charts", user="U2")
    expired = seed_note(runtime, "User dislikes pie charts in reports", status="Provisional",
                        author="Agent", expires_at=now - timedelta(minutes=5))
    archived = seed_note(runtime, "User loves pie charts", status="Archived")
    report = _json("explain", "A", "pie charts", "--user", "U", "--company", "C")
    verdicts = {e["note_id"]: e for e in report}
    assert verdicts[str(injected)]["injected"] is True
    assert verdicts[str(injected)]["verdict"] == "injected"
    assert "outranked" in verdicts[str(outranked)]["verdict"]
    assert "at most 1" in verdicts[str(outranked)]["verdict"]
    assert "belongs to user U2" in verdicts[str(other_user)]["verdict"]
    assert "expired" in verdicts[str(expired)]["verdict"]
    assert "status is Archived" in verdicts[str(archived)]["verdict"]
    for e in report:
        assert set(e["checks"]) >= {"status", "scope", "expiry", "rank"}
    plain = runner.invoke(cli, ["explain", "A", "pie charts", "--user", "U", "--company", "C"],
                          env={"COLUMNS": "200"})
    assert plain.exit_code == 0 and "outranked" in plain.output


def test_explain_shows_what_created_and_changed_a_note(runtime, services):
    from tests.helpers import Writer, run_context
    from tests.manager_helpers import run_cycle

    written = Writer(runtime.write_deps())(run_context("r-explain"), "User prefers tea")
    run_cycle(runtime)
    [entry] = _json("explain", "A", "tea", "--user", "U", "--company", "C")
    assert entry["note_id"] == written["note_id"]
    assert [(h["source"], h["action"]) for h in entry["history"]] == [
        ("write", "written"), ("event", "hardened")]
    assert entry["history"][0]["run_id"] == "r-explain"


def test_stats_counts_notes_and_cycles(runtime, services):
    from tests.manager_helpers import run_cycle

    seed_note(runtime, "User prefers tea", status="Provisional", author="Agent",
              expires_at=now_utc() + timedelta(days=7), at=now_utc() - timedelta(minutes=10))
    seed_note(runtime, "User prefers dark mode", user="U2")
    before = _json("stats")
    assert before["notes_by_status"]["Provisional"] == 1
    assert before["notes_by_author"] == {"Agent": 1, "User": 1}
    assert before["oldest_provisional_age_s"] >= 590
    assert before["last_cycle"] is None and before["pending_writes"] == 0
    assert (before["waiting_continuations"], before["dead_letters"]) == (0, 0)
    assert (before["recorded_writes"], before["oldest_recorded_write_age_s"]) == (0, None)
    from worker.client import RecordedTask, record_writes

    record_writes("r-stats", [RecordedTask("memory.write", "t-stats", [
        {"run_id": "r-stats", "agent_id": "A"}, {"note": "User likes tea.", "type": "Context"}])])
    recorded = _json("stats")  # accepted, no worker has applied it yet
    assert recorded["recorded_writes"] == 1 and recorded["oldest_recorded_write_age_s"] >= 0
    run_cycle(runtime)
    after = _json("stats")
    assert after["notes_by_status"]["Active"] == 2
    assert after["last_cycle"]["status"] == "succeeded"
    assert after["oldest_provisional_age_s"] == 0
    plain = runner.invoke(cli, ["stats"])
    assert "oldest provisional note: none" in plain.output, plain.output


@pytest.mark.usefixtures("celery_worker")
def test_write_enqueues_like_an_agent_service(runtime, services):
    result = _json("write", "A", "User prefers metric units", "--user", "U", "--company", "C",
                   "--run-id", "cli-run")
    assert result["disposition"] == "written" and result["run_id"] == "cli-run"
    again = _json("write", "A", "user prefers metric units", "--user", "U", "--company", "C",
                  "--run-id", "cli-run")
    assert again["disposition"] == "skipped-duplicate"
