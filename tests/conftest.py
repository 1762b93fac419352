"""Test stack: a real Postgres with pgvector, a real Redis, real Celery workers.

With TEST_DATABASE_ADMIN_URL / TEST_REDIS_URL unset, the embedded stack is started (PostgreSQL
18 + pgvector under .memory-data/test, or MEMORY_TEST_PG_DIR, and a throw-away redis-server).
Each test starts from empty tables and an empty Redis.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.helpers import PROJECT_ROOT

# Small timeouts so crash and gap tests finish quickly; set before any settings are read.
TEST_ENV = {
    "MEMORY_SEQ_GAP_TIMEOUT_S": "4",
    "MEMORY_VISIBILITY_TIMEOUT_S": "8",
    "MEMORY_BROKER_RESTORE_INTERVAL_S": "1",
    "MEMORY_WRITE_SOFT_TIME_LIMIT_S": "5",
    "MEMORY_WRITE_TIME_LIMIT_S": "6",
    "MEMORY_EMBEDDING_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
for _key, _value in TEST_ENV.items():
    os.environ.setdefault(_key, _value)

TEST_DATABASE = "memory_test"


@dataclass(frozen=True)
class Services:
    database_url: str
    admin_url: str
    redis_url: str


def _recreate_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _database_url(admin_url: str, name: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def services() -> Iterator[Services]:
    from worker.local.embedded import EmbeddedPostgres, EmbeddedRedis

    started: list[EmbeddedPostgres | EmbeddedRedis] = []
    admin_url = os.environ.get("TEST_DATABASE_ADMIN_URL")
    if not admin_url:
        pg_dir = os.environ.get("MEMORY_TEST_PG_DIR")
        default_dir = PROJECT_ROOT / ".memory-data" / "test" / "pg"
        pg = EmbeddedPostgres(Path(pg_dir) if pg_dir else default_dir)
        pg.start()
        started.append(pg)
        admin_url = pg.admin_url()
    redis_url = os.environ.get("TEST_REDIS_URL")
    redis_dir = None
    if not redis_url:
        redis_dir = Path(tempfile.mkdtemp(prefix="memory-test-redis-"))
        # A port the system picks, not "6420 and up": a client left behind by an earlier
        # session (a worker whose pytest was killed) keeps dialling its old port, and the next
        # session starting from the same number would take that port and that client with it.
        redis = EmbeddedRedis(redis_dir, preferred_port=0)
        redis_url = redis.start()
        started.append(redis)
    _recreate_database(admin_url, TEST_DATABASE)
    database_url = _database_url(admin_url, TEST_DATABASE)

    from db.migrate import migrate
    from worker.settings import reset_settings_cache

    migrate(database_url)
    os.environ["DATABASE_URL"] = database_url
    os.environ["REDIS_URL"] = redis_url
    reset_settings_cache()
    try:
        yield Services(database_url=database_url, admin_url=admin_url, redis_url=redis_url)
    finally:
        import gc

        from db.connector import dispose_all

        dispose_all()
        gc.collect()  # let pending AsyncResults unsubscribe while Redis is still up
        for service in reversed(started):
            service.stop()
        if redis_dir is not None:
            shutil.rmtree(redis_dir, ignore_errors=True)


@dataclass(frozen=True)
class RabbitMQ:
    url: str  # amqp://guest:guest@127.0.0.1:5672/<the session's own vhost>
    vhost: str


def _rabbitmqctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["rabbitmqctl", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="session")
def rabbitmq() -> Iterator[RabbitMQ]:
    """A vhost of this session's own on the machine's RabbitMQ (127.0.0.1:5672, guest/guest;
    `TEST_RABBITMQ_URL` names another broker and vhost). Every development and CI machine
    runs one: under CI=true a missing RabbitMQ fails these tests; elsewhere they skip, with
    one reason in the summary."""
    given = os.environ.get("TEST_RABBITMQ_URL")
    if given:
        yield RabbitMQ(given, given.rsplit("/", 1)[-1])
        return
    vhost = f"memory-test-{os.getpid()}"
    try:
        created = _rabbitmqctl("add_vhost", vhost)
        if created.returncode == 0:
            created = _rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        problem = None if created.returncode == 0 else (created.stderr or created.stdout)
    except (OSError, subprocess.SubprocessError) as exc:
        problem = f"{type(exc).__name__}: {exc}"
    if problem is not None:
        message = f"RabbitMQ is not available on this machine ({problem.strip()[:200]})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield RabbitMQ(f"amqp://guest:guest@127.0.0.1:5672/{vhost}", vhost)
    finally:
        _rabbitmqctl("delete_vhost", vhost)


@pytest.fixture(scope="session")
def settings(services: Services):
    from worker.settings import get_settings

    return get_settings()


@pytest.fixture(scope="session")
def embedder(settings):
    from worker.embeddings import get_embedder

    return get_embedder(settings)


@pytest.fixture(scope="session")
def db(services: Services, settings):
    from db.connector import get_database

    return get_database(services.database_url)


TABLES = ("trace_events", "write_log", "runs", "note_events", "judge_memo", "notes", "agents",
          "conversation_messages", "conversations", "examples", "manager_cycles",
          "note_access_pending", "conversation_tombstones", "principals",
          "dead_letters", "chain_continuations", "erasure_fences", "erasures",
          "exports")


@pytest.fixture(autouse=True)
def clean_state(request: pytest.FixtureRequest) -> Iterator[None]:
    if "services" not in request.fixturenames and not request.node.get_closest_marker("db"):
        yield
        return
    services: Services = request.getfixturevalue("services")
    from worker.reads.context import flush_all_recorders

    flush_all_recorders()  # a previous test's access stats must not land in this one
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")
    import redis

    redis.Redis.from_url(services.redis_url).flushdb()
    yield


@pytest.fixture
def runtime(settings, embedder, services: Services) -> Iterator[object]:
    from worker.runtime import Runtime, set_runtime

    rt = Runtime(settings=settings, embedder_override=embedder)
    set_runtime(rt)
    yield rt
    set_runtime(None)


@pytest.fixture(scope="module")
def celery_worker(services: Services, settings, embedder):
    """A real Celery worker consuming both queues, in a thread of the test process.

    Module-scoped: tests that start worker processes of their own must not share the queue
    with it."""
    from celery.contrib.testing.worker import start_worker

    from worker.celery_app import app
    from worker.runtime import Runtime, set_runtime

    set_runtime(Runtime(settings=settings, embedder_override=embedder))
    # Module fixtures start before a test's clean_state: a previous test's unconsumed messages
    # would reach this worker first, and be applied while clean_state empties the tables.
    import redis

    redis.Redis.from_url(services.redis_url).flushdb()
    with start_worker(
        app, pool="threads", concurrency=4, perform_ping_check=False, loglevel="WARNING",
        queues=[settings.write_queue, settings.manager_queue], shutdown_timeout=30.0,
    ) as worker:
        yield worker


@pytest.fixture
def write(runtime: Any) -> Any:
    """Apply writes in-process through the real write path (tests.helpers.Writer)."""
    from tests.helpers import Writer

    return Writer(runtime.write_deps())


@pytest.fixture
def seed(db: Any, embedder: Any) -> Any:
    """Insert a note through the production insert, at a chosen scope, status and time."""
    import uuid
    from datetime import datetime, timedelta

    from db.queries.notes import NewNote, insert_note
    from db.scope import NoteScope
    from tests.helpers import READ_NOW
    from worker.normalize import content_hash

    def add(text: str, *, agent: str | None = "A", user: str | None = "U",
            company: str | None = "C", status: str = "Active", type: str = "Preference",
            created: datetime = READ_NOW - timedelta(days=3), expires: datetime | None = None,
            entity: str | None = None, record: str | None = None,
            secondary: dict | None = None, vector: Any = None, run_id: str | None = "run-1",
            author: str = "Agent") -> uuid.UUID:
        [embedding] = [vector] if vector is not None else embedder.embed([text])
        with db.transaction() as conn:
            return insert_note(conn, NewNote(
                scope=NoteScope(agent, user, company, entity, record, secondary or {}),
                type=type, note=text, content_hash=content_hash(text), status=status,
                author_type=author, protection_tier="Standard", expires_at=expires,
                embedding=embedding, embedding_model=embedder.model_name,
                source_conversation_id=None, source_conversation_detail_id=None,
                source_agent_run_id=run_id), created)

    return add

