"""The redelivery pass: publish again every recorded write the broker lost.

Beat sends `memory.continuations.flush` every `flush_period_s`; besides the chain
continuations a broker outage left in Postgres, it runs `redeliver_recorded_writes`:

1. the records due — recorded (or last published again) more than `redelivery_after_s`
   ago — are read from the due index, oldest first;
2. those whose (run, seq) is in the write log with a final outcome are applied: their records
   are cleared (the worker that applied them died before it could);
3. every other one is claimed (due again one bound later, so a second pass running at the
   same time does not publish it too) and published again, a run's writes as one chain in
   sequence order, under their original task ids (a client waiting on a result gets it);
4. a record published again `redelivery_limit` times without being applied, or one that
   cannot be published (a client's malformed record), goes to `dead_letters` with its text
   and is answered under its task id.

Publishing a write that was only slow is harmless: exactly-once is the write log's, so the
second delivery is a replay.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from db.queries.dead_letters import insert_dead_letter
from db.queries.delivery import applied_writes
from worker.app import task_names
from worker.delivery.records import WriteRecord, WriteRecords
from worker.ops import metrics

log = logging.getLogger(__name__)

# The tasks a run orders by sequence number: the only ones a record may name.
SEQUENCED_TASKS = frozenset({task_names.WRITE, task_names.FORGET_FACT})
_PASS_LIMIT = 1000  # records looked at per pass; the rest wait for the next one
_MAX_KEPT_BODY = 65_536

Publish = Callable[[Sequence[WriteRecord]], None]


@dataclass
class RedeliveryReport:
    redelivered: int = 0
    cleared: int = 0
    dead_lettered: int = 0
    failed: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def publish_chain(records: Sequence[WriteRecord]) -> None:
    """Publish a run's records again as one chain, in sequence order, under their ids."""
    from celery import chain

    from worker.celery_app import app

    signatures = [app.signature(r.task, args=[*r.args, r.seq, r.prev_seq], immutable=True)
                  .set(task_id=r.task_id) for r in records]
    (signatures[0] if len(signatures) == 1 else chain(*signatures)).apply_async()


def redeliver_recorded_writes(db: Any, records: WriteRecords, *, redelivery_after_s: float,
                              redelivery_limit: int, publish: Publish = publish_chain,
                              limit: int = _PASS_LIMIT) -> RedeliveryReport:
    report = RedeliveryReport()
    now = records.clock_s()
    due = records.due(now - redelivery_after_s, limit)
    if not due:
        return report
    with db.read() as conn:
        applied = applied_writes(conn, due)
    by_run: dict[str, list[WriteRecord]] = defaultdict(list)
    for run_id, seq in due:
        if (run_id, seq) in applied:
            records.clear(run_id, seq)
            report.cleared += 1
            continue
        claimed = records.claim(run_id, seq, now)
        if claimed is None:
            continue  # applied and cleared since the index was read
        refusal = _unpublishable(claimed, redelivery_limit)
        if refusal is not None:
            _dead_letter(db, records, run_id, seq, claimed, refusal)
            report.dead_lettered += 1
            continue
        assert isinstance(claimed, WriteRecord)
        by_run[run_id].append(claimed)
    for run_id, recorded in by_run.items():
        recorded.sort(key=lambda r: r.seq)
        try:
            publish(recorded)
        except Exception as exc:  # the broker is away: due again one bound later
            log.warning("could not publish %d recorded write(s) of run %s again (%s)",
                        len(recorded), run_id, type(exc).__name__)
            report.failed += len(recorded)
            continue
        for record in recorded:
            records.count_redelivery(run_id, record.seq)
        report.redelivered += len(recorded)
        log.warning("run %s: %d recorded write(s) not applied %.0fs after they were "
                    "accepted, published again (seq %d..%d)", run_id, len(recorded),
                    redelivery_after_s, recorded[0].seq, recorded[-1].seq)
    if report.redelivered:
        metrics.series().writes_redelivered.inc(report.redelivered)
    return report


def _unpublishable(claimed: WriteRecord | bool, limit: int) -> str | None:
    if not isinstance(claimed, WriteRecord):
        return "its write record is not valid JSON with seq, prev_seq, task, task_id and args"
    if claimed.task not in SEQUENCED_TASKS:
        return f"its write record names {claimed.task!r}, which is not a sequenced task"
    if claimed.redelivered >= limit:
        return (f"published again {claimed.redelivered} times from its write record and "
                "never applied")
    return None


def _dead_letter(db: Any, records: WriteRecords, run_id: str, seq: int,
                 claimed: WriteRecord | bool, reason: str) -> None:
    """Keep the record for an operator, answer its client, and stop delivering it."""
    task_id = claimed.task_id if isinstance(claimed, WriteRecord) else None
    task = claimed.task if isinstance(claimed, WriteRecord) else None
    body = records.raw(run_id, seq)
    with db.transaction() as conn:
        insert_dead_letter(conn, task_id=task_id, task_name=task, reason=reason,
                           deliveries=claimed.redelivered if isinstance(claimed, WriteRecord)
                           else None, body=body[:_MAX_KEPT_BODY] if body else None)
    log.error("run %s: write %d moved to dead_letters: %s", run_id, seq, reason)
    if task_id is not None:
        _answer(task_id, run_id, seq, reason)
    records.clear(run_id, seq)


def _answer(task_id: str, run_id: str, seq: int, reason: str) -> None:
    from celery import states

    from db.enums import Disposition
    from worker.celery_app import app

    try:
        app.backend.store_result(task_id, {
            "disposition": Disposition.ERROR, "note_id": None, "run_id": run_id, "seq": seq,
            "reason": f"Not saved: {reason}; it was moved to dead_letters for an operator.",
            "final_scope": None, "duration_ms": 0.0, "replayed": False,
            "reason_code": None, "candidate_id": None}, states.SUCCESS)
    except Exception:
        log.warning("could not store the answer of %s", task_id, exc_info=True)
