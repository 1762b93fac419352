"""A message pushed onto a queue list by a client in another language, with its envelope
broken, is never dropped and never resets the broker connection: with a task id it is
answered refused (a write `rejected-invalid` in its run's order) and kept as a dead letter;
without one it is kept as a dead letter with its raw text. The worker goes on."""

from __future__ import annotations

import base64
import copy
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from celery.result import AsyncResult

from tests.helpers import rows, wait_until
from tests.system.conftest import send

QUEUE_LIST = "memory.writes"


def _envelope(name: str, args: list[Any], task_id: str) -> dict[str, Any]:
    """A message exactly as the wire contract describes it (what kombu itself writes)."""
    body = json.dumps([args, {}, {"callbacks": None, "errbacks": None, "chain": None,
                                  "chord": None}])
    return {
        "body": base64.b64encode(body.encode()).decode(),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {"lang": "go", "task": name, "id": task_id, "root_id": task_id,
                    "parent_id": None, "group": None, "retries": 0, "argsrepr": "",
                    "kwargsrepr": "", "origin": "go-client", "ignore_result": False,
                    "eta": None, "expires": None, "timelimit": [None, None], "shadow": None},
        "properties": {"correlation_id": task_id, "reply_to": "", "delivery_mode": 2,
                       "delivery_info": {"exchange": QUEUE_LIST, "routing_key": QUEUE_LIST},
                       "priority": 0, "body_encoding": "base64",
                       "delivery_tag": str(uuid.uuid4())},
    }


def _lpush(services, text: str) -> None:
    import redis

    redis.Redis.from_url(services.redis_url).lpush(QUEUE_LIST, text)


def _write_args(run: dict[str, Any], note: str, seq: int) -> list[Any]:
    return [run, {"note": note, "type": "Preference"}, seq, seq - 1]


def _result(task_id: str) -> dict[str, Any]:
    from worker.celery_app import app

    return AsyncResult(task_id, app=app).get(timeout=60)


def _dead_letters(services) -> list[dict[str, Any]]:
    return rows(services.database_url,
                "SELECT task_id, task_name, reason, body FROM dead_letters ORDER BY id")


