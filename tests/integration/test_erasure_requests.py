"""A malformed erasure or export request is answered `ok: false` and writes nothing: no audit
record, no fence, no erasing mark, no export file, and no row of anyone erased — through the
tasks (as any language sends them), the Python client helpers and the CLI."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from tests.helpers import rows, run_context

USER = "u-7731"
USER_TEXT = "User keeps a pet iguana named Bartholomew."

runner = CliRunner()

BAD_SUBJECTS: list[Any] = [
    None,
    "u-7731",
    ["user", USER],
    {},
    {"kind": "user"},
    {"kind": "user", "subject_id": None},
    {"kind": "user", "subject_id": ""},
    {"kind": "user", "subject_id": "   "},
    {"kind": "user", "subject_id": [USER]},
    {"kind": "user", "subject_id": {"id": USER}},
    {"kind": "user", "subject_id": True},
    {"kind": "user", "subject_id": 7.5},
    {"kind": "user", "subject_id": "x" * 201},
    {"subject_id": USER},
    {"kind": None, "subject_id": USER},
    {"kind": 5, "subject_id": USER},
    {"kind": "planet", "subject_id": USER},
    {"kind": "user", "subject_id": USER, "within_agent": ""},
    {"kind": "user", "subject_id": USER, "within_agent": ["A"]},
    {"kind": "user", "subject_id": USER, "within_agent": False},
    {"kind": "user", "subject_id": USER, "within_company": {"id": "C"}},
    {"kind": "user", "subject_id": USER, "within_company": 1.5},
    {"kind": "company", "subject_id": "C", "within_agent": "A"},
    # The usual names: meant as narrowing, they would widen the erasure to every agent.
    {"kind": "user", "subject_id": USER, "agent_id": "A"},
    {"kind": "user", "subject_id": USER, "user_id": USER},
]


def _nothing_written(services) -> None:
    import redis

    for table in ("erasures", "erasure_fences", "exports"):
        assert rows(services.database_url, f"SELECT * FROM {table}") == [], table
    client = redis.Redis.from_url(services.redis_url)
    assert list(client.scan_iter("memory:erasing:*")) == []
    assert [r["note"] for r in rows(services.database_url, "SELECT note FROM notes")] \
        == [USER_TEXT]


def _export_files(settings) -> set[str]:
    directory = settings.export_directory()
    return {p.name for p in directory.iterdir()} if directory.is_dir() else set()


def _send(name: str, *args: Any) -> dict[str, Any]:
    from worker.celery_app import app

    return dict(app.send_task(name, args=list(args)).get(timeout=30))


@pytest.mark.usefixtures("celery_worker")
@pytest.mark.parametrize("subject", BAD_SUBJECTS, ids=repr)
def test_forget_and_export_tasks_refuse_a_malformed_subject(subject, write, services, settings):
    from worker.app import task_names

    write(run_context("run-requests-1", user=USER), USER_TEXT)
    exports_before = _export_files(settings)
    answers = [_send(task_names.FORGET, subject, "dpo", False),
               _send(task_names.FORGET, subject, "dpo", True),
               _send(task_names.EXPORT, subject, "dpo")]
    for answer in answers:
        assert answer["ok"] is False and isinstance(answer["error"], str), answer
        assert set(answer) == {"ok", "error"}, answer
    _nothing_written(services)
    assert _export_files(settings) == exports_before


@pytest.mark.usefixtures("celery_worker")
@pytest.mark.parametrize("dry_run", [None, "yes", "false", 1, 0, [True]], ids=repr)
def test_forget_refuses_a_dry_run_that_is_not_true_or_false(dry_run, write, services):
    from worker.app import task_names

    write(run_context("run-requests-2", user=USER), USER_TEXT)
    answer = _send(task_names.FORGET, {"kind": "user", "subject_id": USER}, "dpo", dry_run)
    assert answer["ok"] is False and "dry_run" in answer["error"], answer
    _nothing_written(services)


@pytest.mark.usefixtures("celery_worker")
def test_the_errors_name_the_field_at_fault(write, services):
    from worker.app import task_names

    def error(subject: Any) -> str:
        return str(_send(task_names.FORGET, subject, "dpo", False)["error"])

    assert "subject_id" in error({"kind": "user", "subject_id": None})
    assert "subject_id" in error({"kind": "user"})
    assert "kind" in error({"kind": None, "subject_id": USER})
    assert "within_agent" in error({"kind": "user", "subject_id": USER, "within_agent": 1.5})
    assert "within_company" in error({"kind": "user", "subject_id": USER,
                                      "within_company": ""})
    unknown = error({"kind": "user", "subject_id": USER, "agent_id": "secret-agent-99"})
    assert "within_agent" in unknown and "secret-agent-99" not in unknown


@pytest.mark.usefixtures("celery_worker")
def test_null_narrowing_and_integer_ids_are_accepted(write, services):
    from worker.app import task_names

    write(run_context("run-requests-3", user="12345"), USER_TEXT)
    counted = _send(task_names.FORGET, {"kind": "user", "subject_id": 12345,
                                        "within_agent": None, "within_company": None},
                    "dpo", True)
    assert counted["ok"] is True and counted["counts"]["notes"] == 1, counted


@pytest.mark.usefixtures("celery_worker")
def test_client_helpers_answer_ok_false_for_a_malformed_subject(write, services):
    from worker.client import export_subject, forget_subject

    write(run_context("run-requests-4", user=USER), USER_TEXT)
    refused = [
        forget_subject("user", None, requested_by="dpo"),
        forget_subject("user", "", requested_by="dpo"),
        forget_subject("user", USER, agent_id="", requested_by="dpo"),
        forget_subject("user", USER, requested_by="dpo", dry_run="yes"),
        forget_subject(None, USER, requested_by="dpo"),
        export_subject("user", None, requested_by="dpo"),
        export_subject("user", USER, company_id=[], requested_by="dpo"),
    ]
    for answer in refused:
        assert isinstance(answer, dict) and answer["ok"] is False, answer
    _nothing_written(services)


def test_cli_refuses_malformed_subjects_and_requesters(runtime, write, services, tmp_path):
    from worker.cli import cli

    write(run_context("run-requests-5", user=USER), USER_TEXT)
    target = tmp_path / "out.jsonl"
    for args in (["forget", "user", "", "--yes", "--by", "dpo"],
                 ["forget", "user", " ", "--yes", "--by", "dpo"],
                 ["forget", "user", USER, "--agent", "", "--yes", "--by", "dpo"],
                 ["forget", "user", USER, "--company", "", "--dry-run"],
                 ["forget", "company", "C", "--agent", "A", "--yes", "--by", "dpo"],
                 ["forget", "user", USER, "--yes", "--by", " "],
                 ["forget", "user", USER, "--yes", "--by", "x" * 201],
                 ["export", "user", "", "--by", "dpo", "-o", str(target)],
                 ["export", "user", USER, "--agent", "", "--by", "dpo", "-o", str(target)],
                 ["export", "user", USER, "--by", " ", "-o", str(target)]):
        refused = runner.invoke(cli, args)
        assert refused.exit_code == 2, (args, refused.output)
        assert "Traceback" not in refused.output
    assert not target.exists()
    _nothing_written(services)
