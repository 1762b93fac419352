"""The read path through Celery (`memory.context`), the Python API and the CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.helpers import TaskEvents, run_context
from worker.cli import cli
from worker.client import build_memory_context, enqueue_memory_writes

pytestmark = pytest.mark.usefixtures("celery_worker")


def _context_task(request: dict) -> dict:
    from worker.celery_app import app

    return app.send_task("memory.context", args=(request,)).get(timeout=30)


def test_a_write_is_visible_to_the_very_next_read(services):
    fact = "User prefers gauge charts for tracking KPIs."
    [result] = enqueue_memory_writes(run_context("rw-1"), [{"note": fact, "type": "Preference"}]
                                     ).results(timeout=30)
    assert result["disposition"] == "written"
    direct = build_memory_context("A", "U", "C", input_text="Which chart for the KPI dashboard?")
    assert f"(provisional) {fact}" in direct.rendered
    via_task = _context_task({"agent_id": "A", "user_id": "U", "company_id": "C",
                              "input_text": "Which chart for the KPI dashboard?"})
    assert via_task["ok"] is True
    assert via_task["rendered"] == direct.rendered, "same notes in, same bytes out"
    assert [n["note"] for n in via_task["notes"]] == [fact]
    assert via_task["notes"][0]["status"] == "Provisional"


def test_context_task_answers_bad_requests_with_an_error(services, db):
    from worker.agents import configure_agent

    assert _context_task({"user_id": "U"}) == {"ok": False,
                                               "error": "request.agent_id is required"}
    assert _context_task("nonsense")["ok"] is False
    with db.transaction() as conn:
        configure_agent(conn, "tenant-agent",
                        {"scope_config": {"dimensions": {"region": {"required": True}}}})
    missing = _context_task({"agent_id": "tenant-agent"})
    assert missing["ok"] is False and "region" in missing["error"]
    assert _context_task({"agent_id": "tenant-agent",
                          "secondary_scopes": {"region": ["eu", "us"]}})["ok"] is True


def test_cli_context_prints_the_rendered_block_and_json(services):
    enqueue_memory_writes(run_context("cli-1"), [
        {"note": "User reads reports on a phone.", "type": "Context"}]).results(timeout=30)
    runner = CliRunner()
    plain = runner.invoke(cli, ["context", "A", "What device does the user read reports on?",
                                "--user", "U", "--company", "C"])
    assert plain.exit_code == 0, plain.output
    assert "(provisional) User reads reports on a phone." in plain.output
    assert "<memory_policy>" in plain.output
    as_json = runner.invoke(cli, ["context", "A", "What device does the user read reports on?",
                                  "--user", "U", "--company", "C", "--json", "--no-policy"])
    payload = json.loads(as_json.output)
    assert payload["notes"][0]["note"] == "User reads reports on a phone."
    assert "<memory_policy>" not in payload["rendered"]
    other_user = runner.invoke(cli, ["context", "A", "reports", "--user", "U2"])
    assert "(no memory to inject)" in other_user.output


def test_context_results_stay_out_of_task_events(services):
    from worker.celery_app import app

    enqueue_memory_writes(run_context("ev-1"), [
        {"note": "User's locker code is pomegranate-55.", "type": "Context"}]).results(timeout=30)
    with TaskEvents(app) as captured:
        result = _context_task({"agent_id": "A", "user_id": "U", "company_id": "C",
                                "input_text": "What is the user's locker code?"})
        captured.wait_for("task-succeeded")
    assert "pomegranate" in result["rendered"], "the caller gets the memory"
    assert "pomegranate" not in json.dumps(captured.events), "events (Flower) do not"
