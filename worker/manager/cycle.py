"""One Memory Manager cycle (SPEC 7): single-flight, one row per cycle, phases in order.

Embedding what was stored without a vector, folding recorded accesses in, hardening and
extraction run every cycle; the maintenance
phases run when their own trigger says so (`maintenance_interval_hours` since the last
maintenance, or `maintenance_new_note_trigger` new notes since then) or when forced. Every
phase runs in its own transaction(s) and trace step, and a phase that fails is recorded and
does not stop the rest.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg.errors
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, OperationalError

from db.connector import Database, once_more_if_invalidated
from db.enums import CycleStatus
from db.queries.manager import (
    ConcurrentChange,
    abandon_running_cycles,
    insert_cycle,
    last_maintenance,
    last_watermarks,
    memo_get,
    memo_put,
    new_notes_after_cycle,
    release_cycle_lock,
    try_cycle_lock,
    update_cycle,
)
from db.queries.runs import insert_trace
from worker.embeddings import Embedder
from worker.manager.builtin_judge import BuiltinJudge
from worker.manager.consolidation import consolidate_similar_notes, resolve_contradictions
from worker.manager.deps import PhaseDeps
from worker.manager.extraction import extract_from_conversations
from worker.manager.hardening import harden_provisional_notes
from worker.manager.judge import Budget, CycleJudge, PairRelation, PairVerdict
from worker.manager.maintenance import (
    decay_unused_notes,
    fold_access_statistics,
    prune_expired_notes,
    prune_stale_references,
    score_importance,
)
from worker.manager.model_judge import PROMPT_VERSION, ModelJudge
from worker.manager.retention import enforce_retention
from worker.manager.vectors import embed_missing_vectors
from worker.normalize import content_hash
from worker.settings import Settings

log = logging.getLogger(__name__)

Phase = Callable[[PhaseDeps], dict[str, Any]]

EVERY_CYCLE: list[tuple[str, Phase]] = [
    # First: every later phase compares notes by their vectors.
    ("vectors", embed_missing_vectors),
    ("access", fold_access_statistics),
    ("hardening", harden_provisional_notes),
    ("extraction", extract_from_conversations),
]
MAINTENANCE: list[tuple[str, Phase]] = [
    ("importance", score_importance),
    ("consolidation", consolidate_similar_notes),
    ("contradictions", resolve_contradictions),
    ("stale_references", prune_stale_references),
    ("decay", decay_unused_notes),
    ("ttl", prune_expired_notes),
    # Last: what the phases above retired today is erased only a window later anyway.
    ("retention", enforce_retention),
]

# Errors worth one more attempt of the phase: the phase continues where it stopped.
_TRANSIENT = (ConcurrentChange, OperationalError)
_PHASE_ATTEMPTS = 3


@dataclass
class CycleReport:
    cycle_id: int
    status: CycleStatus
    maintenance: bool = False
    maintenance_reason: str | None = None
    phases: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    model_calls: int = 0
    model_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "cycle_id": self.cycle_id, "status": self.status.value,
            "maintenance": self.maintenance, "maintenance_reason": self.maintenance_reason,
            "phases": self.phases, "counts": self.counts, "error": self.error,
            "model_calls": self.model_calls, "model_tokens": self.model_tokens,
        }


def _short_error(exc: BaseException) -> str:
    # First line only: database errors carry row values (note text) in their DETAIL lines.
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, _TRANSIENT):
        return True
    return isinstance(exc, DBAPIError) and isinstance(
        exc.orig, psycopg.errors.DeadlockDetected | psycopg.errors.SerializationFailure)


def build_judge(settings: Settings, db: Database, budget: Budget, now: datetime) -> CycleJudge:
    model = None
    if settings.llm_backend == "openai":
        model = ModelJudge(
            model=settings.llm_model, base_url=settings.llm_base_url,
            api_key=settings.llm_api_key, timeout_s=settings.llm_timeout_s,
            max_attempts=settings.llm_max_attempts, min_confidence=settings.llm_min_confidence,
            budget=budget)

    def get(kind: str, key: str) -> PairVerdict | None:
        with db.read() as conn:
            found = memo_get(conn, kind, key)
        if found is None:
            return None
        relation, judge = found
        return PairVerdict(PairRelation(relation), 1.0, f"memo:{judge}")

    def put(kind: str, key: str, verdict: PairVerdict, texts: Sequence[str]) -> None:
        with db.read() as conn:
            memo_put(conn, kind, key, verdict.relation.value, verdict.judge, now,
                     [content_hash(t) for t in texts])

    version = f"{PROMPT_VERSION}:{settings.llm_model if model else 'builtin'}"
    return CycleJudge(BuiltinJudge(), model, get, put, version)


def _run_phase(name: str, phase: Phase, deps: PhaseDeps, started: float) -> dict[str, Any]:
    offset = time.monotonic() - started
    began = time.monotonic()
    counts: dict[str, Any] = {}
    error = None
    for attempt in range(1, _PHASE_ATTEMPTS + 1):
        try:
            counts = phase(deps)
            error = None
            break
        except Exception as exc:
            error = _short_error(exc)
            if not _is_transient(exc) or attempt == _PHASE_ATTEMPTS:
                log.exception("memory manager phase %s failed", name)
                break
            log.warning("memory manager phase %s: transient %s, retrying", name, error)
    duration_ms = (time.monotonic() - began) * 1000
    record = {
        "phase": name,
        "started_at": (deps.now + timedelta(seconds=offset)).isoformat(),
        "finished_at": (deps.now + timedelta(seconds=offset + duration_ms / 1000)).isoformat(),
        "duration_ms": round(duration_ms, 2),
        "counts": counts,
        "error": error,
    }
    try:
        with deps.db.transaction() as conn:
            insert_trace(conn, event="memory_manager_phase", now=deps.now, reason=error,
                         detail={"cycle_id": deps.cycle_id, "phase": name, "counts": counts},
                         duration_ms=duration_ms)
    except Exception:
        log.exception("could not record the trace step of phase %s", name)
    return record


def maintenance_due(deps: PhaseDeps) -> tuple[bool, str]:
    settings = deps.settings
    with deps.db.read() as conn:
        previous = last_maintenance(conn)
        if previous is None:
            return True, "no maintenance has run yet"
        last_id, last = previous
        deps.last_maintenance = last
        if deps.now - last >= timedelta(hours=settings.maintenance_interval_hours):
            return True, f"{settings.maintenance_interval_hours:g} h since the last maintenance"
        new = new_notes_after_cycle(conn, last_id)
    if new >= settings.maintenance_new_note_trigger:
        return True, f"{new} new notes since the last maintenance"
    return False, f"{new} new notes since the last maintenance, last one at {last.isoformat()}"


def _skip(db: Database, *, forced: bool, now: datetime, task_id: str | None) -> CycleReport:
    reason = "another cycle is running"
    with db.transaction() as conn:
        cycle_id = insert_cycle(conn, status=CycleStatus.SKIPPED, forced=forced, now=now,
                                task_id=task_id, error=reason)
        insert_trace(conn, event="memory_manager_cycle_skipped", now=now, reason=reason,
                     detail={"cycle_id": cycle_id})
    return CycleReport(cycle_id, CycleStatus.SKIPPED, error=reason)


def run_manager_cycle(db: Database, settings: Settings, embedder: Embedder | None, *,
                      now: datetime, force: bool = False, force_maintenance: bool = False,
                      task_id: str | None = None,
                      on_phase: Callable[[dict[str, Any]], None] | None = None) -> CycleReport:
    """Run one cycle unless another is running (then record the skip and return)."""
    with ExitStack() as stack:
        # A pooled connection dead since a database restart fails the lock, before the cycle
        # did anything: the lock is taken once more on the refreshed pool.
        lock_conn, locked = once_more_if_invalidated(lambda: _take_cycle_lock(db, stack))
        if not locked:
            return _skip(db, forced=force, now=now, task_id=task_id)
        try:
            return _run_locked(db, settings, embedder, now=now, force=force,
                               force_maintenance=force_maintenance, task_id=task_id,
                               on_phase=on_phase)
        finally:
            release_cycle_lock(lock_conn)


def _take_cycle_lock(db: Database, stack: ExitStack) -> tuple[Connection, bool]:
    """A connection of its own for the cycle's session lock, and whether it got the lock."""
    lock_conn = stack.enter_context(db.connect()).execution_options(
        isolation_level="AUTOCOMMIT")
    return lock_conn, try_cycle_lock(lock_conn)


