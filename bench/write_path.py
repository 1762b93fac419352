"""Write-path benchmark: guard pipeline in-process, and end to end through Celery.

    .venv/bin/python bench/write_path.py            # embedded Postgres + Redis
    DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/write_path.py

Prints markdown tables (and writes them to bench/results/write_path.md):
  1. a bare psycopg INSERT of one row with its vector (the floor on this machine);
  2. per-write latency of `apply_memory_write` in-process, with and without the embedding;
  3. enqueue -> committed latency and throughput for 1,000 writes over 100 runs through a
     real Celery worker (prefork, 2 processes) and Redis;
  4. statements and round trips to Postgres per write, counted on the client (`WireCounter`).

    --in-process-only        skip the Celery part (3.)
    --profile FILE           also cProfile the ex-embedding pass into FILE (pstats)
"""

from __future__ import annotations

import argparse
import cProfile
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MEMORY_EMBEDDING_THREADS", "1")

import numpy as np  # noqa: E402
import psycopg  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

SUBJECTS = ["User", "The user", "Our customer", "The account owner", "The team lead"]
ATTRIBUTES = [
    "prefers {} charts", "lives in {}", "drinks {} every morning", "is learning {}",
    "travels to {} each spring", "uses {} for note taking", "supports {} in football",
    "wants invoices in {}", "reads books about {}", "keeps a {} on the desk",
]
VALUES = ["bar", "Lisbon", "green tea", "Japanese", "Tokyo", "Obsidian", "Ajax", "EUR",
          "astronomy", "cactus", "pie", "Berlin", "espresso", "Rust", "Lima", "Notion",
          "Celtic", "USD", "sailing", "bonsai"]


