"""The cycle itself: beat schedule, single-flight, the cycle record, phase isolation, the
maintenance trigger, and the Celery task."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from celery.schedules import crontab

from beat_schedule import beat_schedule
from tests.helpers import Writer, rows, run_context
from tests.manager_helpers import now_utc, run_cycle
from worker.manager import cycle as cycle_module


def test_beat_schedule_fires_the_cycle_every_15_minutes_on_the_manager_queue(settings):
    from worker.celery_app import app

    app.loader.import_default_modules()  # what a worker or beat does at start
    schedule = beat_schedule(settings)
    entry = schedule["memory-manager-cycle"]
    assert entry["task"] in app.tasks
    assert isinstance(entry["schedule"], crontab)
    assert entry["schedule"].minute == {0, 15, 30, 45}
    assert entry["schedule"].hour == set(range(24))
    assert entry["options"]["queue"] == settings.manager_queue
    assert 0 < entry["options"]["expires"] < 900
    assert app.conf.beat_schedule == schedule
    assert app.conf.timezone == "UTC" and app.conf.enable_utc
    route = app.amqp.router.route({}, entry["task"])
    assert route["queue"].name == settings.manager_queue
    limits = app.conf.task_annotations[entry["task"]]
    assert limits["soft_time_limit"] < limits["time_limit"] == settings.cycle_time_limit_s


def test_a_cycle_records_every_phase_with_times_counts_and_no_error(runtime, services):
    report = run_cycle(runtime, force_maintenance=True)
    assert report.status.value == "succeeded"
    [row] = rows(services.database_url, "SELECT * FROM manager_cycles")
    assert row["status"] == "succeeded" and row["maintenance"] and row["finished_at"]
    names = [p["phase"] for p in row["phases"]]
    assert names == ["vectors", "access", "hardening", "extraction", "importance",
                     "consolidation", "contradictions", "stale_references", "decay", "ttl",
                     "retention"]
    for phase in row["phases"]:
        assert phase["error"] is None
        assert phase["started_at"] <= phase["finished_at"]
        assert isinstance(phase["counts"], dict)
    steps = rows(services.database_url,
                 "SELECT detail FROM trace_events WHERE event = 'memory_manager_phase'")
    assert [s["detail"]["phase"] for s in steps] == names


def test_a_failing_phase_is_recorded_and_the_others_still_run(runtime, services, monkeypatch):
    def broken(deps):
        raise RuntimeError("boom\nDETAIL: Failing row contains (secret note text)")

    phases = list(cycle_module.EVERY_CYCLE)
    monkeypatch.setattr(cycle_module, "EVERY_CYCLE", [("broken", broken), *phases])
    write = Writer(runtime.write_deps())
    write(run_context("r1"), "User prefers metric units")
    report = run_cycle(runtime)
    assert report.status.value == "failed"
    [row] = rows(services.database_url, "SELECT * FROM manager_cycles")
    by_name = {p["phase"]: p for p in row["phases"]}
    assert by_name["broken"]["error"] == "RuntimeError: boom"  # first line only: no row text
    assert by_name["hardening"]["error"] is None
    assert by_name["hardening"]["counts"]["hardened"] == 1
    assert "secret" not in str(row)


def test_two_cycles_at_once_one_runs_one_is_recorded_as_skipped(runtime, services):
    inside, release = threading.Event(), threading.Event()

    def hold(record):
        if record["phase"] == "hardening":
            inside.set()
            release.wait(30)

    results = {}
    first = threading.Thread(target=lambda: results.setdefault(
        "first", cycle_module.run_manager_cycle(runtime.db, runtime.settings, runtime.embedder,
                                                now=now_utc(), on_phase=hold)))
    first.start()
    assert inside.wait(30)
    second = run_cycle(runtime)
    release.set()
    first.join(30)
    assert second.status.value == "skipped"
    assert results["first"].status.value == "succeeded"
    statuses = [r["status"] for r in rows(services.database_url,
                                          "SELECT status FROM manager_cycles ORDER BY id")]
    assert sorted(statuses) == ["skipped", "succeeded"]
    skips = rows(services.database_url,
                 "SELECT * FROM trace_events WHERE event = 'memory_manager_cycle_skipped'")
    assert len(skips) == 1


def test_a_cycle_whose_process_died_is_marked_abandoned_by_the_next(runtime, services):
    from db.enums import CycleStatus
    from db.queries.manager import insert_cycle

    with runtime.db.transaction() as conn:
        insert_cycle(conn, status=CycleStatus.RUNNING, forced=False, now=now_utc(),
                     task_id=None)
    run_cycle(runtime)
    statuses = rows(services.database_url, "SELECT status, error FROM manager_cycles ORDER BY id")
    assert statuses[0]["status"] == "failed" and "abandoned" in statuses[0]["error"]
    assert statuses[1]["status"] == "succeeded"


def test_maintenance_fires_once_a_day_at_the_15_minute_cadence(runtime):
    start = now_utc() + timedelta(minutes=1)
    fired = []
    for tick in range(0, 4 * 24 * 2 + 1):  # two days of beat ticks
        report = run_cycle(runtime, now=start + timedelta(minutes=15 * tick))
        if report.maintenance:
            fired.append(tick)
    # The first ever cycle maintains; then every 24 h (96 ticks) and not in between.
    assert fired == [0, 96, 192]


def test_maintenance_fires_on_100_new_notes_and_not_before(runtime):
    write = Writer(runtime.write_deps())
    start = now_utc() + timedelta(minutes=1)
    assert run_cycle(runtime, now=start).maintenance  # the first one
    # One note for each of 100 users: nothing for hardening to merge.
    for i in range(99):
        write(run_context(f"bulk-{i}", user=f"U{i}"), "User prefers metric units")
    second = run_cycle(runtime, now=start + timedelta(minutes=15))
    assert second.counts["new_notes"] == 99 and not second.maintenance
    write(run_context("bulk-99", user="U99"), "User prefers metric units")
    third = run_cycle(runtime, now=start + timedelta(minutes=30))
    assert third.maintenance, third.maintenance_reason
    assert "100 new notes" in third.maintenance_reason
    fourth = run_cycle(runtime, now=start + timedelta(minutes=45))
    assert not fourth.maintenance


@pytest.mark.usefixtures("celery_worker")
def test_the_cycle_task_runs_on_the_manager_queue_and_forces_maintenance(runtime, services):
    from worker.app.tasks import memory_manager_cycle

    write = Writer(runtime.write_deps())
    write(run_context("r1"), "User prefers dark mode")
    result = memory_manager_cycle.apply_async(kwargs={"force": True, "maintenance": True})
    report = result.get(timeout=60)
    assert report["status"] == "succeeded" and report["maintenance"]
    [row] = rows(services.database_url, "SELECT * FROM manager_cycles")
    assert row["forced"] and row["task_id"] == result.id
    assert rows(services.database_url, "SELECT status FROM notes")[0]["status"] == "Active"


def test_cli_runs_a_cycle_lists_it_and_shows_a_notes_history(runtime, services):
    from typer.testing import CliRunner

    from worker.cli import cli

    write = Writer(runtime.write_deps())
    result = write(run_context("r1"), "User prefers metric units")
    runner = CliRunner()
    ran = runner.invoke(cli, ["cycle", "run", "--maintenance", "--json"])
    assert ran.exit_code == 0, ran.output
    report = json.loads(ran.output)
    assert report["status"] == "succeeded" and report["maintenance_reason"] == "forced"
    listed = json.loads(runner.invoke(cli, ["cycle", "list", "--json"]).output)
    assert [c["id"] for c in listed] == [report["cycle_id"]] and listed[0]["forced"]
    table = runner.invoke(cli, ["cycle", "list"], env={"COLUMNS": "200"})
    assert "succeeded" in table.output
    history = json.loads(runner.invoke(cli, ["notes", "history", result["note_id"],
                                             "--json"]).output)
    assert [(h["source"], h["action"]) for h in history] == [("write", "written"),
                                                             ("event", "hardened")]
    assert history[0]["run_id"] == "r1" and history[1]["actor"] == "hardening"
    assert "metric" not in json.dumps(history)  # history never carries note text
    missing = runner.invoke(cli, ["notes", "history", "not-a-uuid"])
    assert missing.exit_code != 0


def test_a_cycle_after_a_database_restart_runs_on_fresh_connections(runtime, services):
    # The pool's connections are from before the restart; the cycle's first statement finds
    # one dead and the cycle still runs (as `build_context` does).
    assert run_cycle(runtime).status.value == "succeeded"
    import psycopg

    with psycopg.connect(services.admin_url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = 'memory-worker' AND pid <> pg_backend_pid()"
        ).fetchone()[0]
    assert killed >= 1
    try:
        assert run_cycle(runtime).status.value == "succeeded"
    finally:
        from db.connector import dispose_all

        dispose_all()  # the other pools of this process lost connections too: no stale one left
