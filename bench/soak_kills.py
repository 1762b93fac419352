"""Soak: whole-worker SIGKILLs with chains queued, on Redis and on RabbitMQ.

    .venv/bin/python bench/soak_kills.py                       # 100 kills per broker
    .venv/bin/python bench/soak_kills.py --kills 30 --brokers redis
    .venv/bin/python bench/soak_kills.py --without-records    # the control: what is lost

Each round an agent service (this process) enqueues a batch of chains, a prefork worker
starts, works for a random 0.3-1.5 s and is SIGKILLed with its pool (no cleanup: what an OOM
kill, a lost node or `kill -9` in a deploy does). Beat runs throughout and sends the
redelivery pass every second. After the last round a worker drains everything; then every
(run, seq) is checked from Postgres: applied, exactly once, in its run's order.

Embeddings come from the OpenAI-compatible stand-in (tests/openai_stub.py), so a worker starts
in about a second instead of loading the local model; delivery does not depend on the
embedder. Runs on the embedded stack (a temporary Postgres and Redis) and a vhost of its own
on the machine's RabbitMQ (`rabbitmqctl`). The table is printed and written to
bench/results/soak_kills.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from write_path import facts, start_services  # noqa: E402

CHAIN = 5


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "worker.celery_app:app",
                                 *args], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _wait_ready(log: Path, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while " ready." not in (log.read_text(errors="replace") if log.exists() else ""):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"worker did not start: {log.read_text()[-2000:]}")
        time.sleep(0.1)


def _kill(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            _kill(process)


def _logged(database_url: str, prefix: str) -> int:
    import psycopg

    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT count(*) FROM write_log WHERE run_id LIKE %s",
                           (f"{prefix}-%",)).fetchone()
    return int(row[0]) if row else 0


def _check(database_url: str, sent: dict[str, list[int]]) -> dict[str, int]:
    """Lost, applied twice and out of order, from Postgres."""
    import psycopg

    with psycopg.connect(database_url) as conn:
        logged = Counter((r, s) for r, s in conn.execute(
            "SELECT run_id, seq FROM write_log WHERE run_id = ANY(%s) AND disposition <> "
            "'error'", (list(sent),)))
        traced: dict[str, list[int]] = {}
        for run_id, seq in conn.execute(
                "SELECT run_id, seq FROM trace_events WHERE run_id = ANY(%s) AND event LIKE "
                "'memory_write%%' ORDER BY id", (list(sent),)):
            traced.setdefault(run_id, []).append(seq)
    lost = sum(1 for run_id, seqs in sent.items() for seq in seqs if (run_id, seq) not in logged)
    twice = sum(len(seqs) - len(set(seqs)) for seqs in traced.values())
    disordered = sum(1 for run_id, seqs in traced.items() if seqs != sorted(seqs))
    return {"lost": lost, "applied_twice": twice, "runs_out_of_order": disordered}


def _enqueue_without_records(run: dict[str, str], writes: list[dict[str, str]]) -> list[int]:
    """The control: numbers reserved, nothing recorded (what every client did before write
    records, and what a client without them still does)."""
    from celery import chain

    from worker.app.tasks import memory_write
    from worker.client import reserve_sequence_numbers

    reserved = reserve_sequence_numbers(run["run_id"], len(writes))
    prevs = [reserved.prev, *reserved.seqs[:-1]]
    chain(*[memory_write.si(run, write, seq, prev) for write, seq, prev
            in zip(writes, reserved.seqs, prevs, strict=True)]).apply_async()
    return reserved.seqs


def soak(broker: str, kills: int, chains_per_round: int, data_dir: Path,
         records: bool = True) -> dict[str, object]:
    """One broker, in this process (its Celery app is configured for that broker)."""
    from worker.client import enqueue_memory_writes

    def enqueue(run: dict[str, str], writes: list[dict[str, str]]) -> list[int]:
        if records:
            return enqueue_memory_writes(run, writes).seqs
        return _enqueue_without_records(run, writes)

    database_url = os.environ["DATABASE_URL"]
    env = {**os.environ, "MEMORY_REDELIVERY_AFTER_S": "3", "MEMORY_FLUSH_PERIOD_S": "1",
           "MEMORY_VISIBILITY_TIMEOUT_S": "10", "MEMORY_WRITE_SOFT_TIME_LIMIT_S": "5",
           "MEMORY_WRITE_TIME_LIMIT_S": "6", "MEMORY_SEQ_GAP_TIMEOUT_S": "5"}
    beat = _start(["beat", "-s", str(data_dir / f"beat-{broker}"), "-l", "INFO"], env,
                  data_dir / f"beat-{broker}.log")
    texts = facts(CHAIN, "soak")
    rng = random.Random(20261204)
    sent: dict[str, list[int]] = {}
    started = time.monotonic()
    worker_logs = []
    try:
        for round_no in range(kills):
            for c in range(chains_per_round):
                run = {"run_id": f"soak-{broker}-{round_no}-{c}", "agent_id": "soak",
                       "user_id": f"soak-user-{round_no}-{c}"}
                sent[run["run_id"]] = enqueue(
                    run, [{"note": text, "type": "Context"} for text in texts])
            log = data_dir / f"worker-{broker}-{round_no}.log"
            worker_logs.append(log)
            worker = _start(["worker", "-Q", "memory.writes", "-c", "2", "-n",
                             f"soak{round_no}@%h", "-l", "INFO", "--without-gossip",
                             "--without-mingle", "--without-heartbeat"], env, log)
            _wait_ready(log, worker)
            time.sleep(rng.uniform(0.3, 1.5))
            _kill(worker)
        queued_at_last_kill = len(sent) * CHAIN - _logged(database_url, f"soak-{broker}")
        log = data_dir / f"worker-{broker}-final.log"
        worker_logs.append(log)
        worker = _start(["worker", "-Q", "memory.writes", "-c", "2", "-n", "soakfinal@%h",
                         "-l", "INFO"], env, log)
        deadline = time.monotonic() + (600 if records else 120)
        while _logged(database_url, f"soak-{broker}") < len(sent) * CHAIN \
                and time.monotonic() < deadline:
            time.sleep(1)
        _stop(worker)
    finally:
        _stop(beat)
    redelivered = sum(int(found) for log in worker_logs for found in re.findall(
        r"(\d+) recorded write\(s\) not applied", log.read_text(errors="replace")))
    return {"broker": broker + ("" if records else " (no records)"), "kills": kills,
            "chains": len(sent), "writes": len(sent) * CHAIN,
            "queued_at_last_kill": queued_at_last_kill, "redelivered": redelivered,
            "seconds": round(time.monotonic() - started), **_check(database_url, sent)}


def _vhost() -> str:
    name = f"memory-soak-{os.getpid()}"
    subprocess.run(["rabbitmqctl", "add_vhost", name], check=True, capture_output=True)
    subprocess.run(["rabbitmqctl", "set_permissions", "-p", name, "guest", ".*", ".*", ".*"],
                   check=True, capture_output=True)
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--chains-per-round", type=int, default=10)
    parser.add_argument("--brokers", default="redis,rabbitmq")
    parser.add_argument("--without-records", action="store_true",
                        help="the control: clients that record nothing (what is lost then)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child run: one broker
    args = parser.parse_args()
    if args.one:
        print(json.dumps(soak(args.one, args.kills, args.chains_per_round,
                              Path(os.environ["SOAK_DIR"]), not args.without_records)))
        return

    from tests.openai_stub import OpenAIStub

    data_dir = Path(tempfile.mkdtemp(prefix="memory-soak-"))
    _, _, stack = start_services(data_dir / "stack")
    from db.migrate import migrate

    migrate(os.environ["DATABASE_URL"])
    results = []
    with OpenAIStub() as stub:
        base = {**os.environ, "SOAK_DIR": str(data_dir), "MEMORY_EMBEDDING_BACKEND": "openai",
                "MEMORY_EMBEDDING_BASE_URL": stub.base_url, "MEMORY_EMBEDDING_API_KEY": "stub",
                "MEMORY_EMBEDDING_MODEL": "stub-embed", "MEMORY_LOG_FORMAT": "text"}
        for broker in args.brokers.split(","):
            env = dict(base)
            vhost = None
            if broker == "rabbitmq":
                vhost = _vhost()
                env["BROKER_URL"] = f"amqp://guest:guest@127.0.0.1:5672/{vhost}"
            try:
                done = subprocess.run(
                    [sys.executable, __file__, "--one", broker, "--kills", str(args.kills),
                     "--chains-per-round", str(args.chains_per_round),
                     *(["--without-records"] if args.without_records else [])], env=env,
                    capture_output=True, text=True, check=True)
                results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            finally:
                if vhost:
                    subprocess.run(["rabbitmqctl", "delete_vhost", vhost], capture_output=True)
    stack.stop()  # type: ignore[attr-defined]
    columns = ["broker", "kills", "chains", "writes", "queued_at_last_kill", "redelivered",
               "lost", "applied_twice", "runs_out_of_order", "seconds"]
    table = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    table += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in results]
    text = "\n".join(table)
    print(text)
    control = " --without-records" if args.without_records else ""
    out = ROOT / "bench" / "results" / f"soak_kills{control.replace(' --', '_')}.md"
    out.write_text(f"# Whole-worker SIGKILL soak ({time.strftime('%Y-%m-%d')})\n\n"
                   f"Command: `.venv/bin/python bench/soak_kills.py --kills {args.kills} "
                   f"--chains-per-round {args.chains_per_round}{control}`\n\n{text}\n")
    import shutil

    shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
