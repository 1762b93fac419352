"""The fence: what keeps an erased subject's queued and redelivered writes from landing.

Erasing a subject first sets its fence (`erasure_fences`: the subject's keyed hash, the
database time, and the Redis clock in microseconds plus a margin), then deletes. Every write,
under its run's lock, takes the fence lock shared and looks up the fences of every subject
its run belongs to (the user — alone and narrowed to its agent and/or company —, the company,
the agent, the run's conversation). A write is refused (`rejected-erased`) when its run began
before a fence:

* the run has a row: it began at `runs.created_at` (only possible while the erasure is still
  deleting, or for a run begun after the fence, which is new and applies normally);
* no row yet: the write's seq dates it. Seqs from the documented reservation script start
  above the Redis clock in microseconds, so a seq at most the fence's `seq_floor` was
  reserved (enqueued) before the erasure; a later seq was reserved after it;
* a seq below `CLOCK_SEQ_MIN` (a plain INCRBY counter) cannot be dated: it is refused while
  the fence is younger than `UNDATED_WINDOW`, and treated as a new run afterwards.

A conversation record has no seq: a conversation whose row began before the fence is
refused; one with no row is refused while the fence is younger than `UNDATED_WINDOW`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from db.queries.fences import conversation_began_at, fences_for, lock_fences_shared
from worker.erasure.subject import fence_hashes

# 10**15 µs after the epoch is 2001-09-09: every seq of the reservation script is above it,
# and no plain counter gets there.
CLOCK_SEQ_MIN = 10**15
# How long a write or conversation record that cannot be dated is refused after an erasure:
# longer than a message waits in a sane backlog, the visibility timeout and the result
# expiry. A module constant: worker/settings.py is owned elsewhere.
UNDATED_WINDOW = timedelta(days=1)
# Added to the Redis clock when the fence is set: a counter may run a little ahead of the
# clock (base + n), and the database and Redis clocks are not the same clock. A new run in
# the first second after an erasure is refused rather than let a queued one through.
SEQ_FLOOR_MARGIN_US = 1_000_000

ERASED_REASON = (
    "Not saved: the memory of this run's user, company, agent or conversation was erased "
    "after the run began; writes of runs begun before an erasure never land. A new run "
    "is stored normally."
)
ERASED_CONVERSATION_REASON = (
    "nothing was stored: this conversation's user, company, agent or the conversation itself "
    "was erased after it was recorded or queued"
)


@dataclass(frozen=True)
class Fence:
    subject_hash: str
    erased_at: datetime
    seq_floor: int


def _as_fences(rows: Iterable[dict[str, Any]]) -> list[Fence]:
    return [Fence(f["subject_hash"], f["erased_at"], int(f["seq_floor"])) for f in rows]


def _fences(conn: Connection, hashes: list[str]) -> list[Fence]:
    lock_fences_shared(conn)
    return _as_fences(fences_for(conn, hashes))


def _refusing(fences: list[Fence], began: datetime | None, now: datetime,
              seq: int | None) -> Fence | None:
    """The first fence that what began at `began` (or, with no row yet, was enqueued with
    `seq`; a conversation record has none) must yield to."""
    for fence in fences:
        if began is not None:
            if began <= fence.erased_at:
                return fence
        elif seq is not None and seq >= CLOCK_SEQ_MIN:
            if seq <= fence.seq_floor:
                return fence
        elif now - fence.erased_at < UNDATED_WINDOW:
            return fence
    return None


def write_fence_hashes(*, agent_id: str, user_id: str | None, company_id: str | None,
                       conversation_id: str | None) -> list[str]:
    """The subject hashes whose fences a write of this run answers to."""
    return fence_hashes(agent_id, user_id, company_id, conversation_id)


def write_fence(fences: Iterable[dict[str, Any]], *, run_began: datetime | None, seq: int,
                now: datetime) -> Fence | None:
    """The fence that refuses this write, or None: from the fences of `write_fence_hashes`
    and when its run began (None: no row yet), both read under the run's lock and the fence
    lock (db/queries/runs.py reads them with the run's state)."""
    found = _as_fences(fences)
    if not found:
        return None
    return _refusing(found, run_began, now, seq)


def conversation_fence(conn: Connection, *, conversation_id: str, agent_id: str | None,
                       user_id: str | None, company_id: str | None,
                       now: datetime) -> Fence | None:
    """The fence that refuses this conversation record, or None."""
    fences = _fences(conn, fence_hashes(agent_id, user_id, company_id, conversation_id))
    if not fences:
        return None
    return _refusing(fences, conversation_began_at(conn, conversation_id), now, seq=None)
