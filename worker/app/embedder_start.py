"""The embedder of a worker: checked before the worker takes any message, watched after.

At `worker_init` — in the worker's main process, after Celery has read its queues and before
it sets up logging, prints its banner, forks a pool or connects a consumer — the configured
embedder is checked (worker/embedding_check.py), whatever the pool and however the worker
was started (`memory-worker worker`, `celery -A worker.celery_app worker`):

- a configuration that can never embed prints one line to stderr (cause and fix) and exits
  with status 78 (EX_CONFIG: restarting will not help);
- an endpoint that is down lets the worker start with a warning; writes fail open;
- a prefork worker loads the local model here, once, and its children share it.

The outcome is the first entry of the worker's embedder state (worker/ops/embedder_state.py),
which readiness reads. While that state says failing, the `EmbedderWatch` step asks the
endpoint again every `MEMORY_EMBEDDING_RECHECK_S`, so readiness recovers without traffic.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time
from typing import Any

from celery import bootsteps, signals

log = logging.getLogger(__name__)

EXIT_CONFIG = 78

# Said once logging is set up (at worker_init it is not yet: a line would skip the format).
_deferred: list[tuple[int, str]] = []


def _is_prefork(worker: Any) -> bool:
    from celery.concurrency import get_implementation
    from celery.concurrency.prefork import TaskPool

    pool = get_implementation(getattr(worker, "pool_cls", None) or "prefork")
    return isinstance(pool, type) and issubclass(pool, TaskPool)


def _role(worker: Any) -> str:
    from worker.ops.health import worker_role

    queues = worker.app.amqp.queues
    return worker_role(list(queues.consume_from or queues))


def stop_for_configuration(detail: str) -> None:
    print(f"memory-worker: cannot start: {detail}", file=sys.stderr, flush=True)
    raise SystemExit(EXIT_CONFIG)


@signals.worker_init.connect
def check_embedder_at_start(sender: Any = None, **_: Any) -> None:
    from worker.embedding_check import check_embedder, local_runtime_detail, working_detail
    from worker.ops.embedder_state import (
        EmbedderStateRecorder,
        install_recorder,
        state_path_for_role,
    )
    from worker.runtime import get_runtime

    runtime = get_runtime()
    if runtime.embedder_override is not None:
        return  # a program that hands its worker an embedder answers for it
    settings = runtime.settings
    started = time.perf_counter()
    result = check_embedder(settings, infer_locally=not _is_prefork(sender))
    if result.outcome == "fatal":
        stop_for_configuration(result.detail)
    recorder = EmbedderStateRecorder(state_path_for_role(_role(sender)),
                                     worker_pid=os.getpid(),
                                     working_detail=working_detail(settings))
    install_recorder(recorder)  # before the fork: every pool process reports to it
    recorder.record(result.outcome == "ok", result.detail)
    if result.outcome == "ok":
        runs_on = local_runtime_detail(settings)
        _deferred.append((logging.INFO, f"embedder ready ({result.detail}) in "
                                        f"{time.perf_counter() - started:.1f} s"
                                        + (f", on {runs_on}" if runs_on else "")))
    else:
        _deferred.append((logging.WARNING, f"embedder not available at start: "
                                           f"{result.detail}"))


@signals.celeryd_after_setup.connect
def _say_what_the_check_found(**_: Any) -> None:
    while _deferred:
        level, message = _deferred.pop(0)
        log.log(level, message)


def recheck_endpoint() -> None:
    """Ask the endpoint again and record the answer (worker/ops/embedder_state.py)."""
    from worker.embedding_check import check_endpoint
    from worker.ops.embedder_state import report_embedding
    from worker.runtime import get_runtime

    result = check_endpoint(get_runtime().settings)
    report_embedding(result.outcome == "ok", result.detail)
    if result.outcome == "ok":
        log.info("embedder recovered (%s)", result.detail)


class EmbedderWatch(bootsteps.StartStopStep):
    """While the recorded state says failing, re-checks the endpoint (openai backend: the
    local model cannot run in a prefork parent, and recovers with its next embedding);
    removes the state file when the worker stops."""

    # After the pool: its first processes are forked before this thread exists.
    requires = ("celery.worker.components:Pool",)

    def __init__(self, w: Any, **kwargs: Any) -> None:
        super().__init__(w, **kwargs)
        self._stop = threading.Event()

    def start(self, w: Any) -> None:
        from worker.ops.embedder_state import active_recorder
        from worker.runtime import get_runtime

        recorder = active_recorder()
        if recorder is None:
            return
        atexit.register(recorder.remove)
        settings = get_runtime().settings
        if settings.embedding_backend == "openai":
            threading.Thread(target=self._watch, args=(settings.embedding_recheck_s,),
                             name="memory-embedder-watch", daemon=True).start()

    def _watch(self, every_s: float) -> None:
        from worker.ops.embedder_state import active_recorder

        while not self._stop.wait(every_s):
            recorder = active_recorder()
            state = recorder.current() if recorder is not None else None
            if state is not None and not state.ok:
                try:
                    recheck_endpoint()
                except Exception:  # the watch must outlive anything the endpoint does
                    log.warning("embedder re-check failed", exc_info=True)

    def stop(self, w: Any) -> None:
        from worker.ops.embedder_state import active_recorder, install_recorder

        self._stop.set()
        recorder = active_recorder()
        if recorder is not None:
            recorder.remove()
            install_recorder(None)  # a program that ran a worker in-process goes on without
