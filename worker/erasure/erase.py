"""Erase a subject: fence, delete in bounded batches, clear Redis, keep an audit record.

Order: the fence first (so nothing of the subject lands while, or after, we delete), then
each table in an order its foreign keys allow, each batch its own short transaction (a huge
subject never holds locks writes wait on for long), then the subject's Redis keys, then the
audit record's counts. Around it all, a mark in Redis: a task that read or wrote the
subject's rows before the deletion but stores its result after the Redis sweep finds it and
deletes that result (worker/app/erased_results.py). The whole table sequence runs again
until a pass finds nothing: a Memory Manager cycle running meanwhile (consolidating or
extracting the subject's notes) can add a row behind a batch, and the fence does not stop
the manager.

What stays, on purpose: notes with no user (agent-wide, company-wide) that a user's run wrote
— they belong to no user — lose only their provenance (the run, the conversation); a user
erasure keeps other users', a company erasure other companies' and agent-wide notes.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import exc as sa_exc

from db.connector import Database
from db.queries.erasure import (
    ERASED_TABLES,
    PredKey,
    clear_provenance_batch,
    count_agent_row,
    count_memos,
    count_principals,
    count_rows,
    delete_agent_row,
    delete_batch,
    delete_candidates,
    delete_conversations,
    delete_notes,
    delete_orphan_principals,
    delete_runs,
    select_batch,
    subject_conversation_ids,
    subject_run_ids,
)
from db.queries.fences import set_fence
from worker.erasure.audit import audited
from worker.erasure.fence import SEQ_FLOOR_MARGIN_US
from worker.erasure.redis_keys import RedisEraser, SubjectLinks
from worker.erasure.subject import Subject

log = logging.getLogger(__name__)

BATCH_SIZE = 500  # rows per transaction: milliseconds of row locks, not minutes
# Conversation ids bound to one provenance statement: a company's thousands stay in
# statements of bounded size.
CONVERSATION_CHUNK = 1000
MAX_PASSES = 5
_RETRIES = 5  # a batch that deadlocks with a write is simply tried again


@dataclass
class ErasureReport:
    subject_kind: str
    subject_hash: str
    dry_run: bool
    counts: dict[str, int] = field(default_factory=dict)
    audit_id: int | None = None
    passes: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "dry_run": self.dry_run, "subject_kind": self.subject_kind,
                "subject_hash": self.subject_hash, "counts": dict(sorted(self.counts.items())),
                "audit_id": self.audit_id, "passes": self.passes}


def predicate_key(subject: Subject) -> PredKey:
    """Which predicates match the subject's rows (db/queries/erasure.py): erasure's and
    export's."""
    return (subject.kind, subject.agent_id is not None, subject.company_id is not None)


def _params(subject: Subject, limit: int = BATCH_SIZE) -> dict[str, Any]:
    return {**subject.sql_params(), "limit": limit,
            "sid_json": json.dumps(subject.id, ensure_ascii=False)}


def _principal_ids(subject: Subject) -> dict[str, set[str]]:
    ids: dict[str, set[str]] = {"user": set(), "company": set()}
    if subject.kind == "user":
        ids["user"].add(subject.id.lower())
    elif subject.kind == "company":
        ids["company"].add(subject.id.lower())
    return ids


def plan_erasure(db: Database, subject: Subject, redis: RedisEraser | None) -> ErasureReport:
    """What an erasure would delete, per table and Redis key kind; changes nothing."""
    report = ErasureReport(subject.kind, subject.hash, dry_run=True)
    key, params = predicate_key(subject), _params(subject)
    run_ids: list[str] = []
    with db.transaction() as conn:
        for table in ERASED_TABLES:
            report.counts[table] = count_rows(conn, table, key, params)
        report.counts["judge_memo"] = count_memos(conn, key, params)
        ids = _principal_ids(subject)
        report.counts["principals"] = sum(count_principals(conn, kind, sorted(found))
                                          for kind, found in ids.items() if found)
        if subject.kind == "agent":
            report.counts["agents"] = count_agent_row(conn, subject.id)
        offset = 0
        while True:
            page = subject_run_ids(conn, key, params, limit=5000, offset=offset)
            run_ids.extend(page)
            if len(page) < 5000:
                break
            offset += len(page)
        conversation_ids = subject_conversation_ids(conn, key, params)
    if redis is not None:
        report.counts.update(redis.plan(subject, SubjectLinks(frozenset(run_ids),
                                                              frozenset(conversation_ids))))
    return report


