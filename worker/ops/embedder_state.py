"""Whether a worker can embed right now, recorded where a readiness probe can read it cheaply.

A worker writes its embedder's state — working, or failing since when and why — to a small
JSON file beside its liveness heartbeat (`<role>.embedder` next to `<role>.heartbeat`, or
`X.embedder` beside `MEMORY_HEARTBEAT_FILE=X.heartbeat`). The start-up check writes it first;
then every call that reaches the embedding backend, in any process of the worker, reports its
outcome, and the file is rewritten only when the state flips (a failure while already failing
keeps the first failure's time and reason). `memory-worker health ready` reads the files: a
probe never loads torch or calls the endpoint itself (Kubernetes runs it every few seconds).

Like the heartbeat module, this imports nothing heavy (no Celery, torch, numpy, pydantic).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from worker.ops.health import (
    HEARTBEAT_SUFFIX,
    configured_heartbeat_file,
    heartbeat_dir,
    heartbeat_path,
)

STATE_SUFFIX = ".embedder"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbedderState:
    ok: bool
    since: float  # when the embedder entered this state (epoch seconds)
    detail: str  # what embeds ("openai text-embedding-3-small"), or why it cannot
    worker_pid: int  # the worker's main process: the record is void once it is gone
    recorded_at: float


def state_path(heartbeat: Path) -> Path:
    """The state file beside a heartbeat file."""
    return heartbeat.with_name(heartbeat.name.removesuffix(HEARTBEAT_SUFFIX) + STATE_SUFFIX)


def state_path_for_role(role: str) -> Path:
    return state_path(heartbeat_path(role))


def write_state(path: Path, state: EmbedderState) -> None:
    """Replace the file atomically: a probe never reads a half-written one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(state)) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_state(path: Path) -> EmbedderState | None:
    """The recorded state, or None when there is none (or it cannot be read)."""
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
        return EmbedderState(ok=bool(content["ok"]), since=float(content["since"]),
                             detail=str(content["detail"]),
                             worker_pid=int(content["worker_pid"]),
                             recorded_at=float(content["recorded_at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def process_running(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process, but it exists
        return True
    return True


def recorded_states() -> list[tuple[Path, EmbedderState]]:
    """The states of the workers running here: beside `MEMORY_HEARTBEAT_FILE`, else every
    state file in the data dir's health folder. A file whose worker has exited (killed
    before it could remove it) is ignored."""
    configured = configured_heartbeat_file()
    if configured is not None:
        paths = [state_path(configured)]
    else:
        folder = heartbeat_dir()
        paths = sorted(folder.glob(f"*{STATE_SUFFIX}")) if folder.is_dir() else []
    found = []
    for path in paths:
        state = read_state(path)
        if state is not None and process_running(state.worker_pid):
            found.append((path, state))
    return found


def describe(path: Path, state: EmbedderState, now: float) -> str:
    who = f"{path.name.removesuffix(STATE_SUFFIX)} (pid {state.worker_pid})"
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(state.since))
    since = f"since {when}, {max(0.0, now - state.since):.0f} s"
    if state.ok:
        return f"{who}: embeds with {state.detail} ({since})"
    return f"{who}: cannot embed ({since}): {state.detail}"


class EmbedderStateRecorder:
    """Records one worker's embedder state; shared by its main process and pool children."""

    def __init__(self, path: Path, *, worker_pid: int, working_detail: str,
                 clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.worker_pid = worker_pid
        self.working_detail = working_detail
        self.clock = clock
        self._warned = False

    def record(self, ok: bool, failure: str | None = None) -> None:
        """Write the state if it flips (one small read otherwise); never raises."""
        try:
            current = read_state(self.path)
            if current is not None and current.worker_pid == self.worker_pid and current.ok == ok:
                return
            now = self.clock()
            detail = self.working_detail if ok else (failure or "embedding failed")
            write_state(self.path, EmbedderState(ok, now, detail, self.worker_pid, now))
        except OSError as exc:
            if not self._warned:  # a full or read-only disk must never fail an embedding
                self._warned = True
                log.warning("cannot record the embedder state in %s: %s", self.path, exc)

    def current(self) -> EmbedderState | None:
        state = read_state(self.path)
        return state if state is not None and state.worker_pid == self.worker_pid else None

    def remove(self) -> None:
        """Only our own: a successor worker may already have taken the file over."""
        if self.current() is not None:
            self.path.unlink(missing_ok=True)


_recorder: EmbedderStateRecorder | None = None


def install_recorder(recorder: EmbedderStateRecorder | None) -> None:
    """Set in a worker's main process before it forks: its pool children inherit it."""
    global _recorder
    _recorder = recorder


def active_recorder() -> EmbedderStateRecorder | None:
    return _recorder


def report_embedding(ok: bool, failure: str | None = None) -> None:
    """How a call to the embedding backend went; a no-op outside a worker (clients, CLI)."""
    if _recorder is not None:
        _recorder.record(ok, failure)
