"""What every phase of a cycle is given: the database, settings, the judge, the cycle's
clock reading and id. Phases open their own transactions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from db.connector import Database
from worker.embeddings import Embedder
from worker.manager.judge import Budget, CycleJudge
from worker.settings import Settings


@dataclass
class PhaseDeps:
    db: Database
    settings: Settings
    judge: CycleJudge
    budget: Budget
    embedder: Embedder | None
    now: datetime  # one reading per cycle: every phase sees the same "now"
    cycle_id: int | None
    # Cursors the previous cycle left (phase name → value); a phase returns its new one as
    # counts["watermark"].
    watermarks: dict[str, Any] = field(default_factory=dict)
    # When the previous maintenance started: maintenance phases look only at scopes that
    # changed since (None: never, look at everything).
    last_maintenance: datetime | None = None


def bump(counts: dict[str, int], key: str, by: int = 1) -> None:
    counts[key] = counts.get(key, 0) + by
