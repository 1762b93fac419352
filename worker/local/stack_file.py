"""One `memory-worker up` per data directory, and where the CLI finds it.

`up` holds an exclusive lock on `<data_dir>/up.lock` for as long as it runs, so a second `up`
on the same folder is refused before it touches anything (it would otherwise stop the first
one's Redis, start a second beat and stop the shared Postgres on its way out). Once its
embedded services are up it writes `<data_dir>/stack.json` (0600: the URLs may carry a
password) with their URLs; the CLI in a second terminal, in the same folder and with no URL
of its own, uses them. The lock, not the file, says whether the stack runs: a file left by a
killed `up` is ignored, because the kernel released its lock with the process.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

LOCK_NAME = "up.lock"
STACK_NAME = "stack.json"


class StackBusy(RuntimeError):
    """Another `up` runs on this data directory."""


def _holder_pid(data_dir: Path) -> int | None:
    try:
        pid = json.loads((data_dir / STACK_NAME).read_text()).get("pid")
    except (OSError, ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) else None


def _try_lock(path: Path) -> IO[str] | None:
    """The lock file, locked by us; None when another process holds it."""
    handle = open(path, "a+")  # noqa: SIM115 - held for the stack's lifetime
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


@dataclass
class StackLock:
    """Held by `up` from before it starts anything until after it stopped everything."""

    data_dir: Path
    _handle: IO[str] | None = field(default=None, repr=False)

    def acquire(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        handle = _try_lock(self.data_dir / LOCK_NAME)
        if handle is None:
            pid = _holder_pid(self.data_dir)
            who = f" (pid {pid})" if pid else ""
            raise StackBusy(
                f"another `memory-worker up`{who} is running on {self.data_dir}; use that "
                "one (the CLI in this folder finds it), stop it with Ctrl-C in its terminal, "
                "or start this one on its own folder with --data-dir")
        self._handle = handle
        (self.data_dir / STACK_NAME).unlink(missing_ok=True)  # a killed `up`'s leftover

    def publish(self, urls: dict[str, str], **extra: Any) -> None:
        """Say where the running stack's services are, for the CLI of other terminals."""
        path = self.data_dir / STACK_NAME
        partial = path.with_suffix(".partial")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump({"pid": os.getpid(), **urls, **extra}, out)
        partial.replace(path)

    def release(self) -> None:
        if self._handle is None:
            return
        (self.data_dir / STACK_NAME).unlink(missing_ok=True)
        fcntl.flock(self._handle, fcntl.LOCK_UN)
        self._handle.close()
        self._handle = None


def running_stack(data_dir: Path) -> dict[str, Any] | None:
    """What the `up` running on this data directory published, or None when none runs."""
    path = data_dir / STACK_NAME
    if not path.exists():
        return None
    probe = _try_lock(data_dir / LOCK_NAME)
    if probe is not None:  # nobody holds it: the file was left by an `up` that was killed
        fcntl.flock(probe, fcntl.LOCK_UN)
        probe.close()
        return None
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def adopt_running_stack(data_dir: Path) -> dict[str, str]:
    """The URLs of the stack running on this data directory, put into this process's
    environment for the settings to read: only those the environment does not set already.
    Returns what was taken."""
    stack = running_stack(data_dir)
    if not stack:
        return {}
    taken: dict[str, str] = {}
    for name in ("DATABASE_URL", "REDIS_URL"):
        value = stack.get(name)
        if isinstance(value, str) and not os.environ.get(name) \
                and not os.environ.get(f"MEMORY_{name}"):
            os.environ[name] = value
            taken[name] = value
    return taken
