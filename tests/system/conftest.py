"""The system tier: the product as its users run it.

A real `celery worker` process (prefork, both queues) started the way an operator starts it,
tasks sent by their documented names with `app.send_task` as an agent service in any
language would, and every effect read back from Postgres. One worker per module: its queue
bindings live in Redis, so between tests only our own keys are cleared, never Kombu's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.conftest import TABLES, Services
from tests.helpers import WorkerProcess

_HERE = str(__import__("pathlib").Path(__file__).parent)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.path).startswith(_HERE):
            item.add_marker(pytest.mark.system)


def _truncate_when_quiet(conn: psycopg.Connection[Any], timeout_s: float = 30.0) -> None:
    """TRUNCATE once no other transaction is running here. The module's worker starts before
    this fixture runs, and may at once take a task a previous module left in its queues (a
    cycle, a redelivered write); TRUNCATE locks its tables one after the other, so truncating
    under such a transaction can deadlock (seen once). Waiting for the database to go quiet
    removes the cause; if a task still starts in between, the deadlock's victim is this
    statement alone, rolled back, and it is issued again once it is quiet."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        busy = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state NOT IN ('idle') "
            "AND backend_type = 'client backend'").fetchone()
        if busy and busy[0] and time.monotonic() < deadline:
            time.sleep(0.05)
            continue
        try:
            conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")
            return
        except psycopg.errors.DeadlockDetected:
            if time.monotonic() >= deadline:
                raise


@pytest.fixture(autouse=True)
def clean_state(request: pytest.FixtureRequest) -> Iterator[None]:
    """Empty tables and our Redis keys; Kombu's bindings stay for the module's worker."""
    services: Services = request.getfixturevalue("services")
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        _truncate_when_quiet(conn)
    import redis

    client = redis.Redis.from_url(services.redis_url)
    for key in client.scan_iter("memory:*"):
        client.delete(key)
    yield


@pytest.fixture(scope="module")
def system_worker(request: pytest.FixtureRequest, services: Services,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    """The module's worker; a module sets `WORKER_ENV` to start it with other settings."""
    log_dir = tmp_path_factory.mktemp("system-worker")
    worker = WorkerProcess("system", log_dir, concurrency=2,
                           queues="memory.writes,memory.manager",
                           env=getattr(request.module, "WORKER_ENV", None)).start()
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()


def send(name: str, *args: Any, **kwargs: Any) -> Any:
    """Send a task by its documented name, as any client would."""
    from worker.celery_app import app

    return app.send_task(name, args=list(args), kwargs=kwargs)


def publish_raw(name: str, body: str, *, queue: str = "memory.writes") -> str:
    """Publish a message whose body is exactly `body` (JSON text nobody's encoder would
    produce, or no JSON at all), with Celery's protocol-2 headers. Returns its task id."""
    from uuid import uuid4

    from worker.celery_app import app

    task_id = str(uuid4())
    headers = {"lang": "py", "task": name, "id": task_id, "root_id": task_id,
               "parent_id": None, "group": None, "retries": 0, "argsrepr": "",
               "kwargsrepr": "", "origin": "test", "ignore_result": False, "eta": None,
               "expires": None, "timelimit": [None, None], "shadow": None}
    target = app.amqp.queues[queue]
    with app.producer_or_acquire() as producer:
        producer.publish(body.encode(), exchange=target.exchange, routing_key=target.routing_key,
                         declare=[target], headers=headers, content_type="application/json",
                         content_encoding="utf-8", serializer=None)
    return task_id


class RedisRestarts:
    """Stop and start the session's redis-server as an outage would: with its data (SIGTERM
    flushes the AOF) or without (SIGKILL, and the AOF deleted: a restart without
    persistence, a failover to an empty replica)."""

    def __init__(self, url: str) -> None:
        import psutil
        import redis

        from worker.local.embedded import redis_server_binary

        client = redis.Redis.from_url(url, decode_responses=True)
        info = client.info("server")
        self.process = psutil.Process(int(info["process_id"]))
        config = {key: client.config_get(key)[key] for key in (
            "bind", "port", "dir", "appendonly", "save", "maxmemory-policy", "logfile",
            "pidfile")}
        self.data_dir = config["dir"]
        self.cmdline = [redis_server_binary()]
        for key, value in config.items():
            self.cmdline += [f"--{key}", value.split()[0] if key == "bind" else value]
        self.url = url

    def stop(self, *, lose_data: bool) -> None:
        import shutil
        import signal
        from pathlib import Path

        self.process.send_signal(signal.SIGKILL if lose_data else signal.SIGTERM)
        self.process.wait(timeout=15)
        if lose_data:
            for item in Path(self.data_dir).iterdir():
                if item.name.startswith(("appendonly", "dump")):
                    shutil.rmtree(item) if item.is_dir() else item.unlink()

    def start(self) -> None:
        import atexit
        import subprocess

        import psutil
        import redis

        popen = subprocess.Popen(self.cmdline, stdin=subprocess.DEVNULL)
        atexit.register(popen.terminate)
        self.process = psutil.Process(popen.pid)
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5)

        def ready() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        from tests.helpers import wait_until

        wait_until(ready, timeout=15, interval=0.05)


