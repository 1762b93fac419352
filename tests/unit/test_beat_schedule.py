"""The beat schedule on a moved clock (freezegun moves Python's clock; no worker runs under
it): the cycle is due on the quarter hours, UTC, and a tick expires before the next one."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from celery import Celery
from freezegun import freeze_time

from beat_schedule import CYCLE_PERIOD_S, beat_schedule
from worker.settings import Settings


@pytest.fixture
def schedule(monkeypatch):
    for name in ("DATABASE_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    return beat_schedule(Settings(_env_file=None))


@pytest.mark.parametrize("last_run, now, due, next_in_s", [
    ("12:00", "2026-06-01 12:14:59", False, 1),  # one second before the quarter hour
    ("12:00", "2026-06-01 12:15:00", True, CYCLE_PERIOD_S),
    ("12:00", "2026-06-01 12:29:30", True, 30),  # a tick missed at 12:15 runs once, at once
    ("23:45", "2026-06-01 23:59:59", False, 1),  # across midnight
    ("23:45", "2026-06-02 00:00:00", True, CYCLE_PERIOD_S),
])
def test_the_cycle_is_due_on_the_quarter_hours(schedule, last_run, now, due, next_in_s):
    cron = schedule["memory-manager-cycle"]["schedule"]
    cron.app = Celery(set_as_current=False)  # UTC, like ours; no broker or settings needed
    hour, minute = map(int, last_run.split(":"))
    with freeze_time(now):
        is_due, next_s = cron.is_due(datetime(2026, 6, 1, hour, minute, tzinfo=UTC))
    assert is_due is due
    assert next_s == pytest.approx(next_in_s, abs=1)


def test_a_tick_expires_before_the_next_one(schedule):
    cycle, flush = schedule["memory-manager-cycle"], schedule["memory-continuations-flush"]
    assert 0 < cycle["options"]["expires"] < CYCLE_PERIOD_S
    period = Settings(_env_file=None).flush_period_s
    assert flush["schedule"] == period and flush["options"]["expires"] <= period