def _without(path: str) -> Callable[[dict[str, Any]], None]:
    def remove(envelope: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = envelope
        for key in parents:
            target = target[key]
        del target[last]
    return remove


def _plain_body_with_encoding(encoding: str) -> Callable[[dict[str, Any]], None]:
    def change(envelope: dict[str, Any]) -> None:
        envelope["body"] = base64.b64decode(envelope["body"]).decode()
        envelope["properties"]["body_encoding"] = encoding
    return change


def _properties_as_text(envelope: dict[str, Any]) -> None:
    envelope["properties"] = "persistent"


def _body_as_object(envelope: dict[str, Any]) -> None:
    args, kwargs, _ = json.loads(base64.b64decode(envelope["body"]))
    envelope["body"] = base64.b64encode(json.dumps({"args": args, "kwargs": kwargs}).encode()
                                        ).decode()


def _alive(worker) -> bool:
    return worker.process is not None and worker.process.poll() is None


def _consumer_failed(worker) -> bool:
    """What a message the transport could not handle used to cause: the consumer reset (the
    message lost) or the worker's main process ended (and the next, when it came back)."""
    log = worker.log_path.read_text(errors="replace")
    return "Connection to broker lost" in log or "Unrecoverable error" in log


def test_a_whole_envelope_pushed_by_hand_is_applied(services, system_worker):
    """Control: the hand-built envelope is what the contract says, so the defects below are
    the only difference."""
    run = {"run_id": "env-whole", "agent_id": "A", "user_id": "u-1"}
    task_id = str(uuid.uuid4())
    _lpush(services, json.dumps(_envelope("memory.write",
                                          _write_args(run, "User prefers tea.", 1), task_id)))
    assert _result(task_id)["disposition"] == "written"
    assert _dead_letters(services) == []


@pytest.mark.parametrize("defect,field", [
    (_without("properties.delivery_tag"), "properties.delivery_tag"),
    (_without("properties.delivery_info.exchange"), "properties.delivery_info.exchange"),
    (_without("properties.delivery_info"), "properties.delivery_info"),
    (_properties_as_text, "properties"),
    (_plain_body_with_encoding("rot13"), "properties.body_encoding"),
    (_without("content-type"), "content-type"),
    (_body_as_object, "[args, kwargs, embed]"),
])
def test_a_broken_envelope_is_answered_refused_in_its_runs_order(services, system_worker,
                                                                 defect, field):
    run = {"run_id": f"env-{field}", "agent_id": "A", "user_id": "u-1"}
    task_id = str(uuid.uuid4())
    envelope = _envelope("memory.write", _write_args(run, "User prefers tea.", 1), task_id)
    broken = copy.deepcopy(envelope)
    defect(broken)
    _lpush(services, json.dumps(broken))

    refused = _result(task_id)
    assert refused["disposition"] == "rejected-invalid", refused
    assert field in refused["reason"] and refused["seq"] == 1
    after = send("memory.write", *_write_args(run, "User prefers green tea.", 2)).get(timeout=60)
    assert after["disposition"] == "written"  # not held up: seq 1 was answered in order

    logged = rows(services.database_url, "SELECT seq, disposition FROM write_log "
                  "WHERE run_id = %s ORDER BY seq", run["run_id"])
    assert [(r["seq"], r["disposition"]) for r in logged] == [(1, "rejected-invalid"),
                                                              (2, "written")]
    gaps = rows(services.database_url, "SELECT 1 FROM trace_events WHERE run_id = %s "
                "AND detail ? 'gap_skipped'", run["run_id"])
    assert gaps == []
    [letter] = _dead_letters(services)
    assert letter["task_id"] == task_id and letter["task_name"] == "memory.write"
    assert field in letter["reason"]
    assert json.loads(letter["body"])["headers"]["id"] == task_id  # the message as received
    assert _alive(system_worker) and not _consumer_failed(system_worker)


def _no_headers(task_id: str) -> str:
    envelope = _envelope("memory.write", [], task_id)
    del envelope["headers"]
    return json.dumps(envelope)


def _no_task_id(task_id: str) -> str:
    envelope = _envelope("memory.write", [], task_id)
    del envelope["headers"]["id"]
    return json.dumps(envelope)


@pytest.mark.parametrize("message,reason", [
    (lambda marker: f"not json at all {marker}", "not JSON"),
    (lambda marker: json.dumps([marker, 1, 2]), "not a JSON object"),
    (_no_headers, "headers is missing"),
    (_no_task_id, "headers.id is missing"),
])
def test_a_message_with_nothing_to_answer_is_kept_with_its_raw_text(services, system_worker,
                                                                   message, reason):
    import redis

    marker = str(uuid.uuid4())
    _lpush(services, message(marker))

    [letter] = wait_until(lambda: _dead_letters(services), timeout=30)
    assert reason in letter["reason"] and marker in letter["body"]
    run = {"run_id": f"env-after-{reason}", "agent_id": "A", "user_id": "u-1"}
    after = send("memory.write", *_write_args(run, "User prefers tea.", 1)).get(timeout=60)
    assert after["disposition"] == "written"
    client = redis.Redis.from_url(services.redis_url)
    assert client.llen(QUEUE_LIST) == 0
    assert not any(marker.encode() in value for value in client.hvals("unacked"))
    assert _alive(system_worker) and not _consumer_failed(system_worker)


@pytest.mark.parametrize("body", ["[1]", "null", '"text"', "[[], [], []]"])
def test_a_body_that_is_not_args_kwargs_embed_is_answered_and_the_worker_lives(
        services, system_worker, body):
    """Celery unpacked such a body in the worker's main process, which died of it — and the
    next worker too, once the message came back."""
    task_id = str(uuid.uuid4())
    envelope = _envelope("memory.write", [], task_id)
    envelope["body"] = base64.b64encode(body.encode()).decode()
    _lpush(services, json.dumps(envelope))

    refused = _result(task_id)
    assert refused["disposition"] == "rejected-invalid"
    assert "[args, kwargs, embed]" in refused["reason"]
    [letter] = _dead_letters(services)
    assert letter["task_id"] == task_id
    run = {"run_id": "env-after-body", "agent_id": "A", "user_id": "u-1"}
    after = send("memory.write", *_write_args(run, "User prefers tea.", 1)).get(timeout=60)
    assert after["disposition"] == "written"
    assert _alive(system_worker) and not _consumer_failed(system_worker)
