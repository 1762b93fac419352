"""Prometheus metrics of the workers (documented in the README, "Metrics").

With `MEMORY_METRICS_PORT` set, a worker's main process serves `/metrics` on that port. Under
the prefork pool every child process writes its samples to files in a per-worker folder
(prometheus_client's multiprocess mode) and the main process serves their sum; that folder
is chosen and emptied at worker start, before any child exists. `prometheus_client` is imported
only when first needed, after that choice, because it picks its storage at import (and is told
to choose again if something imported it earlier).

The gauge of the oldest provisional note is read from Postgres at scrape time.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_PHASE_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900)


def prepare_multiprocess_dir(base: Path, name: str) -> Path:
    """A fresh folder for this worker's samples (stale files of a previous run would be
    summed into the new run's counters)."""
    folder = base / "metrics" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ[MULTIPROC_ENV] = str(folder)
    values = sys.modules.get("prometheus_client.values")
    if values is not None:
        # Already imported (Celery's CLI loads Flower's command, which imports it) and so
        # set up for one process: choose again, before any metric of ours exists.
        values.ValueClass = values.get_value_class()  # type: ignore[attr-defined]
    return folder


@cache
def series() -> SimpleNamespace:
    from prometheus_client import Counter, Histogram

    return SimpleNamespace(
        writes=Counter("memory_writes", "Applied memory writes by disposition.",
                       ["disposition"]),
        replays=Counter("memory_write_replays",
                        "Redelivered writes answered from the write log (not applied again)."),
        write_seconds=Histogram("memory_write_duration_seconds",
                                "Time to apply one write (guards and commit).",
                                buckets=_LATENCY_BUCKETS),
        sequence_waits=Counter("memory_write_sequence_waits",
                               "Writes put back to wait for an earlier sequence number."),
        sequence_gaps=Counter("memory_write_sequence_gaps",
                              "Sequence gaps declared after the gap timeout and skipped."),
        writes_redelivered=Counter("memory_writes_redelivered",
                                   "Recorded writes published again by the redelivery pass "
                                   "(the broker lost them, or they were slow)."),
        context_seconds=Histogram("memory_context_build_duration_seconds",
                                  "Time to build one memory context (embedding included).",
                                  buckets=_LATENCY_BUCKETS),
        task_seconds=Histogram("memory_task_duration_seconds",
                               "Task run time by task name (a chain visit's head: the whole "
                               "visit; a carried write: its own).",
                               ["task"], buckets=_PHASE_BUCKETS),
        task_failures=Counter("memory_task_failures", "Tasks that raised, by task name.",
                              ["task"]),
        cycles=Counter("memory_manager_cycles", "Memory Manager cycles by outcome.",
                       ["status"]),
        phase_seconds=Histogram("memory_manager_phase_duration_seconds",
                                "Duration of each Memory Manager phase.", ["phase"],
                                buckets=_PHASE_BUCKETS),
        phase_counts=Counter("memory_manager_phase_items",
                             "What each phase did (hardened, archived, accepted, …).",
                             ["phase", "outcome"]),
        phase_errors=Counter("memory_manager_phase_errors", "Phases that failed.", ["phase"]),
        model_calls=Counter("memory_manager_model_calls", "Model judge calls."),
        model_tokens=Counter("memory_manager_model_tokens", "Model judge tokens."),
    )


def observe_write(result: dict[str, Any]) -> None:
    s = series()
    if result.get("replayed"):
        s.replays.inc()
        return
    s.writes.labels(disposition=str(result.get("disposition"))).inc()
    duration = result.get("duration_ms")
    if isinstance(duration, int | float):
        s.write_seconds.observe(duration / 1000)


def observe_cycle(report: dict[str, Any]) -> None:
    s = series()
    for phase in report.get("phases") or []:
        name = str(phase.get("phase"))
        s.phase_seconds.labels(phase=name).observe(float(phase.get("duration_ms", 0)) / 1000)
        if phase.get("error"):
            s.phase_errors.labels(phase=name).inc()
        for outcome, value in (phase.get("counts") or {}).items():
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                s.phase_counts.labels(phase=name, outcome=str(outcome)).inc(value)
    s.model_calls.inc(int(report.get("model_calls") or 0))
    s.model_tokens.inc(int(report.get("model_tokens") or 0))
    # Counted last: this runs after the caller already has the result (task_postrun), so a
    # scrape that sees the cycle must also see its phases.
    s.cycles.labels(status=str(report.get("status"))).inc()


class DatabaseGauges:
    """Read at scrape time: the age of the oldest provisional note, notes by status."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        from db.connector import get_database
        from db.queries.stats import note_gauges

        try:
            with get_database(self.database_url).read() as conn:
                oldest_age, by_status = note_gauges(conn)
        except Exception:
            log.warning("metrics: database gauges unavailable", exc_info=True)
            return
        age = GaugeMetricFamily("memory_oldest_provisional_age_seconds",
                                "Age of the oldest agent-written provisional note (0: none).")
        age.add_metric([], oldest_age)
        yield age
        notes = GaugeMetricFamily("memory_notes", "Notes by status.", labels=["status"])
        for status, count in sorted(by_status.items()):
            notes.add_metric([status], count)
        yield notes


def serve(port: int, address: str, database_url: str | None) -> None:
    """Serve /metrics from this process: the multiprocess sum when children write samples,
    else this process's own registry; plus the database gauges."""
    from prometheus_client import REGISTRY as DEFAULT_REGISTRY
    from prometheus_client import CollectorRegistry, start_http_server

    registry: Any = DEFAULT_REGISTRY
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    if database_url:
        registry.register(DatabaseGauges(database_url))
    start_http_server(port, addr=address, registry=registry)
    log.info("metrics on http://%s:%d/metrics", address, port)


def child_exited(pid: int) -> None:
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
