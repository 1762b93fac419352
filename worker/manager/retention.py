"""Retention (a maintenance phase): storage stays bounded instead of growing with every write.

Past its window (settings, `MEMORY_*_RETENTION_DAYS`; 0 keeps forever) each kind of row is
deleted, or, for a retired note, its content erased, in pages: each page is its own short
transaction of at most `retention_page_size` rows, picked with SKIP LOCKED. The tables take
turns page by page, so a large backlog in one cannot starve the others, and one cycle stops
after `retention_rows_per_cycle` rows (`budget_exhausted` in its counts; the next
maintenance continues). The counts per table are the phase's counts on the cycle row.

What goes, and what never does:

- runs and their write log: a run whose last write is older than the window, whole; never a
  run holding a candidate that awaits promotion. After this a redelivered write of the run
  would be applied again, which is why the window is days, not the minutes a redelivery
  takes (the setting refuses less than a day);
- trace events by age;
- conversation messages by age, and only once extraction has read them; the conversation
  row itself stays (deleting it would make its notes stale references);
- retired (Archived, Revoked) notes: text, content hash and vector erased, the row kept; the
  judge memos decided on that text go with it;
- judge memos by age (a cache of pair and cluster decisions: asked again if needed);
- dead letters by age (the raw messages moved aside, memory text included);
- note events by age, of notes retired for longer than the window, except each note's
  latest; all events of an injectable note stay;
- manager cycles by age, except the newest `cycle_keep_last` and the rows the next cycle
  reads;
- export files (`memory.export`'s, a subject's memory in clear) in `export_dir` on this host,
  by age;
- (not a deletion) erasure and export audit records still `running` a day after they
  started are closed as `failed` (interrupted): their process died.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from db.queries.audit import close_interrupted_audits
from db.queries.retention import (
    erase_retired_content_page,
    prune_cycles_page,
    prune_dead_letters_page,
    prune_memos_page,
    prune_messages_page,
    prune_runs_page,
    prune_trace_page,
    trim_note_events_page,
)
from worker.erasure.export import prune_export_files
from worker.manager.deps import PhaseDeps, bump


@dataclass
class _Table:
    """One kind of row: `page(limit)` runs one transaction and returns the rows it worked
    on (counted against the budget) and whether this table has more to do this cycle."""

    name: str
    page: Callable[[int], tuple[int, bool]]


def _cutoff(now: datetime, days: float) -> datetime | None:
    return None if days <= 0 else now - timedelta(days=days)


def enforce_retention(deps: PhaseDeps) -> dict[str, Any]:
    settings = deps.settings
    counts: dict[str, Any] = {}
    cursor = _event_cursor(deps.watermarks.get("retention"))
    state = {"cursor": cursor}
    tables = _tables(deps, counts, state)
    budget = settings.retention_rows_per_cycle
    pages = 0
    while tables and budget > 0:
        for table in list(tables):
            if budget <= 0:
                break
            limit = min(settings.retention_page_size, budget)
            worked, more = table.page(limit)
            pages += 1
            budget -= worked
            if not more:
                tables.remove(table)
    counts["pages"] = pages
    counts["budget_exhausted"] = bool(tables)
    with deps.db.transaction() as conn:
        # A day is far longer than any erasure or export runs.
        counts["audit_interrupted"] = close_interrupted_audits(
            conn, cutoff=deps.now - timedelta(days=1), now=deps.now)
    files_cutoff = _cutoff(deps.now, settings.export_file_retention_days)
    if files_cutoff is not None:
        counts["export_files"] = prune_export_files(
            settings.export_directory(), files_cutoff, limit=settings.retention_page_size)
    # Where the note-event scan continues next maintenance (0: from the start).
    counts["watermark"] = {"note_events_after": state["cursor"]}
    return counts


def _event_cursor(stored: Any) -> int:
    if isinstance(stored, dict) and isinstance(stored.get("note_events_after"), int):
        return int(stored["note_events_after"])
    return 0


def _tables(deps: PhaseDeps, counts: dict[str, Any], state: dict[str, int]) -> list[_Table]:
    settings, db, now = deps.settings, deps.db, deps.now
    tables: list[_Table] = []

    runs_cutoff = _cutoff(now, settings.write_log_retention_days)
    if runs_cutoff is not None:
        def runs(limit: int, cutoff: datetime = runs_cutoff) -> tuple[int, bool]:
            with db.transaction() as conn:
                locked, logged, candidates, deleted = prune_runs_page(
                    conn, cutoff=cutoff, limit=limit)
            bump(counts, "write_log", logged)
            bump(counts, "memory_candidates", candidates)
            bump(counts, "runs", deleted)
            worked = logged + candidates + deleted
            # A page that removed nothing (its runs held by writes, or not yet emptied of
            # a log longer than a page) ends this table for the cycle: no busy loop.
            return worked, worked > 0 and (locked >= limit or logged >= limit)
        tables.append(_Table("runs", runs))

    def simple(name: str, days: float,
               page: Callable[[Any, datetime, int], int]) -> None:
        cutoff = _cutoff(now, days)
        if cutoff is None:
            return

        def run(limit: int) -> tuple[int, bool]:
            with db.transaction() as conn:
                done = page(conn, cutoff, limit)
            bump(counts, name, done)
            return done, done >= limit
        tables.append(_Table(name, run))

    simple("trace_events", settings.trace_retention_days,
           lambda conn, cutoff, limit: prune_trace_page(conn, cutoff=cutoff, limit=limit))
    simple("conversation_messages", settings.conversation_message_retention_days,
           lambda conn, cutoff, limit: prune_messages_page(conn, cutoff=cutoff, limit=limit))
    content_cutoff = _cutoff(now, settings.retired_note_content_retention_days)
    if content_cutoff is not None:
        def content(limit: int, cutoff: datetime = content_cutoff) -> tuple[int, bool]:
            with db.transaction() as conn:
                erased, memos = erase_retired_content_page(conn, cutoff=cutoff, now=now,
                                                           limit=limit)
            bump(counts, "note_content", erased)
            bump(counts, "judge_memo", memos)
            return erased, erased >= limit
        tables.append(_Table("note_content", content))
    simple("judge_memo", settings.judge_memo_retention_days,
           lambda conn, cutoff, limit: prune_memos_page(conn, cutoff=cutoff, limit=limit))
    simple("dead_letters", settings.dead_letter_retention_days,
           lambda conn, cutoff, limit: prune_dead_letters_page(conn, cutoff=cutoff,
                                                               limit=limit))
    simple("manager_cycles", settings.cycle_retention_days,
           lambda conn, cutoff, limit: prune_cycles_page(
               conn, cutoff=cutoff, keep=settings.cycle_keep_last, limit=limit))

    events_cutoff = _cutoff(now, settings.note_event_retention_days)
    if events_cutoff is not None:
        def events(limit: int, cutoff: datetime = events_cutoff) -> tuple[int, bool]:
            with db.transaction() as conn:
                last, seen, all_young, deleted = trim_note_events_page(
                    conn, after=state["cursor"], cutoff=cutoff, limit=limit)
            bump(counts, "note_events", deleted)
            if last is None or seen < limit or all_young:
                # The end, or only events inside the window from here on: next time the
                # scan starts over (events of notes retired since then are older ones).
                state["cursor"] = 0
                return seen, False
            state["cursor"] = last
            return seen, True  # examined rows count against the budget: they are the work
        tables.append(_Table("note_events", events))

    for name in ("write_log", "memory_candidates", "runs", "trace_events",
                 "conversation_messages", "note_content", "note_events", "manager_cycles",
                 "judge_memo", "dead_letters"):
        counts.setdefault(name, 0)
    return tables