class _Pass:
    """One pass over every table; collects what Redis and the principals need.

    `conversation_ids` is shared by the passes and grows with each: the subject's
    conversations found before anything is deleted. A later pass cannot find them again
    through rows an earlier one deleted, yet must still clear a kept row naming one (a
    Memory Manager cycle may have written it in between)."""

    def __init__(self, db: Database, subject: Subject, counts: Counter[str],
                 conversation_ids: set[str]) -> None:
        self.db, self.subject, self.counts = db, subject, counts
        self.conversation_ids = conversation_ids
        self.key, self.params = predicate_key(subject), _params(subject)
        self.task_ids: set[str] = set()
        self.run_ids: set[str] = set()
        self.note_texts: list[str] = []
        self.principals = _principal_ids(subject)
        self.changed = 0

    def _batches(self, step: Callable[[Any], int]) -> None:
        """Run `step(conn)` in its own transaction until it changes nothing."""
        while True:
            for attempt in range(1, _RETRIES + 1):
                try:
                    with self.db.transaction() as conn:
                        changed = step(conn)
                    break
                except sa_exc.OperationalError:
                    if attempt == _RETRIES:
                        raise
                    log.warning("erasure batch failed (attempt %d); retrying", attempt)
            self.changed += changed
            if changed == 0:
                return

    def _plain(self, table: str) -> None:
        def step(conn: Any) -> int:
            values = delete_batch(conn, table, self.key, self.params)
            self.task_ids.update(v for v in values if v)
            self.counts[table] += len(values)
            return len(values)
        self._batches(step)

    def _note_owner(self, user: Any, company: Any) -> None:
        if user is not None:
            self.principals["user"].add(str(user).lower())
        if company is not None:
            self.principals["company"].add(str(company).lower())

    def _collect_conversations(self) -> None:
        with self.db.transaction() as conn:
            self.conversation_ids |= subject_conversation_ids(conn, self.key, self.params)

    def _clear_provenance(self) -> None:
        known = sorted(self.conversation_ids)
        # At least one round: the run-based clearings need none of the ids.
        for start in range(0, max(len(known), 1), CONVERSATION_CHUNK):
            chunk = known[start:start + CONVERSATION_CHUNK]

            def step(conn: Any, chunk: list[str] = chunk) -> int:
                changed = clear_provenance_batch(conn, self.key, self.params, chunk)
                self.counts["provenance_cleared"] += changed
                return changed
            self._batches(step)

    def run(self) -> None:
        self._collect_conversations()  # before any row that names one is deleted
        self._plain("trace_events")
        self._plain("write_log")

        def candidates(conn: Any) -> int:
            ids = select_batch(conn, "memory_candidates", self.key, self.params)
            if ids:
                for owner in delete_candidates(conn, ids):
                    self._note_owner(*owner)
                self.counts["memory_candidates"] += len(ids)
            return len(ids)
        self._batches(candidates)

        def notes(conn: Any) -> int:
            ids = select_batch(conn, "notes", self.key, self.params)
            if ids:
                deleted = delete_notes(conn, ids)
                self.counts["note_events"] += deleted.events
                self.counts["note_access_pending"] += deleted.access
                self.counts["judge_memo"] += deleted.memos
                self.counts["notes"] += len(deleted.owners_and_texts)
                for user, company, note in deleted.owners_and_texts:
                    self._note_owner(user, company)
                    if note is not None:  # None: retention erased it already
                        self.note_texts.append(note)
            return len(ids)
        self._batches(notes)
        self._plain("examples")
        self._clear_provenance()
        self._plain("conversation_messages")

        def conversations(conn: Any) -> int:
            ids = select_batch(conn, "conversations", self.key, self.params)
            if ids:
                for owner in delete_conversations(conn, ids):
                    self._note_owner(*owner)
                self.counts["conversations"] += len(ids)
            return len(ids)
        self._batches(conversations)

        def runs(conn: Any) -> int:
            ids = select_batch(conn, "runs", self.key, self.params)
            if ids:
                for owner in delete_runs(conn, ids):
                    self._note_owner(*owner)
                self.run_ids.update(ids)
                self.counts["runs"] += len(ids)
            return len(ids)
        self._batches(runs)
        self._plain("chain_continuations")
        self._plain("dead_letters")
        if self.subject.kind == "agent":
            def agent(conn: Any) -> int:
                deleted = delete_agent_row(conn, self.subject.id)
                self.counts["agents"] += deleted
                return 0
            self._batches(agent)

        def principals(conn: Any) -> int:
            for kind, folded in self.principals.items():
                self.counts["principals"] += delete_orphan_principals(conn, kind, sorted(folded))
            return 0
        self._batches(principals)


def erase_subject(db: Database, subject: Subject, *, requested_by: str,
                  redis: RedisEraser | None) -> ErasureReport:
    """Erase every row and Redis key carrying the subject's data or identity."""
    report = ErasureReport(subject.kind, subject.hash, dry_run=False)
    seq_floor = (redis.clock_us() if redis is not None else 0) + SEQ_FLOOR_MARGIN_US
    counts: Counter[str] = Counter()
    with audited(db, "erasures", subject, requested_by) as audit:
        report.audit_id, audit.counts = audit.id, counts
        if redis is not None:
            redis.mark_erasing(subject.hash)
        try:
            with db.transaction() as conn:  # committed before anything is deleted
                set_fence(conn, subject.hash, seq_floor)
            task_ids: set[str] = set()
            run_ids: set[str] = set()
            conversation_ids: set[str] = set()
            texts: list[str] = []
            for number in range(1, MAX_PASSES + 1):
                one = _Pass(db, subject, counts, conversation_ids)
                one.run()
                task_ids |= one.task_ids
                run_ids |= one.run_ids
                texts += one.note_texts
                report.passes = number
                if one.changed == 0:
                    break
            if redis is not None:
                links = SubjectLinks(frozenset(run_ids), frozenset(conversation_ids))
                counts.update(redis.erase(subject, links, sorted(task_ids), texts))
        finally:
            if redis is not None:
                redis.mark_erased(subject.hash)
        report.counts = {table: int(counts.get(table, 0)) for table in
                         (*ERASED_TABLES, "note_events", "note_access_pending", "principals")}
        report.counts.update({k: int(v) for k, v in counts.items()})
        audit.counts = report.counts
    log.info("erasure %s of a %s done: %s", report.audit_id, subject.kind, report.counts)
    return report