class Broker:
    """The broker a test runs against, as an operator would fault it: Redis (the default,
    `make up`'s) or RabbitMQ (`BROKER_URL=amqp://…`, a vhost of the session's own)."""

    def __init__(self, kind: str, services: Services, rabbitmq_url: str | None) -> None:
        self.kind = kind
        self.services = services
        self.url = rabbitmq_url or services.redis_url
        # For workers, beat and clients (processes of their own); Redis needs nothing more.
        self.env = {"BROKER_URL": rabbitmq_url} if rabbitmq_url else {}

    def _amqp(self) -> Any:
        from kombu import Connection

        return Connection(self.url, connect_timeout=5)

    def delete_queued(self, queue: str = "memory.writes") -> int:
        """Delete every message waiting in the queue, as a broker that lost them would."""
        if self.kind == "redis":
            import redis

            client = redis.Redis.from_url(self.url)
            with client.pipeline() as pipe:
                pipe.llen(queue)
                pipe.delete(queue)
                count, _ = pipe.execute()
            return int(count)
        with self._amqp() as connection, connection.channel() as channel:
            try:
                return int(channel.queue_purge(queue) or 0)
            except Exception:  # not declared yet: nothing queued
                return 0

    def queued(self, queue: str = "memory.writes") -> int:
        if self.kind == "redis":
            import redis

            return int(redis.Redis.from_url(self.url).llen(queue))
        from worker.app.rabbitmq import queue_length

        with self._amqp() as connection:
            return queue_length(connection, queue)

    def restart(self) -> None:
        """Stop the broker and start it again, its data kept (Redis: AOF; RabbitMQ: its
        quorum queues' logs)."""
        if self.kind == "redis":
            control = RedisRestarts(self.services.redis_url)
            control.stop(lose_data=False)
            control.start()
            return
        import subprocess

        for action in ("stop_app", "start_app"):
            subprocess.run(["rabbitmqctl", action], check=True, capture_output=True,
                           timeout=120)
        subprocess.run(["rabbitmqctl", "await_startup"], check=True, capture_output=True,
                       timeout=120)


@pytest.fixture(params=["redis", "rabbitmq"])
def broker(request: pytest.FixtureRequest, services: Services) -> Iterator[Broker]:
    url = request.getfixturevalue("rabbitmq").url if request.param == "rabbitmq" else None
    chosen = Broker(request.param, services, url)
    for queue in ("memory.writes", "memory.manager"):
        chosen.delete_queued(queue)
    yield chosen


ENQUEUE_CLIENT = """
import json, sys
from worker.client import enqueue_memory_writes
spec = json.loads(sys.argv[1])
sent = {}
for r in range(spec["runs"]):
    run = {"run_id": f"{spec['prefix']}-{r}", "agent_id": "A",
           "user_id": f"{spec['prefix']}-user-{r}"}
    writes = [{"note": fact, "type": "Context"} for fact in spec["facts"]]
    sent[run["run_id"]] = enqueue_memory_writes(run, writes).seqs
print(json.dumps(sent))
"""


