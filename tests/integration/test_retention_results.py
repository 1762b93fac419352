"""A `memory.context` result is memory text: the result backend keeps it for minutes
(`context_result_expires_s`), while other results keep the general `result_expires_s`."""

from __future__ import annotations

import pytest
import redis

from tests.helpers import run_context
from worker.client import enqueue_memory_writes

pytestmark = pytest.mark.usefixtures("celery_worker")


def test_context_results_expire_within_minutes_and_write_results_do_not(services, settings):
    from worker.celery_app import app

    [written] = enqueue_memory_writes(run_context("rx-1"), [
        {"note": "User prefers tea over coffee", "type": "Preference"}]).results(timeout=30)
    assert written["disposition"] == "written"
    result = app.send_task("memory.context", args=({"agent_id": "A", "user_id": "U",
                                                    "company_id": "C"},))
    assert "tea" in result.get(timeout=30)["rendered"]
    client = redis.Redis.from_url(services.redis_url)
    context_ttl = client.ttl(f"celery-task-meta-{result.id}")
    assert 0 < context_ttl <= settings.context_result_expires_s
    write_ttls = [client.ttl(key) for key in client.scan_iter("celery-task-meta-*")
                  if key.decode() != f"celery-task-meta-{result.id}"]
    assert write_ttls and min(write_ttls) > settings.context_result_expires_s