class WireCounter:
    """Statements and round trips of every psycopg connection of this process.

    A statement is one `Cursor.execute`; a round trip is one wait for the server's answer:
    every `Connection.wait` outside pipeline mode (a statement, a COMMIT or ROLLBACK that has
    a transaction to end), and inside one, each sync, fetch or exit (the statements queued
    before it travel together); plus the BEGIN psycopg sends, and waits for, before the first
    statement of a transaction."""

    _PIPELINE_WAITS = frozenset({"_sync_gen", "_exit_gen", "_fetch_gen"})

    def __init__(self) -> None:
        self.statements = 0
        self.round_trips = 0
        self.installed = False
        # This process's CPU time per write of the ex-embedding pass (ms): the client's work,
        # less sensitive than wall time to a busy machine's waits.
        self.cpu_ms = 0.0

    def install(self) -> None:
        if self.installed:
            return
        counter = self
        wait, execute = psycopg.Connection.wait, psycopg.Cursor.execute

        def counting_wait(conn: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
            name = getattr(getattr(gen, "gi_code", None), "co_name", "")
            idle = conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
            if name in ("_commit_gen", "_rollback_gen"):
                counter.round_trips += 0 if idle else 1  # nothing is sent outside a transaction
            elif conn._pipeline is None or name in counter._PIPELINE_WAITS:
                counter.round_trips += 1
            if name.startswith("_execute") and not conn.autocommit and idle:
                counter.round_trips += 1  # the BEGIN psycopg sends first, and waits for
            return wait(conn, gen, *args, **kwargs)

        def counting_execute(cursor: Any, *args: Any, **kwargs: Any) -> Any:
            counter.statements += 1
            return execute(cursor, *args, **kwargs)

        psycopg.Connection.wait = counting_wait  # type: ignore[method-assign]
        psycopg.Cursor.execute = counting_execute  # type: ignore[method-assign]
        self.installed = True

    def snapshot(self) -> tuple[int, int]:
        return self.statements, self.round_trips


WIRE = WireCounter()


def facts(count: int, salt: str) -> list[str]:
    out = []
    for i in range(count):
        subject = SUBJECTS[i % len(SUBJECTS)]
        attribute = ATTRIBUTES[(i // len(SUBJECTS)) % len(ATTRIBUTES)]
        value = VALUES[(i * 7 + len(salt)) % len(VALUES)]
        out.append(f"{subject} {attribute.format(value)} ({salt}-{i}).")
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def row(label: str, values: list[float], extra: str = "") -> str:
    return (f"| {label} | {len(values)} | {pct(values, 0.5):.2f} | {pct(values, 0.95):.2f} | "
            f"{statistics.fmean(values):.2f} | {extra} |")


def report(table: str, name: str) -> None:
    """Print a benchmark's table and keep it in bench/results/<name>."""
    print(table)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / name).write_text(table + "\n")


def start_services(data_dir: Path) -> tuple[str, str, object]:
    from worker.local.embedded import EmbeddedStack

    stack = EmbeddedStack(data_dir)
    env = stack.start(need_postgres=not os.environ.get("DATABASE_URL"),
                      need_redis=not os.environ.get("REDIS_URL"))
    os.environ.update(env)
    return os.environ["DATABASE_URL"], os.environ["REDIS_URL"], stack


def reset(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("TRUNCATE trace_events, write_log, runs, notes, agents CASCADE")


def bare_insert(database_url: str, n: int) -> tuple[list[float], tuple[float, float]]:
    """The floor: one row with its vector per transaction. Also its statements and round trips
    per row."""
    vectors = np.random.default_rng(1).standard_normal((n, 384)).astype(np.float32)
    timings = []
    with psycopg.connect(database_url) as conn:
        register_vector(conn)
        before = WIRE.snapshot()
        for i in range(n):
            started = time.perf_counter()
            conn.execute(
                "INSERT INTO notes (id, agent_id, type, note, content_hash, status, embedding, "
                "embedding_model) VALUES (%s, 'bench', 'Context', %s, %s, 'Archived', %s, 'x')",
                [uuid.uuid4(), f"bare {i}", f"h{i}", vectors[i]],
            )
            conn.commit()
            timings.append((time.perf_counter() - started) * 1000)
        after = WIRE.snapshot()
    return timings, per_write(before, after, n)


def per_write(before: tuple[int, int], after: tuple[int, int], n: int) -> tuple[float, float]:
    return (after[0] - before[0]) / n, (after[1] - before[1]) / n


def in_process(database_url: str, runs: int, per_run: int, profile: Path | None = None,
               ) -> tuple[list[float], list[float], tuple[float, float]]:
    """Per-write latency with and without the embedding, and the statements and round trips
    per write of the ex-embedding pass."""
    from db.connector import get_database
    from worker.embeddings import CachedEmbedder, get_embedder
    from worker.settings import get_settings
    from worker.writes.apply import WriteDeps, WriteResult, apply_memory_write

    settings = get_settings()
    model = get_embedder(settings)
    inner = model.inner if isinstance(model, CachedEmbedder) else model
    db = get_database(database_url)

    def play(embedder: Any, salt: str, profiler: cProfile.Profile | None = None) -> list[float]:
        deps = WriteDeps(db=db, settings=settings, embedder=embedder)
        texts = facts(runs * per_run, salt)
        timings = []
        for r in range(runs):
            run = {"run_id": f"{salt}-{r}", "agent_id": "bench", "user_id": f"u{r % 20}",
                   "company_id": "c1"}
            for s in range(per_run):
                text = texts[r * per_run + s]
                if profiler is not None:
                    profiler.enable()
                started = time.perf_counter()
                result = apply_memory_write(deps, run, {"note": text, "type": "Context"}, s + 1)
                timings.append((time.perf_counter() - started) * 1000)
                if profiler is not None:
                    profiler.disable()
                assert isinstance(result, WriteResult) and result.disposition != "error", result
        return timings

    play(CachedEmbedder(inner, 100_000), "warmup")  # plans, pools, model
    with_embedding = play(inner, "cold")
    # Ex-embedding: the same pipeline with every vector already computed (batched up front).
    warm = CachedEmbedder(inner, 100_000)
    warm.embed(facts(runs * per_run, "warm"))
    before, cpu = WIRE.snapshot(), time.process_time()
    ex_embedding = play(warm, "warm")
    WIRE.cpu_ms = (time.process_time() - cpu) * 1000 / len(ex_embedding)
    wire = per_write(before, WIRE.snapshot(), len(ex_embedding))
    if profile is not None:
        warm.embed(facts(runs * per_run, "profiled"))
        profiler = cProfile.Profile()
        play(warm, "profiled", profiler)
        profiler.dump_stats(str(profile))
    return with_embedding, ex_embedding, wire


def start_warm_worker(database_url: str, concurrency: int, log_path: Path,
                      level: str = "WARNING", extra_args: tuple[str, ...] = (),
                      env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], Any]:
    """A prefork write worker as its own process, every pool process warmed (plans, pools),
    the tables emptied again. Returns the process and its open log file."""
    from worker.client import enqueue_memory_writes

    log = open(log_path, "wb")  # noqa: SIM115 - closed by the caller with the worker
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "worker.celery_app:app", "worker", "-Q",
         "memory.writes", "-c", str(concurrency), "-l", level, "--without-gossip",
         "--without-mingle", *extra_args], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True, env=env)
    from worker.celery_app import app

    deadline = time.monotonic() + 120
    while not app.control.ping(timeout=1.0):
        if time.monotonic() > deadline:
            worker.terminate()
            raise RuntimeError("worker did not start")
    warm = [enqueue_memory_writes({"run_id": f"warm-{i}", "agent_id": "bench"},
                                  [{"note": f"warm-up fact {i}", "type": "Context"}])
            for i in range(concurrency * 4)]
    for item in warm:
        item.results(timeout=120)
    reset(database_url)
    return worker, log


