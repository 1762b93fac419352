"""Celery beat schedule. The Memory Manager cycle arrives with its own issue; until then the
schedule is empty and beat only proves the wiring."""

from __future__ import annotations

from typing import Any


def beat_schedule(settings: Any) -> dict[str, dict[str, Any]]:
    return {}
