"""`memory-worker up` on the embedded default: starts everything, Ctrl-C stops everything."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers import PROJECT_ROOT, wait_until

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

    def start(sigint_ignored: bool) -> subprocess.Popen[bytes]:
        # The second start as a non-interactive shell's background job would be: launched
        # with SIGINT ignored, which Python keeps; Ctrl-C must still stop it.
        def launcher() -> None:
            if sigint_ignored:
                signal.signal(signal.SIGINT, signal.SIG_IGN)

        with open(output, "ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "worker.cli", "up", "--data-dir", str(data_dir)],
                cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=launcher,
            )

    for round_no in (1, 2):
        up = start(sigint_ignored=round_no == 2)
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
                # A failed stop: take the whole stack down (children run in their own
                # sessions; left running, they would join the next test's broker).
                leftovers = psutil.Process(up.pid).children(recursive=True)
                os.killpg(up.pid, signal.SIGKILL)
                for proc in leftovers + _processes_using(str(data_dir)):
                    with contextlib.suppress(psutil.Error):
                        proc.kill()
        # (a loaded machine may take a moment to reap the last of them; an orphan stays)
        with contextlib.suppress(AssertionError):
            wait_until(lambda: not _processes_using(str(data_dir)), timeout=15, interval=0.5)
        for child in children:
            assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
        assert _processes_using(str(data_dir)) == [], "no orphan processes"
        assert "Stopped." in output.read_text()
    text = output.read_text()
    assert text.count("migrations: 0001") == 1, "data kept: the second start migrates nothing"
    assert "migrations: up to date" in text


def test_stopping_the_children_shares_one_deadline(tmp_path):
    """Three children that ignore SIGTERM (as a Flower stuck joining its threads does) are
    killed after one shared grace, not after three graces one after another."""
    from worker.local.stack import Child, stop_children

    stubborn = [sys.executable, "-c",
                "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('up', flush=True); time.sleep(60)"]
    children = [Child(f"stubborn-{i}", stubborn, tmp_path / f"{i}.log") for i in range(3)]
    for child in children:
        child.start(dict(os.environ))
    wait_until(lambda: all((tmp_path / f"{i}.log").read_text().startswith("up")
                           for i in range(3)), timeout=30, interval=0.1)
    started = time.monotonic()
    stop_children(children, timeout=2.0)
    elapsed = time.monotonic() - started
    assert not any(child.alive for child in children)
    assert all(child.process and child.process.returncode == -signal.SIGKILL
               for child in children)
    assert elapsed < 5.0, f"{elapsed:.1f} s: the graces were added up (3 x 2 s)"


def test_a_killed_up_takes_its_workers_and_redis_with_it(tmp_path):
    """`up` SIGKILLed (no chance to stop anything): its workers, beat, Flower and Redis get
    SIGTERM from the kernel and exit, instead of living on to join the next stack's broker."""
    data_dir = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["MEMORY_FLOWER_PORT"] = str(_free_port())
    output = tmp_path / "up.log"
    with open(output, "ab") as log:
        up = subprocess.Popen(
            [sys.executable, "-m", "worker.cli", "up", "--data-dir", str(data_dir)],
            cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    children: list[psutil.Process] = []
    try:
        wait_until(lambda: "Ready." in output.read_text(), timeout=180, interval=0.5)
        children = psutil.Process(up.pid).children(recursive=True)
        names = " ".join(" ".join(c.cmdline()) for c in children)
        assert "worker" in names and "beat" in names and "redis-server" in names
        up.kill()  # only `up` itself: its children live in their own sessions
        up.wait(timeout=10)

        def all_gone() -> bool:
            return all(not c.is_running() or c.status() == psutil.STATUS_ZOMBIE
                       for c in children)

        wait_until(all_gone, timeout=90, interval=0.5)
    finally:
        # Postgres runs as its own daemon (pg_ctl) and is stopped by `up`, not by the kernel.
        for proc in children + _processes_using(str(data_dir)):
            with contextlib.suppress(psutil.Error):
                proc.kill()


def test_up_shows_why_a_worker_cannot_start_and_does_not_claim_the_stack_is_up(services,
                                                                                tmp_path):
    env = {**os.environ, "DATABASE_URL": services.database_url,
           # a Redis database of its own: beat's ticks never reach the session's workers
           "REDIS_URL": services.redis_url.rsplit("/", 1)[0] + "/8",
           "MEMORY_EMBEDDING_MODEL": str(tmp_path / "no-such-model"),
           "MEMORY_FLOWER_PORT": str(_free_port()),
           # the tests may run as root here; Celery warns about that, a deployment does not
           "PYTHONWARNINGS": "ignore:You're running the worker with superuser privileges"}
    data_dir = tmp_path / "data"
    (data_dir / "logs").mkdir(parents=True)
    (data_dir / "logs" / "writes.log").write_text("an earlier run's last words\n")
    done = subprocess.run(
        [sys.executable, "-m", "worker.cli", "up", "--no-flower", "--data-dir", str(data_dir)],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=240,
        start_new_session=True)
    out = done.stdout
    assert done.returncode == 78, out[-3000:] + done.stderr[-3000:]
    assert "cannot start with this configuration:" in out
    # The write worker's line, and the manager worker's too when it failed before `up` had
    # stopped it (how far it got depends on the machine's speed).
    lines = [x for x in out.splitlines() if x.startswith("memory-worker: cannot start: ")]
    assert 1 <= len(lines) <= 2 and len(set(lines)) == 1, lines
    line = lines[0]
    assert str(tmp_path / "no-such-model") in line and "MEMORY_EMBEDDING_MODEL" in line
    assert "Ready." not in out and "Not started." in out
    assert "an earlier run's last words" not in out, "only what this start wrote"
    # The line `up` shows is the last one a worker of this start wrote to its log: the write
    # worker's, or the manager worker's when `up` stopped the write worker before it got
    # that far (on a busy machine the manager fails first).
    last_lines = [(data_dir / "logs" / name).read_text().splitlines()[-1:]
                  for name in ("writes.log", "manager.log")
                  if (data_dir / "logs" / name).exists()]
    assert [line] in last_lines, last_lines


def test_a_second_terminal_finds_the_stack_and_a_second_up_is_refused(tmp_path):
    """As a newcomer does it: `up` in a folder; in a second terminal, in the same folder and
    with no URL set, the README's commands talk to that stack; a second `up` there is refused
    in one line and changes nothing; once it stops, the CLI says no stack runs."""
    folder = tmp_path / "project"
    folder.mkdir()
    cli = str(PROJECT_ROOT / ".venv" / "bin" / "memory-worker")
    if not os.path.exists(cli):
        cli = os.path.join(os.path.dirname(sys.executable), "memory-worker")
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "MEMORY_DATA_DIR", "XDG_RUNTIME_DIR")}
    output = tmp_path / "up.log"

    def second_terminal(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([cli, *args], cwd=folder, env=env, capture_output=True,
                              text=True, timeout=timeout)

    with open(output, "ab") as log:
        up = subprocess.Popen([cli, "up", "--no-flower"], cwd=folder, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    data_dir = folder / ".memory-data"
    try:
        wait_until(lambda: "Ready." in output.read_text(), timeout=180, interval=0.5)
        children = psutil.Process(up.pid).children(recursive=True)

        banner = output.read_text()
        assert "In another terminal, in this folder: " in banner, banner
        assert "XDG_RUNTIME_DIR" not in banner, "no warning a newcomer cannot act on"
        stats = second_terminal("stats")
        assert stats.returncode == 0, stats.stderr
        written = second_terminal("write", "support-bot", "User prefers green tea.",
                                  "--user", "u-1", "--json")
        assert written.returncode == 0, written.stderr
        assert '"disposition": "written"' in written.stdout, written.stdout

        again = second_terminal("up", "--no-flower", timeout=60)
        assert again.returncode == 1
        assert again.stderr.strip().splitlines() == [
            f"memory-worker: another `memory-worker up` (pid {up.pid}) is running on "
            f"{data_dir}; use that one (the CLI in this folder finds it), stop it with Ctrl-C "
            "in its terminal, or start this one on its own folder with --data-dir"], again.stderr
        assert "Starting" not in again.stdout, "refused before anything started"
        assert up.poll() is None and all(c.is_running() for c in children), (
            "the first stack is untouched")
        listed = second_terminal("notes", "list", "--json")
        assert listed.returncode == 0 and "green tea" in listed.stdout, listed.stderr

        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=90) == 0
        after = second_terminal("stats", timeout=60)
        assert after.returncode == 1 and "no `memory-worker up` runs on" in after.stderr, (
            after.stderr)
    finally:
        if up.poll() is None:
            leftovers = psutil.Process(up.pid).children(recursive=True)
            os.killpg(up.pid, signal.SIGKILL)
            for proc in leftovers + _processes_using(str(data_dir)):
                with contextlib.suppress(psutil.Error):
                    proc.kill()


def _readme_tour() -> list[list[str]]:
    """The commands of the README's five-minute tour, as a user would type them."""
    import re
    import shlex

    text = (PROJECT_ROOT / "README.md").read_text()
    section = text[text.index("## Five-minute tour"):]
    section = section[:section.index("\n## ", 1)]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                commands.append(shlex.split(line))
    return commands


def _readme_demo_rows() -> list[str]:
    """The demo's rows as the README shows them: note and disposition, spaces collapsed."""
    text = (PROJECT_ROOT / "README.md").read_text()
    block = text[text.index(" run       #  note"):]
    block = block[:block.index("```")]
    return [" ".join(line.split()[2:]) for line in block.splitlines()[1:] if line.strip()]


def test_the_readme_tour_runs_as_written(tmp_path):
    """`make up`'s command with its demo, then every command of the README's tour typed in a
    second terminal in the same folder: each answers (exit 0) with what the README shows.
    The note id the README follows is its own run's; here, the id the tour's `write` made."""
    tour = _readme_tour()
    assert [c[:2] for c in tour] == [
        [".venv/bin/memory-worker", "stats"], [".venv/bin/memory-worker", "write"],
        [".venv/bin/memory-worker", "context"], [".venv/bin/memory-worker", "explain"],
        [".venv/bin/memory-worker", "notes"], [".venv/bin/memory-worker", "notes"]], tour
    folder = tmp_path / "project"
    (folder / ".venv").mkdir(parents=True)
    # The tour types `.venv/bin/memory-worker` in the checkout; here that is this venv's.
    (folder / ".venv" / "bin").symlink_to(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "MEMORY_DATA_DIR")}
    env["COLUMNS"] = "160"  # a terminal's width: the demo's rows on one line each, as shown
    output = tmp_path / "up.log"
    with open(output, "ab") as log:
        up = subprocess.Popen([".venv/bin/memory-worker", "up", "--demo", "--no-flower"],
                              cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        wait_until(lambda: "superseded-own" in output.read_text(), timeout=240, interval=0.5)

        def demo_table() -> str:  # the demo's table, its borders and spacing left out
            return " ".join(output.read_text().replace("│", " ").split())

        wait_until(lambda: all(row in demo_table() for row in _readme_demo_rows()),
                   timeout=60, interval=0.5)
        note_id = ""
        for command in tour:
            if command[1:3] == ["notes", "history"]:
                command = [*command[:3], note_id[:8]]
            done = subprocess.run(command, cwd=folder, env=env, capture_output=True,
                                  text=True, timeout=120)
            assert done.returncode == 0, (command, done.stdout, done.stderr)
            shown = done.stdout
            match command[1]:
                case "stats":
                    assert "notes by status:" in shown and "Provisional" in shown
                case "write":
                    assert shown.startswith("written: Saved as a provisional note"), shown
                    note_id = shown.split("note ", 1)[1].split()[0]
                case "context":
                    assert "<memory_policy>" in shown
                    assert "Never use pie charts for this user" in shown, shown
                case "explain":
                    assert "Never use pie charts for this user" in shown and "injected" in shown
                case "notes" if command[2] == "list":
                    assert "CHF" in shown, shown
                case "notes":
                    assert "written" in shown, shown
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(timeout=90)
        except subprocess.TimeoutExpired:
            leftovers = psutil.Process(up.pid).children(recursive=True)
            os.killpg(up.pid, signal.SIGKILL)
            for proc in leftovers:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
