"""Celery beat schedule: the Memory Manager cycle every 15 minutes (UTC), on the manager queue;
and every `flush_period_s` (15 s), the chain continuations a broker outage left in Postgres
(worker/app/continuations.py) and the recorded writes the broker lost
(worker/delivery/redelivery.py), on the write queue.

`expires` is shorter than the period: a tick that waited behind a long cycle is dropped
rather than run late, back to back with the next one (single-flight would skip it anyway,
but it would still occupy the queue).
"""

from __future__ import annotations

from typing import Any

from celery.schedules import crontab

from worker.app import task_names

CYCLE_TASK = task_names.MANAGER_CYCLE
CYCLE_PERIOD_MIN = 15
CYCLE_PERIOD_S = CYCLE_PERIOD_MIN * 60
FLUSH_TASK = task_names.CONTINUATIONS_FLUSH


def beat_schedule(settings: Any) -> dict[str, dict[str, Any]]:
    return {
        "memory-manager-cycle": {
            "task": CYCLE_TASK,
            "schedule": crontab(minute=f"*/{CYCLE_PERIOD_MIN}"),
            "options": {
                "queue": settings.manager_queue,
                "routing_key": settings.manager_queue,
                "expires": settings.cycle_expires_s,
            },
        },
        "memory-continuations-flush": {
            "task": FLUSH_TASK,
            "schedule": settings.flush_period_s,
            "options": {"queue": settings.write_queue, "routing_key": settings.write_queue,
                        "expires": settings.flush_period_s},
        },
    }
