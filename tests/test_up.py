"""`memory-worker up` on the embedded default: starts everything, Ctrl-C stops everything."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from tests.helpers import wait_until
from worker.settings import PROJECT_ROOT

pytestmark = pytest.mark.processes


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _processes_using(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if marker in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_up_starts_the_embedded_stack_and_ctrl_c_stops_it(tmp_path):
    data_dir = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["MEMORY_FLOWER_PORT"] = str(_free_port())
    output = tmp_path / "up.log"

    def start() -> subprocess.Popen[bytes]:
        with open(output, "ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "worker.cli", "up", "--data-dir", str(data_dir)],
                cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    for round_no in (1, 2):
        up = start()
        try:
            wait_until(lambda n=round_no: output.read_text().count("Ready.") >= n,
                       timeout=180, interval=0.5)
            children = psutil.Process(up.pid).children(recursive=True)
            assert len(children) >= 4, "write worker, manager worker, beat and Flower"
            assert _processes_using(str(data_dir / "pg")), "embedded postgres is running"
            up.send_signal(signal.SIGINT)
            assert up.wait(timeout=90) == 0
        finally:
            if up.poll() is None:
                os.killpg(up.pid, signal.SIGKILL)
        time.sleep(0.5)
        for child in children:
            assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
        assert _processes_using(str(data_dir)) == [], "no orphan processes"
        assert "Stopped." in output.read_text()
    text = output.read_text()
    assert text.count("migrations: 0001") == 1, "data kept: the second start migrates nothing"
    assert "migrations: up to date" in text