def wait_for_commits(database_url: str, total: int, started: float, *,
                     limit_s: float) -> list[tuple[Any, ...]]:
    """Wait until `total` writes are in the write log; then (run_id, seq, commit epoch,
    duration_ms) of each."""
    said = time.time()
    while True:
        with psycopg.connect(database_url) as conn:
            done = conn.execute("SELECT count(*) FROM write_log").fetchone()[0]
        if done >= total:
            break
        if time.time() - started > limit_s:
            raise RuntimeError(f"only {done}/{total} writes committed")
        if time.time() - said >= 5:  # a loaded run takes minutes: say how far it got
            said = time.time()
            print(f"  {done}/{total} writes committed ({said - started:.0f} s)",
                  file=sys.stderr, flush=True)
        time.sleep(0.05)
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT run_id, seq, extract(epoch FROM applied_at), duration_ms "
                            "FROM write_log").fetchall()


def through_celery(database_url: str, runs: int, per_run: int, concurrency: int,
                   log_dir: Path) -> tuple[list[float], list[float], float]:
    from worker.client import enqueue_memory_writes

    reset(database_url)
    worker, log = start_warm_worker(database_url, concurrency, log_dir / "bench-worker.log")
    try:
        # Unloaded: one write at a time, waiting for each result.
        single = []
        for i, text in enumerate(facts(100, "single")):
            started_one = time.perf_counter()
            enqueue_memory_writes({"run_id": f"single-{i}", "agent_id": "bench"},
                                  [{"note": text, "type": "Context"}]).results(timeout=60)
            single.append((time.perf_counter() - started_one) * 1000)
        reset(database_url)

        texts = facts(runs * per_run, "e2e")
        sent_at: dict[tuple[str, int], float] = {}
        started = time.time()
        handles = []
        for r in range(runs):
            run = {"run_id": f"e2e-{r}", "agent_id": "bench", "user_id": f"u{r % 20}",
                   "company_id": "c1"}
            writes = [{"note": texts[r * per_run + s], "type": "Context"}
                      for s in range(per_run)]
            enqueued_at = time.time()
            handle = enqueue_memory_writes(run, writes)
            for seq in handle.seqs:
                sent_at[(run["run_id"], seq)] = enqueued_at
            handles.append(handle)
        total = runs * per_run
        applied = wait_for_commits(database_url, total, started, limit_s=600)
        latencies = [(float(at) - sent_at[(run_id, seq)]) * 1000
                     for run_id, seq, at, _ in applied]
        elapsed = max(float(at) for _, _, at, _ in applied) - started
        return single, latencies, total / elapsed
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--per-run", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--in-process-only", action="store_true",
                        help="skip the run through Celery")
    parser.add_argument("--profile", type=Path, help="cProfile the ex-embedding pass here")
    args = parser.parse_args()

    WIRE.install()
    data_dir = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    database_url, _redis_url, stack = start_services(data_dir)
    try:
        from db.migrate import migrate

        migrate(database_url)
        reset(database_url)
        lines = ["| measurement | n | p50 ms | p95 ms | mean ms | notes |",
                 "|---|---|---|---|---|---|"]
        floor, floor_wire = bare_insert(database_url, 1000)
        lines.append(row("bare psycopg INSERT + vector (binary), autocommit per row", floor,
                         f"floor; {wire_note(floor_wire)}"))
        reset(database_url)
        pipeline_runs = max(1, args.runs // 2)
        with_embedding, ex_embedding, wire = in_process(database_url, pipeline_runs,
                                                        args.per_run, args.profile)
        lines.append(row("guard pipeline in-process, ex-embedding", ex_embedding,
                         f"{wire_note(wire)}; client CPU {WIRE.cpu_ms:.2f} ms per write; "
                         f"{pct(ex_embedding, 0.5) / pct(floor, 0.5):.1f}x the floor's p50"))
        lines.append(row("guard pipeline in-process, with MiniLM embedding", with_embedding,
                         "one sentence per call"))
        if not args.in_process_only:
            single, latencies, throughput = through_celery(database_url, args.runs,
                                                           args.per_run, args.concurrency,
                                                           data_dir)
            lines.append(row("enqueue -> result via Celery, one write at a time (unloaded)",
                             single, "includes embedding one sentence"))
            lines.append(row(f"enqueue -> committed via Celery ({args.runs} runs x "
                             f"{args.per_run} writes, prefork -c {args.concurrency})",
                             latencies, f"throughput {throughput:.0f} writes/s"))
        report("\n".join(lines), "write_path.md")
    finally:
        stack.stop()  # type: ignore[attr-defined]


def wire_note(wire: tuple[float, float]) -> str:
    return f"{wire[0]:.2f} statements, {wire[1]:.2f} round trips per write"


if __name__ == "__main__":
    main()
