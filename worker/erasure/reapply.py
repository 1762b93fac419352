"""Re-apply erasures to a database restored from a backup taken before them.

A restore brings erased rows back. The erasure log (`memory-worker erasures --json`, kept
outside the database backups) holds each erased subject's kind and keyed hash, never its
ids; the restored rows supply the ids. For every logged erasure this sets its fence again
(by hash: queued writes of the subject's old runs stay out even when the restored rows hold
nothing of it), then hashes every identity the restored rows hold — each user alone and
narrowed to each of its agents and companies, every company, agent and conversation id —
and erases each subject whose hash is in the log, with a new audit record.

With the wrong `MEMORY_ERASURE_HASH_KEY` nothing matches: the report says so (every logged
subject unmatched) instead of pretending.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from db.connector import Database
from db.queries.fences import set_fence
from db.queries.reapply import single_ids, user_identities
from worker.erasure.erase import ErasureReport, erase_subject
from worker.erasure.fence import SEQ_FLOOR_MARGIN_US
from worker.erasure.redis_keys import RedisEraser
from worker.erasure.subject import SUBJECT_KINDS, Subject, subject_hash

_HASH = re.compile(r"^[0-9a-f]{64}$")


class ErasureLogError(ValueError):
    """The erasure log is not what `memory-worker erasures --json` writes."""


@dataclass(frozen=True)
class LoggedErasure:
    audit_id: Any
    kind: str
    subject_hash: str


@dataclass
class ReapplyReport:
    dry_run: bool
    logged: int = 0  # distinct subjects in the log
    matched: list[dict[str, Any]] = field(default_factory=list)  # per erased subject
    unmatched: list[str] = field(default_factory=list)  # hashes nothing restored matches

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "dry_run": self.dry_run, "logged_subjects": self.logged,
                "matched": self.matched, "unmatched_hashes": self.unmatched}


def parse_erasure_log(records: Any) -> list[LoggedErasure]:
    """The records of `memory-worker erasures --json` (a list of objects)."""
    if not isinstance(records, list):
        raise ErasureLogError("the erasure log must be a JSON list (memory-worker erasures "
                              "--json)")
    parsed: list[LoggedErasure] = []
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise ErasureLogError(f"record {i} of the erasure log is not an object")
        kind, digest = record.get("subject_kind"), record.get("subject_hash")
        if kind not in SUBJECT_KINDS or not isinstance(digest, str) or not _HASH.match(digest):
            raise ErasureLogError(f"record {i} of the erasure log lacks a subject_kind and a "
                                  "subject_hash")
        parsed.append(LoggedErasure(record.get("id"), kind, digest))
    return parsed


def _restored_subjects(db: Database, wanted: dict[str, set[str]]) -> dict[str, Subject]:
    """hash -> the subject of the restored rows that has it."""
    found: dict[str, Subject] = {}
    with db.transaction() as conn:  # a server-side cursor lives in a transaction
        if wanted["user"]:
            for user, agent, company in user_identities(conn):
                for narrow_agent in (None, agent) if agent else (None,):
                    for narrow_company in (None, company) if company else (None,):
                        digest = subject_hash("user", user, narrow_agent, narrow_company)
                        if digest in wanted["user"] and digest not in found:
                            found[digest] = Subject("user", user, narrow_agent, narrow_company)
        for kind in ("company", "agent", "conversation"):
            if not wanted[kind]:
                continue
            for value in single_ids(conn, kind):
                digest = subject_hash(kind, value)
                if digest in wanted[kind] and digest not in found:
                    found[digest] = Subject(kind, value)
    return found


def reapply_erasures(db: Database, log_records: Any, *, requested_by: str, dry_run: bool,
                     redis_url: str | None,
                     embedding_model: str | None = None) -> ReapplyReport:
    logged = parse_erasure_log(log_records)
    wanted: dict[str, set[str]] = {kind: set() for kind in SUBJECT_KINDS}
    audit_ids: dict[str, list[Any]] = {}
    for record in logged:
        wanted[record.kind].add(record.subject_hash)
        audit_ids.setdefault(record.subject_hash, []).append(record.audit_id)
    report = ReapplyReport(dry_run, logged=len(audit_ids))
    eraser = RedisEraser.from_url(redis_url, embedding_model) if redis_url else None
    if not dry_run:
        floor = (eraser.clock_us() if eraser is not None else 0) + SEQ_FLOOR_MARGIN_US
        with db.transaction() as conn:
            for digest in sorted(audit_ids):
                set_fence(conn, digest, floor)
    found = _restored_subjects(db, wanted)
    for digest in sorted(audit_ids):
        subject = found.get(digest)
        if subject is None:
            report.unmatched.append(digest)
            continue
        entry: dict[str, Any] = {"subject_kind": subject.kind, "subject_hash": digest,
                                 "logged_as": audit_ids[digest]}
        if not dry_run:
            erased: ErasureReport = erase_subject(
                db, subject, requested_by=requested_by[:200], redis=eraser)
            entry.update(audit_id=erased.audit_id, counts=erased.counts)
        report.matched.append(entry)
    return report

