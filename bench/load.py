"""Load benchmark: many runs' chains queued at once, and where the time goes.

    .venv/bin/python bench/load.py                        # 300 runs x 10 writes, 2 processes
    .venv/bin/python bench/load.py --runs 100 --concurrency 3

All chains are enqueued at once (as 300 agent runs ending their turns together would), through
a real prefork worker and Redis, on the embedded stack. Reported (markdown, also written to
bench/results/load.md):

- throughput, and enqueue -> commit latency p50 / p95 / p99 per write;
- where a write's time goes: its own work in the worker (`write_log.duration_ms`), the wait
  behind the other chains in the queue (a chain's next write is published when the one before
  it commits, so it joins the back of the queue: each "hop" waits for everything queued in
  front of it), and sequence waits (a write that arrived before its predecessor committed,
  counted from the worker's retry log lines);
- the same for the first write of each chain (no hop) against the later ones.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cpu_accounts  # noqa: E402
from write_path import (  # noqa: E402
    facts,
    pct,
    reset,
    start_services,
    start_warm_worker,
    wait_for_commits,
)


def run_load(database_url: str, runs: int, per_run: int, concurrency: int,
             log_dir: Path) -> dict[str, object]:
    from worker.client import enqueue_memory_writes

    log_path = log_dir / "load-worker.log"
    worker, log = start_warm_worker(database_url, concurrency, log_path, level="INFO")
    try:
        retries_before = log_path.read_text(errors="replace").count("Retry in")

        texts = facts(runs * per_run, "load")
        sent_at: dict[tuple[str, int], float] = {}
        position: dict[tuple[str, int], int] = {}
        procs_before, busy_before = cpu_accounts.snapshot(), cpu_accounts.machine_busy_s()
        started = time.time()
        for r in range(runs):
            run = {"run_id": f"load-{r}", "agent_id": "bench", "user_id": f"u{r % 50}",
                   "company_id": "c1"}
            handle = enqueue_memory_writes(run, [{"note": texts[r * per_run + s],
                                                  "type": "Context"} for s in range(per_run)])
            now = time.time()
            for index, seq in enumerate(handle.seqs):
                sent_at[(run["run_id"], seq)] = now
                position[(run["run_id"], seq)] = index
        enqueue_s = time.time() - started
        total = runs * per_run
        applied = wait_for_commits(database_url, total, started, limit_s=1800)
        cpu = cpu_accounts.spent(procs_before, cpu_accounts.snapshot(), worker.pid)
        cpu["machine"] = cpu_accounts.machine_busy_s() - busy_before
        retries = log_path.read_text(errors="replace").count("Retry in") - retries_before
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        log.close()

    commit_at = {(run_id, seq): float(at) for run_id, seq, at, _ in applied}
    latency = {key: (at - sent_at[key]) * 1000 for key, at in commit_at.items()}
    work = [float(ms) for _, _, _, ms in applied]
    hops: list[float] = []  # commit of a write -> commit of the next one of its chain
    spans: list[float] = []  # a chain's first commit -> its last (what issue 24 bounds)
    by_run: dict[str, list[float]] = defaultdict(list)
    for (run_id, _seq), at in commit_at.items():
        by_run[run_id].append(at)
    for times in by_run.values():
        hops += [(b - a) * 1000 for a, b in itertools.pairwise(sorted(times))]
        spans.append((max(times) - min(times)) * 1000)
    heads = [v for k, v in latency.items() if position[k] == 0]
    later = [v for k, v in latency.items() if position[k] > 0]
    elapsed = max(commit_at.values()) - started
    return {"total": total, "elapsed": elapsed, "enqueue_s": enqueue_s,
            "latency": list(latency.values()), "heads": heads, "later": later,
            "work": work, "hops": hops, "spans": spans, "retries": retries, "cpu": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--per-run", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memory-load-"))
    database_url, _redis_url, stack = start_services(data_dir)
    try:
        from db.migrate import migrate

        migrate(database_url)
        reset(database_url)
        result = run_load(database_url, args.runs, args.per_run, args.concurrency, data_dir)
    finally:
        stack.stop()  # type: ignore[attr-defined]

    def cells(values: object) -> str:
        v = list(values)  # type: ignore[call-overload]
        return (f"{pct(v, 0.5):.0f} | {pct(v, 0.95):.0f} | {pct(v, 0.99):.0f} | "
                f"{statistics.mean(v):.0f}")

    total, elapsed = result["total"], result["elapsed"]
    lines = [
        f"{total} writes, {args.runs} runs (chains of {args.per_run}) enqueued at once in "
        f"{result['enqueue_s']:.1f} s, {args.concurrency} worker processes: "
        f"**{total / elapsed:.1f} writes/s** ({elapsed:.1f} s), "  # type: ignore[operator]
        f"{result['retries']} sequence-wait retries.",
        "",
        "| ms | p50 | p95 | p99 | mean |",
        "|---|---|---|---|---|",
        f"| enqueue -> commit, every write | {cells(result['latency'])} |",
        f"| enqueue -> commit, first write of a chain | {cells(result['heads'])} |",
        f"| enqueue -> commit, later writes | {cells(result['later'])} |",
        f"| one write's work in the worker (duration_ms) | {cells(result['work'])} |",
        f"| commit -> next commit in the same chain (a hop) | {cells(result['hops'])} |",
        f"| a chain's first commit -> its last commit | {cells(result['spans'])} |",
    ]
    cpu: dict[str, float] = result["cpu"]  # type: ignore[assignment]
    lines += [
        "",
        f"CPU time from the first enqueue to the last commit, by process group "
        f"(bench/cpu_accounts.py); 300 writes/s on 2 cores leaves {2000 / 300:.2f} ms per write "
        "for all of them:",
        "",
        "| group | CPU s | ms per write | share of the machine's busy time |",
        "|---|---|---|---|",
        *(f"| {group} | {cpu[group]:.1f} | {cpu[group] * 1000 / total:.2f} | "  # type: ignore[operator]
          f"{cpu[group] / cpu['machine']:.0%} |" for group in cpu_accounts.GROUPS),
        f"| the machine, all cores (/proc/stat) | {cpu['machine']:.1f} | "
        f"{cpu['machine'] * 1000 / total:.2f} | {cpu['machine'] / elapsed:.2f} "  # type: ignore[operator]
        "cores busy on average |",
    ]
    text = "\n".join(lines)
    print(text)
    out = ROOT / "bench" / "results" / "load.md"
    out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
