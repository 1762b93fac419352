"""Restoring a backup taken before an erasure brings the erased rows back;
`memory-worker reapply-erasures LOG` erases them again from the erasure log's hashes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.erasure_helpers import database_hits
from tests.helpers import rows

VICTIM = "victim-5120"
OTHER = "other-6671"
VICTIM_TEXT = "User keeps a pet iguana named Bartholomew."
OTHER_TEXT = "User prefers dark mode in every dashboard."

runner = CliRunner()


def _hold_data(runtime, seed) -> None:
    """The victim (with a conversation) and another user, as a backup would hold them."""
    seed(VICTIM_TEXT, user=VICTIM, company="acme")
    seed(OTHER_TEXT, user=OTHER, company="acme")
    _victims_conversation(runtime)


def _restore_backup_taken_before_the_erasures(runtime, seed) -> None:
    """What a restore does: the erased rows are back, the fences and audit records set
    after the backup are gone."""
    from sqlalchemy import text

    with runtime.db.transaction() as conn:
        conn.execute(text("DELETE FROM erasure_fences"))
        conn.execute(text("DELETE FROM erasures"))
    seed(VICTIM_TEXT, user=VICTIM, company="acme")
    _victims_conversation(runtime)


def _victims_conversation(runtime) -> None:
    from worker.manager.conversations import record_conversation

    done = record_conversation(runtime.db, {
        "conversation": {"id": f"conv-{VICTIM}", "agent_id": "A", "user_id": VICTIM,
                         "company_id": "acme"},
        "messages": [{"id": "m-1", "role": "user", "text": "My iguana hates the cold."}]},
        runtime.clock())
    assert done["ok"], done


@pytest.fixture
def erasure_log(runtime, seed, tmp_path):
    """Two erasures (a user, and a company nothing is left of), logged as operators keep the
    log: `memory-worker erasures --json`, to a file outside the database."""
    from worker.cli import cli

    _hold_data(runtime, seed)
    for subject in (["user", VICTIM], ["company", "gone-co"]):
        done = runner.invoke(cli, ["forget", *subject, "--yes", "--by", "dpo"])
        assert done.exit_code == 0, done.output
    log = runner.invoke(cli, ["erasures", "--json"])
    assert log.exit_code == 0, log.output
    path = tmp_path / "erasures.json"
    path.write_text(log.output)
    assert len(json.loads(log.output)) == 2
    assert database_hits(runtime.settings.database_url, [VICTIM, "iguana"]) == []
    _restore_backup_taken_before_the_erasures(runtime, seed)
    assert database_hits(runtime.settings.database_url, [VICTIM, "iguana"]) != []
    return path


def test_reapply_erases_again_what_the_log_names_and_sets_the_fences(runtime, services,
                                                                      erasure_log):
    from worker.cli import cli
    from worker.erasure.subject import subject_hash

    dry = runner.invoke(cli, ["reapply-erasures", str(erasure_log), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.output)
    assert planned["logged_subjects"] == 2
    assert [m["subject_kind"] for m in planned["matched"]] == ["user"]
    assert planned["unmatched_hashes"] == [subject_hash("company", "gone-co")]
    assert database_hits(services.database_url, [VICTIM, "iguana"]) != []  # dry: unchanged

    refused = runner.invoke(cli, ["reapply-erasures", str(erasure_log)])
    assert refused.exit_code == 2 and "--yes" in refused.output

    done = runner.invoke(cli, ["reapply-erasures", str(erasure_log), "--yes", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    [matched] = report["matched"]
    assert matched["counts"]["notes"] == 1 and matched["counts"]["conversations"] == 1
    assert database_hits(services.database_url, [VICTIM, "iguana", "Bartholomew"]) == []
    assert [r["note"] for r in rows(services.database_url, "SELECT note FROM notes")] \
        == [OTHER_TEXT]
    fences = {r["subject_hash"] for r in
              rows(services.database_url, "SELECT subject_hash FROM erasure_fences")}
    assert fences == {subject_hash("user", VICTIM), subject_hash("company", "gone-co")}
    audits = rows(services.database_url, "SELECT requested_by, status FROM erasures")
    assert audits and all(a["status"] == "done" and a["requested_by"].startswith("reapply")
                          for a in audits)


def test_with_another_hash_key_nothing_matches_and_it_says_so(runtime, erasure_log,
                                                              monkeypatch):
    from worker.cli import cli

    monkeypatch.setenv("MEMORY_ERASURE_HASH_KEY", "not the key the erasures used")
    dry = runner.invoke(cli, ["reapply-erasures", str(erasure_log), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.output)
    assert report["matched"] == [] and len(report["unmatched_hashes"]) == 2


@pytest.mark.parametrize("content", ["not json", '{"id": 1}', '[{"subject_kind": "user"}]'])
def test_a_log_that_is_not_the_erasure_log_is_refused_in_one_line(runtime, tmp_path, content):
    from worker.cli import cli

    path = tmp_path / "log.json"
    path.write_text(content)
    done = runner.invoke(cli, ["reapply-erasures", str(path), "--yes"])
    assert done.exit_code == 2
    assert done.output.count("\n") == 1 and "erasure log" in done.output
