"""A client in another language, written from the wire contract alone (Node.js, no Celery,
no Redis library: tests/system/clients/wire_client.mjs): it records and numbers its writes
with the record script of docs/reference/wire-contract.md, pushes its chain as one message in
the documented envelope, and reads the results where the page says they are. Its writes
apply in order — and when it dies after recording, before publishing, they are applied all
the same."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from celery.result import AsyncResult

from tests.helpers import DISTINCT_FACTS, PROJECT_ROOT, rows, wait_until
from tests.system.conftest import applied_once_in_order, send

CLIENT = Path(__file__).parent / "clients" / "wire_client.mjs"
WORKER_ENV = {"MEMORY_REDELIVERY_AFTER_S": "2"}

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")


WIRE_CONTRACT = PROJECT_ROOT / "docs" / "reference" / "wire-contract.md"


def documented_record_script() -> str:
    """The Lua script exactly as the wire contract page shows it."""
    text = WIRE_CONTRACT.read_text()
    section = text[text.index("## Sequence numbers and write records"):]
    return re.search(r"```lua\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def test_the_wire_contract_shows_the_script_the_python_client_runs():
    from worker.delivery.records import RECORD_SCRIPT

    assert documented_record_script().strip() == RECORD_SCRIPT.strip()


def _node(services: Any, tmp_path: Path, spec: dict[str, Any]) -> dict[str, Any]:
    script = tmp_path / "record.lua"
    script.write_text(documented_record_script())
    port, db = re.match(r"redis://[^:]+:(\d+)/(\d+)", services.redis_url).groups()  # type: ignore[union-attr]
    done = subprocess.run(["node", str(CLIENT), port, db, str(script), json.dumps(spec)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_chain_from_the_wire_contract_applies_in_order(services, system_worker, tmp_path):
    run = {"run_id": "node-1", "agent_id": "A", "user_id": "u-node"}
    writes = [{"note": fact, "type": "Context"} for fact in DISTINCT_FACTS[:3]]
    out = _node(services, tmp_path, {"run": run, "writes": writes, "publish": True,
                                     "wait_s": 60})
    assert [r["disposition"] for r in out["results"]] == ["written"] * 3
    assert [str(r["seq"]) for r in out["results"]] == out["seqs"]
    seqs = [int(seq) for seq in out["seqs"]]
    assert applied_once_in_order(services.database_url, {"node-1": seqs}) == []
    # Applied: the worker deleted the client's records.
    import redis

    assert redis.Redis.from_url(services.redis_url).exists("memory:write-records:node-1") == 0


def test_writes_recorded_by_a_client_that_died_before_publishing_are_applied(
        services, system_worker, tmp_path):
    from worker.celery_app import app

    run = {"run_id": "node-2", "agent_id": "A", "user_id": "u-node"}
    writes = [{"note": fact, "type": "Context"} for fact in DISTINCT_FACTS[3:6]]
    out = _node(services, tmp_path, {"run": run, "writes": writes, "publish": False,
                                     "wait_s": 0})
    assert rows(services.database_url, "SELECT * FROM write_log") == []
    time.sleep(2.5)  # past the redelivery bound
    assert send("memory.continuations.flush").get(timeout=60)["records"]["redelivered"] == 3
    results = [AsyncResult(task_id, app=app).get(timeout=60) for task_id in out["task_ids"]]
    assert [r["disposition"] for r in results] == ["written"] * 3
    wait_until(lambda: len(rows(services.database_url, "SELECT * FROM write_log")) == 3)
    assert applied_once_in_order(services.database_url,
                                 {"node-2": [int(s) for s in out["seqs"]]}) == []