def enqueue_from_client(env: dict[str, str], prefix: str, runs: int,
                        facts: list[str]) -> dict[str, list[int]]:
    """An agent service in a process of its own enqueues `runs` chains of `facts`; returns
    each run's sequence numbers."""
    import json
    import os
    import subprocess
    import sys

    from tests.helpers import PROJECT_ROOT

    spec = json.dumps({"prefix": prefix, "runs": runs, "facts": facts})
    done = subprocess.run([sys.executable, "-c", ENQUEUE_CLIENT, spec], cwd=PROJECT_ROOT,
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return {run: list(seqs) for run, seqs in json.loads(done.stdout).items()}


TURN_CLIENT = """
import json, sys
from worker.client import enqueue_memory_writes
prefix, facts = sys.argv[1], json.loads(sys.argv[2])
sent = {}
for line in sys.stdin:
    command, _, count = line.strip().partition(" ")
    if command == "done":
        break
    for _ in range(int(count)):
        r = len(sent)
        run = {"run_id": f"{prefix}-{r}", "agent_id": "A", "user_id": f"{prefix}-user-{r}"}
        writes = [{"note": fact, "type": "Context"} for fact in facts]
        sent[run["run_id"]] = enqueue_memory_writes(run, writes).seqs
    print("ok", flush=True)
print(json.dumps(sent), flush=True)
"""


class AgentService:
    """An agent service in a process of its own that enqueues chains when told to (its
    Celery app configured for the broker in `env`): `enqueue(n)` sends n chains of `facts`,
    `finish()` returns every run's sequence numbers."""

    def __init__(self, env: dict[str, str], prefix: str, facts: list[str]) -> None:
        import json
        import os
        import subprocess
        import sys

        from tests.helpers import PROJECT_ROOT

        self.process = subprocess.Popen(
            [sys.executable, "-c", TURN_CLIENT, prefix, json.dumps(facts)], cwd=PROJECT_ROOT,
            env={**os.environ, **env}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)

    def enqueue(self, chains: int) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"enqueue {chains}\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "ok"

    def finish(self) -> dict[str, list[int]]:
        import json

        out, _ = self.process.communicate("done\n", timeout=60)
        return {run: list(seqs) for run, seqs in json.loads(out.strip().splitlines()[-1])
                .items()}


def applied_once_in_order(database_url: str, sent: dict[str, list[int]]) -> list[str]:
    """What is wrong, from Postgres: a (run, seq) not applied, applied more than once, out of
    its run's order, or answered `error`. Empty when every write had exactly one effect."""
    from tests.helpers import rows

    problems = []
    logged: dict[str, list[tuple[int, str]]] = {}
    for row in rows(database_url, "SELECT run_id, seq, disposition FROM write_log "
                    "WHERE run_id = ANY(%s) ORDER BY run_id, seq", list(sent)):
        logged.setdefault(row["run_id"], []).append((row["seq"], row["disposition"]))
    traced: dict[str, list[int]] = {}
    for row in rows(database_url, "SELECT run_id, seq FROM trace_events WHERE run_id = ANY(%s) "
                    "AND event LIKE 'memory_write%%' ORDER BY id", list(sent)):
        traced.setdefault(row["run_id"], []).append(row["seq"])
    for run_id, seqs in sent.items():
        got = logged.get(run_id, [])
        if [seq for seq, _ in got] != seqs:
            problems.append(f"{run_id}: logged {len(got)} of {len(seqs)}")
        if any(disposition == "error" for _, disposition in got):
            problems.append(f"{run_id}: an error")
        if traced.get(run_id, []) != seqs:
            problems.append(f"{run_id}: applied {traced.get(run_id, [])} for {seqs}")
    return problems


def logged_writes(database_url: str, prefix: str) -> int:
    from tests.helpers import rows

    return int(rows(database_url, "SELECT count(*) AS n FROM write_log WHERE run_id LIKE %s",
                    f"{prefix}-%")[0]["n"])


SEND_CLIENT = """
import json, sys, time
from worker.celery_app import app
for name, args, pause_s in json.loads(sys.argv[1]):
    print(app.send_task(name, args=args).id, flush=True)
    time.sleep(pause_s)
"""


def send_from_client(env: dict[str, str], tasks: list[tuple[str, list[Any], float]]
                     ) -> list[str]:
    """A client in a process of its own sends tasks by name (each followed by a pause);
    returns their task ids."""
    import json
    import os
    import subprocess
    import sys

    from tests.helpers import PROJECT_ROOT

    done = subprocess.run([sys.executable, "-c", SEND_CLIENT, json.dumps(tasks)],
                          cwd=PROJECT_ROOT, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()
