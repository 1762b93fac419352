"""Retention (worker/manager/retention.py) against a real Postgres with an injected clock:
what is past its window goes, what is inside it (or still needed) stays, in bounded pages
that never block a write."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from db.queries.retention import (
    erase_retired_content_page,
    prune_messages_page,
    prune_runs_page,
    prune_trace_page,
    trim_note_events_page,
)
from tests.helpers import rows, run_context
from tests.manager_helpers import note_row, now_utc, phase_deps, run_cycle, seed_note
from worker.manager.retention import enforce_retention

DAY = timedelta(days=1)


def _sql(runtime: Any, sql: str, *params: Any) -> None:
    with runtime.db.transaction() as conn:
        conn.exec_driver_sql(sql, params)


def _run(runtime: Any, run_id: str, created: datetime, *, writes: int = 3,
         last_write: datetime | None = None) -> None:
    """A run with `writes` logged writes, the last one at `last_write` (default: created)."""
    last = last_write or created
    _sql(runtime, "INSERT INTO runs (run_id, agent_id, context_digest, applied_seq, created_at, "
                  "updated_at) VALUES (%s, 'A', 'digest', %s, %s, %s)",
         run_id, writes, created, last)
    for seq in range(1, writes + 1):
        at = created if seq < writes else last
        _sql(runtime, "INSERT INTO write_log (run_id, seq, payload_digest, disposition, reason, "
                      "duration_ms, applied_at) VALUES (%s, %s, 'p', 'written', 'ok', 1, %s)",
             run_id, seq, at)


def _candidate(runtime: Any, run_id: str, status: str) -> None:
    _sql(runtime, "INSERT INTO memory_candidates (id, run_id, seq, agent_id, source, type, note, "
                  "content_hash, status) VALUES (%s, %s, 1, 'A', 'reflection', 'Context', "
                  "'User may like tea', 'h', %s)", uuid.uuid4(), run_id, status)


def _trace(runtime: Any, at: datetime, n: int = 1) -> None:
    for _ in range(n):
        _sql(runtime, "INSERT INTO trace_events (event, created_at) VALUES ('memory_write', %s)",
             at)


def _count(services: Any, table: str, where: str = "true", *params: Any) -> int:
    return int(rows(services.database_url,
                    f"SELECT count(*) AS n FROM {table} WHERE {where}", *params)[0]["n"])


def _retire(runtime: Any, note_id: uuid.UUID, status: str, at: datetime) -> None:
    _sql(runtime, "UPDATE notes SET status = %s, valid_from = %s, valid_to = %s, "
                  "updated_at = %s WHERE id = %s", status, at - DAY, at, at, note_id)


def test_a_run_is_pruned_whole_once_its_last_write_is_past_the_window(runtime, services):
    now = now_utc()
    _run(runtime, "old", now - 10 * DAY, writes=4)
    _run(runtime, "long", now - 10 * DAY, writes=3, last_write=now - DAY)  # still writing
    _run(runtime, "fresh", now - DAY)
    _run(runtime, "held", now - 10 * DAY)  # a candidate still awaits promotion
    _candidate(runtime, "held", "candidate")
    _run(runtime, "decided", now - 10 * DAY, writes=2)
    _candidate(runtime, "decided", "rejected")
    counts = enforce_retention(phase_deps(runtime, now=now))
    assert (counts["write_log"], counts["runs"], counts["memory_candidates"]) == (6, 2, 1)
    left = {r["run_id"]: r["n"] for r in rows(
        services.database_url,
        "SELECT r.run_id, count(w.seq) AS n FROM runs r LEFT JOIN write_log w USING (run_id) "
        "GROUP BY r.run_id")}
    assert left == {"long": 3, "fresh": 3, "held": 3}
    assert _count(services, "memory_candidates") == 1
    # Inside the window nothing goes: a day later the long run is still 6 days from it.
    assert enforce_retention(phase_deps(runtime, now=now + DAY))["runs"] == 0


def test_a_redelivery_is_replayed_inside_the_window_and_applied_again_after_it(
        runtime, services, write):
    """Why the window is days: the write log is what makes a redelivery a replay. Once a
    run is pruned, the same message would be applied as a new write."""
    run = run_context("redelivered")
    payload = {"note": "User prefers tea over coffee", "type": "Preference"}
    first = write.raw(run, payload, 1)
    assert first["disposition"] == "written"
    enforce_retention(phase_deps(runtime, now=now_utc() + DAY))
    assert write.raw(run, payload, 1)["replayed"] is True
    counts = enforce_retention(phase_deps(runtime, now=now_utc() + 8 * DAY))
    assert counts["runs"] == 1 and counts["write_log"] == 1
    again = write.raw(run, payload, 1)
    assert again["replayed"] is False  # not answered from the log any more: applied anew
    assert _count(services, "runs", "run_id = 'redelivered'") == 1


def test_trace_events_and_cycles_past_their_windows_go(runtime, services):
    now = now_utc()
    _trace(runtime, now - 40 * DAY, 3)
    _trace(runtime, now - 20 * DAY, 2)
    for days in (50, 45, 44, 43, 42, 41, 1):
        _sql(runtime, "INSERT INTO manager_cycles (status, maintenance, started_at, watermarks) "
                      "VALUES ('succeeded', %s, %s, %s)",
             days == 45, now - days * DAY, '{"x": 1}' if days == 44 else "{}")
    settings = runtime.settings.model_copy(update={"cycle_keep_last": 2})
    counts = enforce_retention(phase_deps(runtime, now=now, settings=settings))
    assert counts["trace_events"] == 3 and _count(services, "trace_events") == 2
    kept = [round((now - r["started_at"]) / DAY) for r in rows(
        services.database_url, "SELECT started_at FROM manager_cycles ORDER BY id")]
    # The last maintenance (45) and the last watermarks (44) stay; so do the newest two.
    assert kept == [45, 44, 41, 1]
    assert counts["manager_cycles"] == 3


def test_only_extracted_messages_past_the_window_go_and_the_conversation_stays(
        runtime, services):
    now = now_utc()
    _sql(runtime, "INSERT INTO conversations (id, agent_id, extracted_through_seq, "
                  "last_message_seq) VALUES ('c-1', 'A', 2, 4)")
    for seq, days in ((1, 40), (2, 10), (3, 40), (4, 1)):  # 3: old but not yet extracted
        _sql(runtime, "INSERT INTO conversation_messages (id, conversation_id, role, text, "
                      "created_at, ingested_seq) VALUES (%s, 'c-1', 'user', 'hello', %s, %s)",
             f"m-{seq}", now - days * DAY, seq)
    counts = enforce_retention(phase_deps(runtime, now=now))
    assert counts["conversation_messages"] == 1
    assert [r["id"] for r in rows(services.database_url, "SELECT id FROM conversation_messages "
                                  "ORDER BY ingested_seq")] == ["m-2", "m-3", "m-4"]
    assert _count(services, "conversations") == 1
    assert _count(services, "conversation_tombstones") == 0


def test_retired_notes_lose_text_and_vector_but_keep_their_row(runtime, services):
    now = now_utc()
    archived = seed_note(runtime, "User lived in Lisbon", user="U1", at=now - 60 * DAY)
    revoked = seed_note(runtime, "User's budget is 5k", user="U2", at=now - 60 * DAY)
    recent = seed_note(runtime, "User uses Vim", user="U3", at=now - 60 * DAY)
    active = seed_note(runtime, "User likes tea", user="U4", at=now - 400 * DAY)
    _retire(runtime, archived, "Archived", now - 31 * DAY)
    _retire(runtime, revoked, "Revoked", now - 40 * DAY)
    _retire(runtime, recent, "Archived", now - 29 * DAY)
    counts = enforce_retention(phase_deps(runtime, now=now))
    assert counts["note_content"] == 2
    for note_id, status in ((archived, "Archived"), (revoked, "Revoked")):
        row = note_row(services.database_url, note_id)
        assert row["status"] == status and row["valid_to"] is not None  # lineage stays
        assert row["note"] is None and row["content_hash"] is None
        assert row["embedding"] is None and row["embedding_model"] is None
        assert row["content_erased_at"] == now
    for note_id in (recent, active):
        row = note_row(services.database_url, note_id)
        assert row["note"] and row["embedding"] is not None and row["content_erased_at"] is None
    # An erased note can never be injected again: the database refuses to revive it.
    with pytest.raises(psycopg.errors.CheckViolation), psycopg.connect(
            services.database_url) as conn:
        conn.execute("UPDATE notes SET status = 'Active' WHERE id = %s", (archived,))
    assert enforce_retention(phase_deps(runtime, now=now))["note_content"] == 0


def _memo(runtime: Any, key: str, texts: tuple[str, ...], at: datetime) -> None:
    from db.queries.manager import memo_put
    from worker.normalize import content_hash

    with runtime.db.transaction() as conn:
        memo_put(conn, "pair", key, "distinct", "model", at, [content_hash(t) for t in texts])


def test_judge_memos_go_with_an_erased_text_and_past_their_window(runtime, services):
    now = now_utc()
    gone = seed_note(runtime, "User lived in Lisbon", user="U1", at=now - 60 * DAY)
    _retire(runtime, gone, "Archived", now - 31 * DAY)
    _memo(runtime, "on-erased-text", ("User lived in Lisbon", "User lives in Porto"), now)
    _memo(runtime, "on-live-texts", ("User likes tea", "User likes green tea"), now)
    _memo(runtime, "old", ("User likes tea", "User uses Vim"), now - 91 * DAY)
    counts = enforce_retention(phase_deps(runtime, now=now))
    assert counts["note_content"] == 1 and counts["judge_memo"] == 2
    assert [r["key"] for r in rows(services.database_url, "SELECT key FROM judge_memo")] \
        == ["on-live-texts"]


def test_dead_letters_past_their_window_go(runtime, services):
    now = now_utc()
    for days in (31, 29):
        _sql(runtime, "INSERT INTO dead_letters (task_id, reason, body, created_at) "
                      "VALUES ('t', 'poison', '{\"note\": \"User is 41\"}', %s)",
             now - days * DAY)
    assert enforce_retention(phase_deps(runtime, now=now))["dead_letters"] == 1
    assert _count(services, "dead_letters") == 1


def test_note_events_of_live_notes_stay_and_long_retired_notes_keep_their_last(runtime,
                                                                              services):
    """A note retired within the window keeps its whole history too."""
    now = now_utc()
    live = seed_note(runtime, "User likes tea", user="U1", at=now - 200 * DAY)
    retired = seed_note(runtime, "User likes coffee", user="U2", at=now - 200 * DAY)
    young = seed_note(runtime, "User likes juice", user="U3", at=now - 200 * DAY)
    _retire(runtime, retired, "Archived", now - 100 * DAY)
    _retire(runtime, young, "Archived", now - 10 * DAY)
    for note_id, ages in ((live, (150, 120, 100)), (retired, (150, 120, 100)),
                          (young, (150, 120, 10))):
        for days in ages:
            _sql(runtime, "INSERT INTO note_events (note_id, action, actor, reason, created_at) "
                          "VALUES (%s, 'reinforced', 'hardening', 'test', %s)",
                 note_id, now - days * DAY)
    settings = runtime.settings.model_copy(update={"retention_page_size": 2})
    counts = enforce_retention(phase_deps(runtime, now=now, settings=settings))
    ages = {n: sorted(round((now - r["created_at"]) / DAY) for r in rows(
        services.database_url, "SELECT created_at FROM note_events WHERE note_id = %s", n))
        for n in (live, retired, young)}
    assert ages == {live: [100, 120, 150], retired: [100], young: [10, 120, 150]}
    assert counts["note_events"] == 2
    assert counts["watermark"] == {"note_events_after": 0}  # the scan reached the end


def test_a_cycle_stops_at_its_budget_and_the_next_one_continues(runtime, services):
    now = now_utc()
    _trace(runtime, now - 40 * DAY, 25)
    settings = runtime.settings.model_copy(
        update={"retention_page_size": 10, "retention_rows_per_cycle": 15})
    first = enforce_retention(phase_deps(runtime, now=now, settings=settings))
    assert first["trace_events"] == 15 and first["budget_exhausted"] is True
    second = enforce_retention(phase_deps(runtime, now=now, settings=settings))
    assert second["trace_events"] == 10 and second["budget_exhausted"] is False
    assert _count(services, "trace_events") == 0


def test_a_window_of_zero_keeps_that_data_forever(runtime, services):
    now = now_utc()
    _trace(runtime, now - 4000 * DAY, 2)
    settings = runtime.settings.model_copy(update={"trace_retention_days": 0})
    counts = enforce_retention(phase_deps(runtime, now=now, settings=settings))
    assert counts["trace_events"] == 0 and _count(services, "trace_events") == 2


def test_the_cycle_records_retention_counts_on_its_row(runtime, services):
    now = now_utc()
    _trace(runtime, now - 40 * DAY, 4)
    _run(runtime, "old", now - 10 * DAY, writes=2)
    report = run_cycle(runtime, now=now, force_maintenance=True)
    [phase] = [p for p in report.phases if p["phase"] == "retention"]
    assert phase["error"] is None
    [row] = rows(services.database_url, "SELECT phases, watermarks FROM manager_cycles "
                 "WHERE id = %s", report.cycle_id)
    [stored] = [p for p in row["phases"] if p["phase"] == "retention"]
    assert stored["counts"]["trace_events"] == 4
    assert (stored["counts"]["write_log"], stored["counts"]["runs"]) == (2, 1)
    assert row["watermarks"]["retention"] == {"note_events_after": 0}


def test_a_page_in_progress_does_not_block_writes(runtime, services, write):
    """Every kind of page holds its locks while a write runs in another session: the write
    completes under a short lock_timeout, and through the real write path."""
    now = now_utc()
    old = now - 100 * DAY
    _run(runtime, "idle", old)
    _run(runtime, "active", now - DAY)
    _trace(runtime, old, 3)
    _sql(runtime, "INSERT INTO conversations (id, agent_id, extracted_through_seq, "
                  "last_message_seq) VALUES ('c-1', 'A', 1, 1)")
    _sql(runtime, "INSERT INTO conversation_messages (id, conversation_id, role, text, "
                  "created_at, ingested_seq) VALUES ('m-1', 'c-1', 'user', 'hi', %s, 1)", old)
    retired = seed_note(runtime, "User lived in Lisbon", at=old)
    _retire(runtime, retired, "Archived", old)
    for _ in range(2):
        _sql(runtime, "INSERT INTO note_events (note_id, action, actor, reason, created_at) "
                      "VALUES (%s, 'archived', 'decay', 'test', %s)", retired, old)
    cutoff = now - 30 * DAY
    with runtime.db.transaction() as page:
        assert prune_runs_page(page, cutoff=cutoff, limit=10)[3] == 1
        assert prune_trace_page(page, cutoff=cutoff, limit=10) == 3
        assert prune_messages_page(page, cutoff=cutoff, limit=10) == 1
        assert erase_retired_content_page(page, cutoff=cutoff, now=now, limit=10) == (1, 0)
        assert trim_note_events_page(page, after=0, cutoff=cutoff, limit=10)[3] == 1
        with psycopg.connect(services.database_url, autocommit=True) as other:
            other.execute("SET lock_timeout = '500ms'")
            other.execute("INSERT INTO note_events (note_id, action, actor, reason) "
                          "VALUES (%s, 'flagged', 'test', 'a reference to the note')",
                          (retired,))
            other.execute("INSERT INTO trace_events (event) VALUES ('memory_write')")
            other.execute("INSERT INTO conversation_messages (id, conversation_id, role, "
                          "text) VALUES ('m-2', 'c-1', 'user', 'hello again')")
            other.execute("INSERT INTO write_log (run_id, seq, payload_digest, disposition, "
                          "reason, duration_ms, applied_at) "
                          "VALUES ('active', 4, 'p', 'written', 'ok', 1, now())")
            other.execute("UPDATE runs SET applied_seq = 4 WHERE run_id = 'active'")
        done: list[dict[str, Any]] = []
        writer = threading.Thread(target=lambda: done.append(
            write(run_context("live"), "User prefers short answers")))
        writer.start()
        writer.join(timeout=20)
        assert done and done[0]["disposition"] == "written"


def test_export_files_past_their_window_go_and_nothing_else_in_the_directory(
        runtime, services, tmp_path):
    import os

    now = now_utc()
    settings = runtime.settings.model_copy(update={"export_dir": tmp_path})
    old = tmp_path / "export-user-0123456789abcdef-20250101T000000Z-aa.jsonl"
    stray = tmp_path / "export-user-0123456789abcdef-20250101T000000Z-bb.jsonl.partial"
    young = tmp_path / "export-company-fedcba9876543210-20250107T000000Z-cc.jsonl"
    unrelated = tmp_path / "notes-of-the-operator.jsonl"
    for path, age in ((old, 8), (stray, 8), (young, 6), (unrelated, 400)):
        path.write_text('{"type": "header"}\n')
        at = (now - age * DAY).timestamp()
        os.utime(path, (at, at))
    counts = enforce_retention(phase_deps(runtime, now=now, settings=settings))
    assert counts["export_files"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([young.name, unrelated.name])
    kept = settings.model_copy(update={"export_file_retention_days": 0})
    assert "export_files" not in enforce_retention(phase_deps(runtime, now=now + 30 * DAY,
                                                              settings=kept))
    assert young.exists()


def test_audit_records_left_running_by_a_dead_process_are_closed_as_interrupted(
        runtime, services):
    now = now_utc()
    for table in ("erasures", "exports"):
        for started in (now - 2 * DAY, now - DAY / 24):
            _sql(runtime, f"INSERT INTO {table} (subject_kind, subject_hash, requested_by, "
                          "status, started_at) VALUES ('user', 'h', 'dpo', 'running', %s)",
                 started)
    counts = enforce_retention(phase_deps(runtime, now=now))
    assert counts["audit_interrupted"] == 2
    for table in ("erasures", "exports"):
        found = rows(services.database_url,
                     f"SELECT status, error, finished_at FROM {table} ORDER BY started_at")
        old, young = found
        assert old["status"] == "failed" and old["error"].startswith("interrupted")
        assert old["finished_at"] is not None
        assert young["status"] == "running", "an erasure still in progress is left alone"
