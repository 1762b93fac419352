"""Loaded into a benchmark's write worker (`celery worker --include timeline_probe`, with
bench/ on PYTHONPATH) by bench/write_timeline.py: marks when each write task reaches the
points of its way through the worker, one line per mark, in a file per pool process under
`$MEMORY_BENCH_TIMELINE_DIR`. Never part of a deployed worker.

Marks, in order: `prerun` (the pool process starts the task), `apply` (the write's own work
starts), `vector_wanted` (the pipeline reaches the step that needs the vector), `vector`
(the vector is there), `applied` (committed and recorded), `stored` (the result is in the
result store, where the client's wait ends).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, TextIO

from celery import signals

_log: TextIO | None = None
_task_id: str | None = None


def _mark(name: str) -> None:
    if _log is not None and _task_id is not None:
        _log.write(f"{_task_id} {name} {time.time():.6f}\n")


@signals.task_prerun.connect(weak=False)
def _prerun(task_id: str | None = None, **_: Any) -> None:
    global _task_id
    _task_id = task_id
    _mark("prerun")


@signals.worker_process_init.connect(weak=False)
def _instrument(**_: Any) -> None:
    """In each pool process: open its file, wrap the functions the marks sit in."""
    global _log
    folder = os.environ.get("MEMORY_BENCH_TIMELINE_DIR")
    if not folder:
        return
    _log = (Path(folder) / f"{os.getpid()}.marks").open("a", buffering=1)

    import celery.backends.redis as redis_backend

    import worker.app.tasks as tasks
    import worker.writes.pipeline as pipeline

    apply = tasks.apply_memory_write

    def marked_apply(*args: Any, **kwargs: Any) -> Any:
        _mark("apply")
        outcome = apply(*args, **kwargs)
        _mark("applied")
        return outcome

    tasks.apply_memory_write = marked_apply  # type: ignore[assignment]

    look = pipeline.look_around_scope

    def marked_look(attempt: Any) -> Any:
        _mark("vector_wanted")
        attempt.embedding.vector  # noqa: B018 - waits for it, as the guard would
        _mark("vector")
        return look(attempt)

    guards = tuple(marked_look if g is look else g for g in pipeline.PIPELINE)
    pipeline.run_guards.__defaults__ = (guards,)

    store = redis_backend.RedisBackend._set_with_state

    def marked_store(self: Any, key: Any, value: Any, state: Any) -> Any:
        stored = store(self, key, value, state)
        _mark("stored")
        return stored

    redis_backend.RedisBackend._set_with_state = marked_store  # type: ignore[method-assign]