def _run_locked(db: Database, settings: Settings, embedder: Embedder | None, *,
                now: datetime, force: bool, force_maintenance: bool, task_id: str | None,
                on_phase: Callable[[dict[str, Any]], None] | None) -> CycleReport:
    with db.transaction() as conn:
        abandon_running_cycles(conn, now)
        cycle_id = insert_cycle(conn, status=CycleStatus.RUNNING, forced=force, now=now,
                                task_id=task_id)
        watermarks = last_watermarks(conn)
    budget = Budget(settings.manager_model_calls_per_cycle,
                    settings.manager_model_tokens_per_cycle)
    deps = PhaseDeps(db=db, settings=settings, judge=build_judge(settings, db, budget, now),
                     budget=budget, embedder=embedder, now=now, cycle_id=cycle_id,
                     watermarks=dict(watermarks))
    report = CycleReport(cycle_id, CycleStatus.RUNNING)
    started = time.monotonic()

    def save(status: CycleStatus, finished: datetime | None) -> None:
        report.model_calls, report.model_tokens = budget.calls, budget.tokens
        with db.transaction() as conn:
            update_cycle(conn, cycle_id, status=status, maintenance=report.maintenance,
                         finished_at=finished, phases=report.phases, counts=report.counts,
                         watermarks=watermarks, error=report.error,
                         model_calls=budget.calls, model_tokens=budget.tokens)

    def run(phases: list[tuple[str, Phase]]) -> None:
        for name, phase in phases:
            record = _run_phase(name, phase, deps, started)
            report.phases.append(record)
            counts = record["counts"]
            report.counts["new_notes"] = (report.counts.get("new_notes", 0)
                                          + int(counts.get("new_notes", 0)))
            report.counts["embedded"] = (report.counts.get("embedded", 0)
                                         + int(counts.get("notes_embedded", 0))
                                         + int(counts.get("examples_embedded", 0)))
            if "watermark" in counts:
                watermarks[name] = counts.pop("watermark")
            save(CycleStatus.RUNNING, None)  # progress is visible while the cycle runs
            if on_phase is not None:
                on_phase(record)

    run(EVERY_CYCLE)
    due, reason = maintenance_due(deps)
    if force_maintenance:
        due, reason = True, "forced"
    report.maintenance_reason = reason
    if due:
        report.maintenance = True
        run(MAINTENANCE)
    failed = [p["phase"] for p in report.phases if p["error"]]
    report.status = CycleStatus.FAILED if failed else CycleStatus.SUCCEEDED
    report.error = f"failed phases: {', '.join(failed)}" if failed else None
    report.counts["model_calls_refused"] = budget.refused
    finished = now + timedelta(seconds=time.monotonic() - started)
    save(report.status, finished)
    return report
