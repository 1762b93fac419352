"""Retention benchmark: storage levels off at the retention windows instead of growing with
every write.

    .venv/bin/python bench/retention.py                 # 60 days, embedded Postgres in a temp dir
    .venv/bin/python bench/retention.py --days 90 --runs-per-day 2000

A steady load is simulated day by day with an injected clock: each day's rows are inserted
directly with that day's timestamps (runs with their write log and trace steps, notes with
synthetic 384-dim vectors and their lineage events, a share of older notes retired, recorded
conversations already extracted, 96 cycle rows), then the retention phase runs once with
"now" at the end of the day, as the daily maintenance would. Every 10 days the row count of
each table is printed, with the rows inserted so far for comparison and the on-disk size of
the tables (heap, indexes and TOAST). Defaults are the product's windows.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import psycopg  # noqa: E402

DIMS = 384
MODEL = "bench-synthetic"
START = datetime(2025, 1, 1, tzinfo=UTC)
TABLES = ("runs", "write_log", "trace_events", "conversation_messages", "note_events",
          "manager_cycles", "notes")


def _copy(conn: psycopg.Connection, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    with conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _vector_text(rng: np.random.Generator) -> str:
    v = rng.standard_normal(DIMS).astype(np.float32)
    return "[" + ",".join(f"{x:.4f}" for x in v / np.linalg.norm(v)) + "]"


def simulate_day(conn: psycopg.Connection, day: int, args: argparse.Namespace,
                 rng: np.random.Generator, inserted: dict[str, int]) -> None:
    base = START + timedelta(days=day)
    spread = 86400 / max(1, args.runs_per_day)
    runs, log, trace = [], [], []
    for i in range(args.runs_per_day):
        run_id = f"d{day}-r{i}"
        at = base + timedelta(seconds=i * spread)
        runs.append((run_id, "A", "digest", args.writes_per_run, at, at))
        for seq in range(1, args.writes_per_run + 1):
            log.append((run_id, seq, "p", "written", "ok", 1.0, at))
            trace.append(("memory_write", run_id, seq, at))
    for c in range(96 * 10):  # every cycle's phase steps
        trace.append(("memory_manager_phase", None, None, base + timedelta(seconds=c * 90)))
    _copy(conn, "runs", "run_id, agent_id, context_digest, applied_seq, created_at, updated_at",
          runs)
    _copy(conn, "write_log", "run_id, seq, payload_digest, disposition, reason, duration_ms, "
          "applied_at", log)
    _copy(conn, "trace_events", "event, run_id, seq, created_at", trace)

    notes, events = [], []
    for i in range(args.notes_per_day):
        note_id = uuid.uuid4()
        at = base + timedelta(seconds=i * 86400 / args.notes_per_day)
        text = f"User fact {day}-{i}: prefers option {rng.integers(1000)} for reports"
        notes.append((note_id, "A", f"u{i % 500}", "c", "Preference", text, f"h{day}-{i}",
                      "Active", _vector_text(rng), MODEL, at, at, at))
        events.append((note_id, "hardened", "Provisional", "Active", "hardening", "kept", at))
    _copy(conn, "notes", "id, agent_id, user_id, company_id, type, note, content_hash, status, "
          "embedding, embedding_model, valid_from, created_at, updated_at", notes)
    # A share of the notes created a week ago is retired today (decay, duplicates, ...).
    retired = conn.execute(
        "WITH r AS (SELECT id FROM notes WHERE status = 'Active' AND created_at < %s "
        "ORDER BY created_at LIMIT %s) UPDATE notes n SET status = 'Archived', valid_to = %s, "
        "updated_at = %s FROM r WHERE n.id = r.id RETURNING n.id",
        (base - timedelta(days=7), int(args.notes_per_day * args.retired_share), base,
         base)).fetchall()
    events += [(nid, "decayed", "Active", "Archived", "decay", "faded", base)
               for (nid,) in retired]
    _copy(conn, "note_events", "note_id, action, from_status, to_status, actor, reason, "
          "created_at", events)

    conversations, messages = [], []
    for c in range(args.conversations_per_day):
        conv = f"d{day}-c{c}"
        at = base + timedelta(seconds=c * 86400 / max(1, args.conversations_per_day))
        # Already extracted: the watermark is past every message (ingested_seq is global).
        conversations.append((conv, "A", 10**10, 10**10, at, at))
        messages += [(f"{conv}-m{m}", conv, "user" if m % 2 == 0 else "assistant",
                      f"message {m} of {conv} with some ordinary conversation text", at)
                     for m in range(10)]
    _copy(conn, "conversations", "id, agent_id, extracted_through_seq, last_message_seq, "
          "created_at, updated_at", conversations)
    _copy(conn, "conversation_messages", "id, conversation_id, role, text, created_at", messages)

    cycles = [("succeeded", c % 96 == 0, base + timedelta(minutes=15 * c), "{}")
              for c in range(96)]
    _copy(conn, "manager_cycles", "status, maintenance, started_at, watermarks", cycles)
    for table, n in (("runs", len(runs)), ("write_log", len(log)), ("trace_events", len(trace)),
                     ("notes", len(notes)), ("note_events", len(events)),
                     ("conversation_messages", len(messages)),
                     ("manager_cycles", len(cycles))):
        inserted[table] = inserted.get(table, 0) + n


def snapshot(conn: psycopg.Connection) -> dict[str, int]:
    counts = {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # type: ignore[index]  # noqa: S608
              for t in TABLES}
    counts["notes_with_text"] = int(conn.execute(  # type: ignore[index]
        "SELECT count(*) FROM notes WHERE content_erased_at IS NULL").fetchone()[0])
    size = conn.execute("SELECT sum(pg_total_relation_size(c)) FROM unnest(%s::regclass[]) c",
                        (list(TABLES),)).fetchone()
    counts["mb"] = int((size[0] if size else 0) or 0) // (1024 * 1024)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--runs-per-day", type=int, default=1000)
    parser.add_argument("--writes-per-run", type=int, default=5)
    parser.add_argument("--notes-per-day", type=int, default=500)
    parser.add_argument("--retired-share", type=float, default=0.6)
    parser.add_argument("--conversations-per-day", type=int, default=200)
    args = parser.parse_args()

    from db.connector import get_database
    from db.migrate import migrate
    from worker.local.embedded import EmbeddedPostgres
    from worker.manager.cycle import build_judge
    from worker.manager.deps import PhaseDeps
    from worker.manager.judge import Budget
    from worker.manager.retention import enforce_retention
    from worker.settings import Settings

    data_dir = Path(tempfile.mkdtemp(prefix="memory-retention-bench-"))
    pg = EmbeddedPostgres(data_dir / "pg")
    database_url = pg.start()
    rng = np.random.default_rng(7)
    try:
        migrate(database_url)
        db = get_database(database_url)
        settings = Settings(database_url=database_url, redis_url="redis://unused")
        inserted: dict[str, int] = {}
        watermarks: dict[str, Any] = {}
        header = ("| day | " + " | ".join(TABLES) + " | notes with text | MB on disk | "
                  "retention s (that day) |")
        lines = [header, "|" + "---|" * (len(TABLES) + 4)]
        started = time.perf_counter()
        with psycopg.connect(database_url, autocommit=True) as conn:
            for day in range(1, args.days + 1):
                simulate_day(conn, day, args, rng, inserted)
                now = START + timedelta(days=day + 1)  # the end of the simulated day
                budget = Budget(0, 0)
                deps = PhaseDeps(db=db, settings=settings,
                                 judge=build_judge(settings, db, budget, now), budget=budget,
                                 embedder=None, now=now, cycle_id=None,
                                 watermarks=dict(watermarks))
                phase_started = time.perf_counter()
                counts = enforce_retention(deps)
                seconds = time.perf_counter() - phase_started
                watermarks["retention"] = counts.pop("watermark")
                if counts["budget_exhausted"]:
                    print(f"day {day}: budget exhausted", counts, flush=True)
                if day % 10 == 0:
                    conn.execute("VACUUM")  # what autovacuum does: space reused, sizes settle
                    now_counts = snapshot(conn)
                    cells = [f"{now_counts[t]:,} / {inserted.get(t, 0):,}" for t in TABLES]
                    lines.append(f"| {day} | " + " | ".join(cells)
                                 + f" | {now_counts['notes_with_text']:,} | {now_counts['mb']}"
                                 + f" | {seconds:.2f} |")
                    print(lines[-1], flush=True)
        table = "\n".join(lines) + "\n"
        note = (f"\nCells: rows in the table / rows inserted so far. {args.runs_per_day} runs "
                f"x {args.writes_per_run} writes, {args.notes_per_day} notes "
                f"({args.retired_share:.0%} retired a week later), "
                f"{args.conversations_per_day} conversations x 10 messages and 96 cycles per "
                f"day; {time.perf_counter() - started:.0f} s in all.\n")
        print(table + note)
        out = ROOT / "bench" / "results"
        out.mkdir(exist_ok=True)
        (out / "retention.md").write_text(table + note)
    finally:
        from db.connector import dispose_all

        dispose_all()
        pg.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
