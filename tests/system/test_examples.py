"""The examples of examples/, run as a reader would run them against the real stack: a
`celery worker` process on the session's Postgres and Redis, the example started as its own
process with only the URLs in its environment. The Node.js one is written from the wire
contract page alone and ships the record script that page shows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PROJECT_ROOT, rows
from tests.system.conftest import applied_once_in_order

EXAMPLES = PROJECT_ROOT / "examples"


def _env(services: Any) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("MEMORY_", "BROKER_URL"))}
    env.update(DATABASE_URL=services.database_url, REDIS_URL=services.redis_url)
    return env


def _run(command: list[str], services: Any, tmp_path: Path) -> dict[str, Any]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=180,
                          env=_env(services), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_python_agent_writes_in_order_and_reads_its_memory_back(
        services, system_worker, tmp_path):
    out = _run([sys.executable, str(EXAMPLES / "python_agent" / "agent.py"), "--json",
                "--user", "u-py", "--company", "acme"], services, tmp_path)
    assert [r["disposition"] for r in out["results"]] == ["written"] * 3
    assert applied_once_in_order(services.database_url, {out["run_id"]: out["seqs"]}) == []
    assert out["memory_before"] == ""
    # Relevant to the default task ("Which charts does the user prefer?"), and provisional.
    assert "(provisional) User prefers bar charts over pie charts." in out["memory_after"]


def test_the_node_example_ships_the_documented_record_script():
    from tests.system.test_wire_client import documented_record_script

    shipped = (EXAMPLES / "node_agent" / "record.lua").read_text()
    assert shipped.strip() == documented_record_script().strip()


def test_the_node_agent_speaks_the_wire_contract(services, system_worker, tmp_path):
    if shutil.which("node") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Node.js is not installed; CI runs the Node.js example")
        pytest.skip("Node.js is not installed")
    out = _run(["node", str(EXAMPLES / "node_agent" / "agent.mjs"), "--json"], services,
               tmp_path)
    assert [r["disposition"] for r in out["results"]] == ["written"] * 3
    assert [str(r["seq"]) for r in out["results"]] == out["seqs"]
    assert applied_once_in_order(services.database_url,
                                 {out["run_id"]: [int(s) for s in out["seqs"]]}) == []
    assert out["context"]["ok"] is True
    assert "User prefers metric units." in out["context"]["rendered"]
    # Applied: the worker cleared the records the client made.
    import redis

    assert redis.Redis.from_url(services.redis_url).exists(
        f"memory:write-records:{out['run_id']}") == 0
    assert len(rows(services.database_url, "SELECT * FROM write_log")) == 3
