"""One `up` per data directory, and the CLI of a second terminal finding it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from worker.local.stack_file import StackBusy, StackLock, adopt_running_stack, running_stack

URLS = {"DATABASE_URL": "postgresql://u:pw@127.0.0.1:5999/memory",
        "REDIS_URL": "redis://127.0.0.1:6999/0"}


def test_a_second_lock_on_the_same_folder_is_refused_naming_the_first(tmp_path):
    first = StackLock(tmp_path)
    first.acquire()
    first.publish(URLS)
    try:
        with pytest.raises(StackBusy, match=f"pid {os.getpid()}") as refused:
            StackLock(tmp_path).acquire()
        assert str(tmp_path) in str(refused.value) and "--data-dir" in str(refused.value)
        assert running_stack(tmp_path) == {"pid": os.getpid(), **URLS}, "the first stays"
    finally:
        first.release()
    assert running_stack(tmp_path) is None
    second = StackLock(tmp_path)
    second.acquire()  # free again once the first let go
    second.release()


def test_another_process_holding_the_lock_is_seen(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from worker.local.stack_file import StackLock; "
         f"lock = StackLock(Path({str(tmp_path)!r})); lock.acquire(); "
         f"lock.publish({URLS!r}); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert running_stack(tmp_path) == {"pid": holder.pid, **URLS}
        with pytest.raises(StackBusy, match=f"pid {holder.pid}"):
            StackLock(tmp_path).acquire()
        holder.kill()  # killed outright: the kernel releases the lock, the file stays behind
        holder.wait()
        assert (tmp_path / "stack.json").exists()
        assert running_stack(tmp_path) is None, "a killed up's file is not a running stack"
        lock = StackLock(tmp_path)
        lock.acquire()
        assert not (tmp_path / "stack.json").exists(), "the leftover is removed on start"
        lock.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_the_stack_file_is_private(tmp_path):
    lock = StackLock(tmp_path)
    lock.acquire()
    try:
        lock.publish(URLS)
        assert stat.S_IMODE((tmp_path / "stack.json").stat().st_mode) == 0o600
    finally:
        lock.release()


def test_adopting_takes_only_the_urls_not_set(tmp_path, monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("MEMORY_DATABASE_URL", raising=False)
    monkeypatch.setenv("REDIS_URL", "redis://elsewhere:6379/0")
    assert adopt_running_stack(tmp_path) == {}, "no stack runs: nothing taken"
    lock = StackLock(tmp_path)
    lock.acquire()
    try:
        lock.publish(URLS)
        assert adopt_running_stack(tmp_path) == {"DATABASE_URL": URLS["DATABASE_URL"]}
        assert os.environ["DATABASE_URL"] == URLS["DATABASE_URL"]
        assert os.environ["REDIS_URL"] == "redis://elsewhere:6379/0", "a set URL wins"
    finally:
        lock.release()
