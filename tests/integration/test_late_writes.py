"""A write older than what its run already applied (it arrived after its gap was declared, or
was retried after an `error`) never overrides newer state of its run: last write wins means
last in the run's order, not last to arrive. Through the real write path."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import psycopg

from tests.helpers import notes, rows, run_context
from worker.writes.apply import WaitForSequence, WriteResult, apply_memory_write, utc_now

CHF = "User's currency is CHF."
EUR = "User's currency is EUR."


def _after_a_declared_gap(write, run, note: str, seq: int) -> dict:
    """Apply `seq` (its predecessor never came): it waits, then the gap is declared."""
    payload = {"note": note, "type": "Preference"}
    assert isinstance(write.attempt(run, payload, seq), WaitForSequence)
    timeout = write.deps.settings.seq_gap_timeout_s
    later = replace(write.deps, clock=lambda: utc_now() + timedelta(seconds=timeout + 1))
    outcome = apply_memory_write(later, run, payload, seq)
    assert isinstance(outcome, WriteResult), outcome
    return outcome.as_dict()


def _logged(services, run_id: str) -> dict[int, str]:
    return {row["seq"]: row["disposition"] for row in rows(
        services.database_url, "SELECT seq, disposition FROM write_log WHERE run_id = %s",
        run_id)}


def test_a_late_correction_of_a_newer_note_of_its_run_is_skipped_stale(write, services):
    run = run_context("late-1")
    newer = _after_a_declared_gap(write, run, CHF, 3)
    assert newer["disposition"] == "written" and "out_of_order" not in newer

    late = write(run, EUR, seq=2)

    assert late["disposition"] == "skipped-stale", late
    assert late["out_of_order"] is True
    assert "seq 3" in late["reason"] and "never overrides" in late["reason"]
    assert late["note_id"] == newer["note_id"]
    [note] = notes(services.database_url)
    assert note["note"] == CHF and note["status"] == "Provisional"
    assert _logged(services, "late-1") == {2: "skipped-stale", 3: "written"}


def test_a_late_write_about_something_else_is_applied_and_flagged(write, services):
    run = run_context("late-2")
    _after_a_declared_gap(write, run, CHF, 3)

    late = write(run, "User's dog is called Pixel.", seq=2)

    assert late["disposition"] == "written" and late["out_of_order"] is True
    assert sorted(n["note"] for n in notes(services.database_url)) == [
        CHF, "User's dog is called Pixel."]
    [trace] = rows(services.database_url, "SELECT detail FROM trace_events "
                   "WHERE run_id = 'late-2' AND seq = 2")
    assert trace["detail"]["applied_out_of_order"] is True


def test_an_own_note_changed_by_a_later_write_is_not_superseded_by_an_older_one(write,
                                                                                services):
    """The note was written at seq 1 and corrected in place at seq 3: seq 2, late, would
    replace it by recency ("superseded-own") and leave the run saying EUR."""
    run = run_context("late-3")
    first = write(run, "User's currency is USD.", seq=1)
    corrected = _after_a_declared_gap(write, run, CHF, 3)
    assert corrected["disposition"] == "superseded-own"
    assert corrected["note_id"] == first["note_id"]

    late = write(run, EUR, seq=2)

    assert late["disposition"] == "skipped-stale" and late["out_of_order"] is True
    [note] = notes(services.database_url)
    assert note["note"] == CHF


def test_a_late_write_is_never_recorded_as_correcting_what_a_later_write_restated(
        write, services):
    """Another run's note, restated by this run's seq 3: a late EUR recorded as correcting
    it would have hardening revoke the run's latest word."""
    earlier_run = write(run_context("late-4-before"), CHF, seq=1)
    run = run_context("late-4")
    restated = _after_a_declared_gap(write, run, CHF, 3)
    assert restated["disposition"] == "deduped"
    assert restated["note_id"] == earlier_run["note_id"]

    late = write(run, EUR, seq=2)

    assert late["disposition"] == "skipped-stale", late
    assert [n["note"] for n in notes(services.database_url)] == [CHF]
    assert all(n["corrects_note_id"] is None for n in notes(services.database_url))


def test_an_in_order_correction_still_replaces_the_runs_own_note(write, services):
    """Control: in order, EUR then CHF, the later CHF wins as before."""
    run = run_context("late-5")
    write(run, EUR, seq=1)
    second = write(run, CHF, seq=2)
    assert second["disposition"] == "superseded-own" and "out_of_order" not in second
    assert [n["note"] for n in notes(services.database_url)] == [CHF]


def test_a_write_retried_after_an_error_does_not_override_the_writes_after_it(write,
                                                                               services):
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute("""
            CREATE FUNCTION fail_eur_notes() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.note LIKE '%EUR%' THEN RAISE EXCEPTION 'disk on fire'; END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER fail_eur BEFORE INSERT ON notes
                FOR EACH ROW EXECUTE FUNCTION fail_eur_notes();
        """)
    try:
        run = run_context("late-6")
        assert write(run, EUR, seq=1)["disposition"] == "error"
        assert write(run, CHF, seq=2)["disposition"] == "written"
    finally:
        with psycopg.connect(services.database_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER fail_eur ON notes; DROP FUNCTION fail_eur_notes()")

    retried = write(run, EUR, seq=1)

    assert retried["disposition"] == "skipped-stale" and retried["out_of_order"] is True
    assert [n["note"] for n in notes(services.database_url)] == [CHF]


ADDRESS = "User's home address is 4 Rue de Lyon, Paris."
NEW_ADDRESS = "User's home address is 9 Elm Road, Leeds."


def _forget(write, run, seq: int, **request) -> dict:
    from worker.erasure.fact import forget_fact

    outcome = forget_fact(write.deps, run, request, seq)
    assert isinstance(outcome, WriteResult), outcome
    return outcome.as_dict()


def test_a_late_forget_request_spares_what_later_writes_of_its_run_wrote(write, seed,
                                                                         services):
    """The user said "forget my address" (seq 2), then gave a new one (seq 3); seq 2 came
    last. The old address goes; the new one, written after the request, stays."""
    old = seed(ADDRESS)
    run = run_context("late-7")
    newer = _after_a_declared_gap(write, run, NEW_ADDRESS, 3)
    assert newer["disposition"] == "written"

    answer = _forget(write, run, 2, about="my home address")

    assert answer["disposition"] == "forgotten" and answer["out_of_order"] is True
    assert [item["note_id"] for item in answer["forgotten"]] == [str(old)]
    assert "1 matching note(s) kept" in answer["reason"] and "seq 3" in answer["reason"]
    statuses = {n["id"]: n["status"] for n in notes(services.database_url)}
    assert statuses == {old: "Revoked", uuid.UUID(newer["note_id"]): "Provisional"}


def test_a_late_forget_request_naming_only_newer_notes_forgets_nothing(write, services):
    run = run_context("late-8")
    newer = _after_a_declared_gap(write, run, NEW_ADDRESS, 3)

    answer = _forget(write, run, 2, note_ids=[newer["note_id"]])

    assert answer["disposition"] == "nothing-to-forget" and answer["out_of_order"] is True
    [note] = notes(services.database_url)
    assert note["status"] == "Provisional"
