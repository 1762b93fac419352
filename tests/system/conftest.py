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


@pytest.fixture(autouse=True)
def clean_state(request: pytest.FixtureRequest) -> Iterator[None]:
    """Empty tables and our Redis keys; Kombu's bindings stay for the module's worker."""
    services: Services = request.getfixturevalue("services")
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")
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
