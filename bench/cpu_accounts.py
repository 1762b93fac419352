"""CPU time by process group during a benchmark, read from /proc (Linux).

A throughput target on a fixed number of cores is a CPU budget: 300 writes/s on two cores
leaves 6.7 ms of CPU per write for everything the machine does for it — the client, Redis,
the worker, Postgres. `snapshot()` before and after a run, `spent()` groups the difference:

    worker pool   the prefork pool processes (children of the worker's main process)
    worker main   Celery's consumer: it receives, acks, and hands messages to the pool
    postgres      every postgres process (backends, WAL writer, checkpointer, ...)
    redis         redis-server
    client        this benchmark's own process (the enqueue, the polling)
    other         the rest of the machine (a noisy neighbour shows up here)

A process that starts and ends between the two snapshots is not seen; the groups above live
through a run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    cmdline: str
    cpu_s: float


def _read(pid: int) -> Proc | None:
    base = Path("/proc") / str(pid)
    try:
        stat = (base / "stat").read_text()
        cmdline = (base / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    fields = stat[stat.rindex(")") + 2:].split()
    ppid, utime, stime = int(fields[1]), int(fields[11]), int(fields[12])
    return Proc(pid, ppid, cmdline or stat[stat.index("(") + 1:stat.rindex(")")],
                (utime + stime) / _TICK)


def snapshot() -> dict[int, Proc]:
    procs = (_read(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit())
    return {p.pid: p for p in procs if p is not None}


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (all cores, /proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / _TICK


def _group(proc: Proc, worker_pid: int) -> str:
    if proc.pid == os.getpid():
        return "client"
    if proc.pid == worker_pid:
        return "worker main"
    if proc.ppid == worker_pid:
        return "worker pool"
    if "postgres" in proc.cmdline.split(" ")[0] or proc.cmdline.startswith("postgres"):
        return "postgres"
    if "redis-server" in proc.cmdline:
        return "redis"
    return "other"


GROUPS = ("worker pool", "worker main", "postgres", "redis", "client", "other")


def spent(before: dict[int, Proc], after: dict[int, Proc], worker_pid: int) -> dict[str, float]:
    """CPU seconds each group spent between the snapshots."""
    totals = dict.fromkeys(GROUPS, 0.0)
    for pid, proc in after.items():
        earlier = before.get(pid)
        used = proc.cpu_s - (earlier.cpu_s if earlier is not None else 0.0)
        totals[_group(proc, worker_pid)] += max(used, 0.0)
    return totals
