"""A message that cannot be handled safely never takes a worker down: a payload nested deeper
than any real one is answered `rejected-invalid` in its run's order, and a message that
crashed a worker is not redelivered forever — it is moved aside to `dead_letters`."""

from __future__ import annotations

import json

import pytest
from celery.result import AsyncResult

from tests.helpers import nested, rows, wait_until
from tests.system.conftest import publish_raw, send


@pytest.mark.parametrize("depth", [480, 900])
def test_a_deeply_nested_write_is_rejected_and_the_worker_lives(services, system_worker,
                                                                 depth):
    run = {"run_id": f"deep-{depth}", "agent_id": "A", "user_id": "u-1"}
    deep = send("memory.write", run, {"note": nested(depth), "type": "Context"}, 1)
    after = send("memory.write", run, {"note": "User prefers tea.", "type": "Context"}, 2)
    result = deep.get(timeout=60)
    assert result["disposition"] == "rejected-invalid", result
    assert "nested" in result["reason"]
    assert after.get(timeout=60)["disposition"] == "written"  # in order, right after it
    assert system_worker.process is not None and system_worker.process.poll() is None
    [logged] = rows(services.database_url, "SELECT seq, disposition FROM write_log "
                    "WHERE run_id = %s AND seq = 1", run["run_id"])
    assert logged["disposition"] == "rejected-invalid"


def test_a_deeply_nested_read_answers_not_ok(services, system_worker):
    reply = send("memory.context", {"agent_id": "A", "input_text": "hi",
                                    "secondary_scopes": nested(900)}).get(timeout=60)
    assert reply["ok"] is False and "nested" in reply["error"]


def _dead_letters(services) -> list[dict]:
    return rows(services.database_url, "SELECT task_id, task_name, reason, deliveries, body "
                "FROM dead_letters ORDER BY id")


def test_deeper_than_any_encoder_writes_is_refused_in_order(services, system_worker):
    """5,000 levels: beyond Python's own JSON decoder, so it is moved aside undecoded."""
    from worker.celery_app import app

    run = {"run_id": "deeper", "agent_id": "A", "user_id": "u-1"}
    note = '{"a":' * 5000 + '"x"' + "}" * 5000
    body = f'[[{json.dumps(run)}, {{"note": {note}, "type": "Context"}}, 1], {{}}, {{}}]'
    task_id = publish_raw("memory.write", body)
    after = send("memory.write", run, {"note": "User prefers tea.", "type": "Context"}, 1)
    # Undecodable, its seq is unknown: the run's seq 1 is the next write's.
    assert after.get(timeout=60)["disposition"] == "written"
    [letter] = wait_until(lambda: _dead_letters(services), timeout=30)
    assert letter["task_id"] == task_id and letter["task_name"] == "memory.write"
    assert "cannot be decoded" in letter["reason"] and letter["body"].startswith("[[")
    assert system_worker.process is not None and system_worker.process.poll() is None
    assert AsyncResult(task_id, app=app).state == "PENDING"  # acknowledged, never run


def test_a_deep_write_is_kept_as_a_dead_letter(services, system_worker):
    run = {"run_id": "kept", "agent_id": "A", "user_id": "u-1"}
    result = send("memory.write", run, {"note": nested(100), "type": "Context"}, 1)
    assert result.get(timeout=60)["disposition"] == "rejected-invalid"
    [letter] = _dead_letters(services)
    assert letter["task_id"] == result.id and letter["reason"].startswith("the payload is")
    assert json.loads(letter["body"])[0][0] == run  # the raw message, for an operator
    from typer.testing import CliRunner

    from worker.cli import cli

    listed = CliRunner().invoke(cli, ["dead-letters", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    [entry] = json.loads(listed.output)
    assert entry["task_id"] == result.id and entry["body_chars"] == len(letter["body"])
    shown = CliRunner().invoke(cli, ["dead-letters", "show", str(entry["id"])])
    assert shown.exit_code == 0 and json.loads(shown.output)["body"] == letter["body"]


def test_a_message_that_keeps_killing_its_worker_is_moved_aside(services, system_worker):
    """Simulated with the delivery counter: the sixth delivery of one message is refused."""
    import redis

    run = {"run_id": "looping", "agent_id": "A", "user_id": "u-1"}
    task_id = "looping-task"
    client = redis.Redis.from_url(services.redis_url)
    client.set(f"memory:deliveries:{task_id}:0", 5)  # five deliveries died before this one
    result = send_with_id(task_id, run)
    outcome = result.get(timeout=60)
    assert outcome["disposition"] == "rejected-invalid" and "delivered 6 times" in \
        outcome["reason"]
    [letter] = _dead_letters(services)
    assert letter["deliveries"] == 6


def send_with_id(task_id: str, run: dict):
    from worker.celery_app import app

    return app.send_task("memory.write", args=[run, {"note": "User prefers tea.",
                                                      "type": "Context"}, 1], task_id=task_id)


def test_the_client_refuses_to_send_what_the_worker_would_refuse(services):
    from worker.client import enqueue_memory_writes

    with pytest.raises(ValueError, match="nested deeper than 32 levels"):
        enqueue_memory_writes({"run_id": "r", "agent_id": "A"},
                              [{"note": nested(480), "type": "Context"}])
