"""One write at a time, taken apart: where its enqueue -> result time goes.

    .venv/bin/python bench/write_timeline.py              # 120 writes, 2 pool processes
    .venv/bin/python bench/write_timeline.py --writes 300

Each write is the first of its run (as an agent's single fact), sent when the one before it
has its result, through a real prefork worker and Redis on the embedded stack. The client
notes when it began and ended its enqueue and when the result came; the worker, with
bench/timeline_probe.py loaded, notes when the pool process started the task, when the
write's own work began, when the pipeline wanted the vector and had it, when the write was
committed and when its result was stored (one clock: the same machine). Reported: the p50 of
each leg (markdown, also written to bench/results/write_timeline.md); the first 20 writes
warm up and are left out.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from write_path import (  # noqa: E402
    facts,
    pct,
    report,
    reset,
    start_services,
    start_warm_worker,
)

WARM_UP = 20
LEGS = (
    ("the client's enqueue (record script, publish)", "enqueue", "enqueued"),
    ("to the task's start in a pool process", "enqueued", "prerun"),
    ("to the write's own work", "prerun", "apply"),
    ("parse, BEGIN, run lock and state, admission (the vector computed beside)",
     "apply", "vector_wanted"),
    ("waiting for the vector", "vector_wanted", "vector"),
    ("scope lock, neighbourhood, detector, record, COMMIT", "vector", "applied"),
    ("to the result stored", "applied", "stored"),
    ("to the client's wait ending", "stored", "result"),
    ("enqueue -> result", "enqueue", "result"),
)


def read_marks(folder: Path) -> dict[str, dict[str, float]]:
    marks: dict[str, dict[str, float]] = defaultdict(dict)
    for path in folder.glob("*.marks"):
        for line in path.read_text().splitlines():
            task_id, name, at = line.split()
            marks[task_id].setdefault(name, float(at))
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=120)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    marks_dir = data_dir / "marks"
    marks_dir.mkdir()
    database_url, _redis_url, stack = start_services(data_dir)
    try:
        from db.migrate import migrate

        migrate(database_url)
        reset(database_url)
        env = {**os.environ, "MEMORY_BENCH_TIMELINE_DIR": str(marks_dir),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "bench"),
                                                           os.environ.get("PYTHONPATH")]))}
        worker, log = start_warm_worker(database_url, args.concurrency,
                                        data_dir / "timeline-worker.log",
                                        extra_args=("--include", "timeline_probe"), env=env)
        try:
            from worker.client import enqueue_memory_writes

            client: dict[str, dict[str, float]] = {}
            for i, text in enumerate(facts(args.writes, "timeline")):
                began = time.time()
                handle = enqueue_memory_writes({"run_id": f"timeline-{i}", "agent_id": "bench"},
                                               [{"note": text, "type": "Context"}])
                enqueued = time.time()
                handle.results(timeout=60)
                client[handle.task_ids[0]] = {"enqueue": began, "enqueued": enqueued,
                                              "result": time.time()}
        finally:
            worker.terminate()
            worker.wait(timeout=60)
            log.close()
        worker_marks = read_marks(marks_dir)
        timelines = [{**worker_marks.get(task_id, {}), **times}
                     for task_id, times in list(client.items())[WARM_UP:]]
        complete = [t for t in timelines if all(name in t for _, a, b in LEGS for name in (a, b))]
        if not complete:
            raise SystemExit("no write has every mark: was the probe loaded? see the worker log")
        lines = [f"{len(complete)} writes, one at a time, each the first of its run, "
                 f"{args.concurrency} pool processes.", "",
                 "| leg | p50 ms | p95 ms |", "|---|---|---|"]
        for label, start, end in LEGS:
            legs = [(t[end] - t[start]) * 1000 for t in complete]
            lines.append(f"| {label} | {pct(legs, 0.5):.2f} | {pct(legs, 0.95):.2f} |")
        report("\n".join(lines), "write_timeline.md")
    finally:
        stack.stop()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
