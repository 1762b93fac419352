"""Forgetting on request: erase a subject's memory, keep its late writes out, audit it.

`subject` (who: a user — optionally narrowed to an agent and/or company —, a company, an
agent, a conversation; the keyed hash kept instead of ids) · `fence` (the rule the write path
and conversation records check) · `erase` (bounded batches over every table, the audit
record, dry runs) · `redis_keys` (counters, task results, shared vectors) · `export`
(everything held about a subject as JSON Lines, streamed, with its own audit record) ·
`request` (a subject from untrusted input: a task's `subject` object, the CLI's arguments).
"""

from __future__ import annotations

from db.connector import Database
from worker.erasure.erase import ErasureReport, erase_subject, plan_erasure
from worker.erasure.redis_keys import RedisEraser
from worker.erasure.request import parse_subject, subject_from_request
from worker.erasure.subject import Subject, SubjectError

__all__ = ["ErasureReport", "Subject", "SubjectError", "forget", "parse_subject",
           "subject_from_request"]


def forget(db: Database, subject: Subject, *, requested_by: str, dry_run: bool,
           redis_url: str | None, embedding_model: str | None = None) -> ErasureReport:
    """Erase (or, with `dry_run`, count) everything the subject left, Redis included."""
    eraser = RedisEraser.from_url(redis_url, embedding_model) if redis_url else None
    if dry_run:
        return plan_erasure(db, subject, eraser)
    return erase_subject(db, subject, requested_by=requested_by, redis=eraser)
