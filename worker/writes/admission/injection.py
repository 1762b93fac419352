"""Read-side rules of SPEC 5 ("expiration-aware retrieval"): which notes may be injected.

The read path (db/queries/retrieval.py, worker/reads/context.py) applies these; they live with the
rest of the policy so it is defined in one place. A note is injectable only if none of the
reasons apply."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from db.enums import INJECTABLE_STATUSES, AuthorType
from worker.writes.admission.policy import MemoryPolicy


class FilterReason(StrEnum):
    NOT_INJECTABLE = "not_injectable"  # status outside INJECTABLE_STATUSES (never injected)
    EXPIRED = "expired"  # expires_at <= now (always filtered, policy or not)
    EXPIRY_MISSING = "expiry_missing"  # enforce_expires_at and expires_at IS NULL
    EXPIRY_MALFORMED = "expiry_malformed"  # enforce_expires_at and +/-infinity
    UNATTRIBUTED = "unattributed"  # not allow_unattributed_results and no provenance


# The same rules as SQL over `notes n`, for pushing them into the query. Constant fragments.
EXPIRY_ENFORCED_SQL = (
    "(n.expires_at IS NOT NULL AND isfinite(n.expires_at) AND n.expires_at > :now)"
)
ATTRIBUTED_SQL = (
    "(n.source_agent_run_id IS NOT NULL OR n.source_conversation_id IS NOT NULL "
    f"OR cardinality(n.derived_from_note_ids) > 0 OR n.author_type = '{AuthorType.USER.value}')"
)


def injection_filter_reason(note: Mapping[str, Any], policy: MemoryPolicy, now: datetime
                            ) -> FilterReason | None:
    """Why `note` (a row of notes) must not be injected, or None. `expires_at` may be a
    datetime, None, or anything else (read as malformed)."""
    if note.get("status") not in INJECTABLE_STATUSES:
        return FilterReason.NOT_INJECTABLE
    expires_at = note.get("expires_at")
    if expires_at is not None and not isinstance(expires_at, datetime):
        return FilterReason.EXPIRY_MALFORMED if policy.enforce_expires_at else None
    if isinstance(expires_at, datetime) and expires_at <= now:
        return FilterReason.EXPIRED
    if policy.enforce_expires_at and expires_at is None:
        return FilterReason.EXPIRY_MISSING
    if not policy.allow_unattributed_results and not (
        note.get("source_agent_run_id") or note.get("source_conversation_id")
        or note.get("derived_from_note_ids") or note.get("author_type") == AuthorType.USER
    ):
        return FilterReason.UNATTRIBUTED
    return None


def filter_for_injection(notes: Iterable[Mapping[str, Any]], policy: MemoryPolicy,
                         now: datetime) -> tuple[list[Mapping[str, Any]], dict[str, int]]:
    """Keep the injectable notes; count the others per reason (the memory_retrieve_filter
    trace's `detail.filtered`)."""
    kept: list[Mapping[str, Any]] = []
    counts: Counter[str] = Counter()
    for note in notes:
        reason = injection_filter_reason(note, policy, now)
        if reason is None:
            kept.append(note)
        else:
            counts[reason.value] += 1
    return kept, dict(counts)
