"""Helpers for Memory Manager tests: seed notes through the query layer, run cycles and
single phases with a chosen clock."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from db.queries.notes import NewNote, insert_note
from db.scope import NoteScope
from tests.helpers import rows
from worker.manager.cycle import CycleReport, build_judge, run_manager_cycle
from worker.manager.deps import PhaseDeps
from worker.manager.judge import Budget
from worker.normalize import content_hash


def now_utc() -> datetime:
    return datetime.now(UTC)


def seed_note(runtime: Any, text: str, *, agent: str | None = "A", user: str | None = "U",
              company: str | None = "C", status: str = "Active", author: str = "User",
              tier: str = "Standard", type: str = "Preference", at: datetime | None = None,
              expires_at: datetime | None = None, confidence: int | None = None,
              embed: bool = True) -> uuid.UUID:
    scope = NoteScope(agent, user, company)
    vector = runtime.embedder.embed([text])[0] if embed else None
    with runtime.db.transaction() as conn:
        return insert_note(conn, NewNote(
            scope=scope, type=type, note=text, content_hash=content_hash(text), status=status,
            author_type=author, protection_tier=tier, expires_at=expires_at, embedding=vector,
            embedding_model=runtime.embedder.model_name if embed else None,
            source_conversation_id=None, source_conversation_detail_id=None,
            source_agent_run_id=None, confidence=confidence, first_access=False,
            hardened=status == "Active"), at or now_utc())


def run_cycle(runtime: Any, *, now: datetime | None = None, **kwargs: Any) -> CycleReport:
    return run_manager_cycle(runtime.db, runtime.settings, runtime.embedder,
                             now=now or now_utc(), **kwargs)


def phase_deps(runtime: Any, *, now: datetime | None = None, settings: Any = None,
               last_maintenance: datetime | None = None) -> PhaseDeps:
    settings = settings or runtime.settings
    now = now or now_utc()
    budget = Budget(settings.manager_model_calls_per_cycle,
                    settings.manager_model_tokens_per_cycle)
    return PhaseDeps(db=runtime.db, settings=settings,
                     judge=build_judge(settings, runtime.db, budget, now), budget=budget,
                     embedder=runtime.embedder, now=now, cycle_id=None,
                     last_maintenance=last_maintenance)


def note_row(database_url: str, note_id: uuid.UUID) -> dict[str, Any]:
    return rows(database_url, "SELECT * FROM notes WHERE id = %s", note_id)[0]


def events_of(database_url: str, note_id: uuid.UUID) -> list[dict[str, Any]]:
    return rows(database_url, "SELECT * FROM note_events WHERE note_id = %s ORDER BY id",
                note_id)
