"""Cross-cutting observation of memory tasks, wired through Celery signals so the tasks and
the domain modules stay free of it: metrics (worker/ops/metrics.py), one structured log line per
task (worker/ops/logs.py), and the metrics endpoint of a worker's main process."""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import signals

from worker.app import task_names
from worker.ops import logs, metrics

log = logging.getLogger(__name__)

_started: dict[str, float] = {}


def _name(sender: Any) -> str:
    return str(getattr(sender, "name", sender))


@signals.worker_init.connect
def _start_metrics(sender: Any = None, **_: Any) -> None:
    """Main worker process, before the pool forks: choose the samples folder, serve."""
    from worker.settings import get_settings

    settings = get_settings()
    if not settings.metrics_port:
        return
    hostname = str(getattr(sender, "hostname", "") or "worker").replace("@", "-")
    metrics.prepare_multiprocess_dir(settings.data_dir, hostname)
    try:
        metrics.serve(settings.metrics_port, settings.metrics_address, settings.database_url)
    except OSError:
        log.exception("metrics endpoint not started (port %s in use?)", settings.metrics_port)


@signals.worker_process_shutdown.connect
def _child_exited(pid: int | None = None, **_: Any) -> None:
    if pid is not None:
        metrics.child_exited(pid)


# Celery configures its handlers; we only give them our format.
@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _format_logs(logger: logging.Logger | None = None, **_: Any) -> None:
    from worker.settings import get_settings

    if logger is not None:
        logs.apply_format(logger, get_settings().log_format)


@signals.task_prerun.connect
def _task_started(task_id: str | None = None, **_: Any) -> None:
    if task_id:
        _started[task_id] = time.monotonic()


@signals.task_postrun.connect
def _task_finished(sender: Any = None, task_id: str | None = None, retval: Any = None,
                   state: str | None = None, **_: Any) -> None:
    name = _name(sender)
    if not name.startswith("memory."):
        return
    began = _started.pop(task_id or "", None)
    duration = time.monotonic() - began if began is not None else 0.0
    if state != "SUCCESS":
        return  # retries and failures are counted by their own signals
    observe_task(name, task_id, retval, duration)


def observe_task(name: str, task_id: str | None, retval: Any, duration: float) -> None:
    """A finished memory task's metrics and log line: from `task_postrun`, and for each write
    a chain visit carries (worker/app/chain_visit.py), which has no task run of its own."""
    try:
        series = metrics.series()
        series.task_seconds.labels(task=name).observe(duration)
        if name == task_names.WRITE and isinstance(retval, dict):
            metrics.observe_write(retval)
        elif name == task_names.MANAGER_CYCLE and isinstance(retval, dict):
            metrics.observe_cycle(retval)
        logs.log_task_result(task_id, name, retval, duration)
    except Exception:
        log.exception("task telemetry failed")  # never fail a task for its telemetry


@signals.task_retry.connect
def _task_retried(sender: Any = None, **_: Any) -> None:
    if _name(sender) == task_names.WRITE:
        metrics.series().sequence_waits.inc()


@signals.task_failure.connect
def _task_failed(sender: Any = None, task_id: str | None = None, **_: Any) -> None:
    name = _name(sender)
    if name.startswith("memory."):
        _started.pop(task_id or "", None)
        metrics.series().task_failures.labels(task=name).inc()
