"""Trace events of admission and promotion: stored in trace_events, logged as structured
records. Never note text."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from uuid import UUID

# Structured trace log: one record per trace event, the event name as the message and every
# field as `extra`. Never note text.
trace_log = logging.getLogger("memory.trace")


class TraceEventName(StrEnum):
    WRITE = "memory_write"
    WRITE_SKIP = "memory_write_skip"
    WRITE_BLOCK = "memory_write_block"
    WRITE_QUARANTINE = "memory_write_quarantine"  # held as a candidate by admission by effect
    RETRIEVE_FILTER = "memory_retrieve_filter"
    PROMOTION_REQUIRED = "memory_promotion_required"
    PROMOTION_APPROVED = "memory_promotion_approved"
    PROMOTION_REWRITTEN = "memory_promotion_rewritten"
    PROMOTION_REJECTED = "memory_promotion_rejected"
    PROMOTION_BLOCKED = "memory_promotion_blocked"
    FORGET = "memory_forget"


@dataclass(frozen=True)
class TraceEvent:
    """One trace step besides the write's own: stored in trace_events, logged on commit."""

    event: str
    disposition: str | None = None
    note_id: UUID | None = None
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def log_trace(event: str, **fields: Any) -> None:
    """The structured-log twin of a trace_events row. Callers pass only non-text fields;
    `reason` sentences are not logged (a hook's reason is the one free-text field)."""
    fields.pop("reason", None)
    extra = {k: (str(v) if isinstance(v, UUID) else v) for k, v in fields.items()}
    detail = extra.get("detail")
    code = detail.get("reason_code") if isinstance(detail, dict) else None
    extra["reason_code"] = code
    trace_log.info("%s run=%s seq=%s disposition=%s code=%s", event, extra.get("run_id"),
                   extra.get("seq"), extra.get("disposition"), code,
                   extra={"event": event, **extra})
