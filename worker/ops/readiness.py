"""Readiness: may this process take work? The broker answers PING and does not evict keys,
the database answers `SELECT 1`, no migration is pending, and the workers running here can
embed (as they last recorded it: worker/ops/embedder_state.py).

The checks behind `memory-worker health ready` and `python -m worker.ops.health ready` (which
print them, worker/ops/health.py). Each check is bounded by its timeout and reports a failure
as an answer ("not ready, because ..."), never as an exception. Redis, psycopg, SQLAlchemy and
the settings are imported inside the checks, so importing this module costs the liveness probe
nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# Per readiness check (connect and answer); a probe's own timeout should exceed the sum.
DEFAULT_CHECK_TIMEOUT_S = 5.0


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    duration_ms: float = 0.0


@dataclass
class Readiness:
    checks: list[Check] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.checks if not c.ok]

    def as_dict(self) -> dict[str, Any]:
        return {"ready": self.ready, "failed": self.failed,
                "checks": [asdict(c) for c in self.checks]}


def redact(url: str) -> str:
    """The URL without its password, for output that lands in probe logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


class NotReady(Exception):
    """A check's own verdict (its message is the whole story, no exception type needed)."""


def _timed(name: str, probe: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail = probe()
        ok = True
    except NotReady as exc:
        detail, ok = str(exc), False
    except Exception as exc:  # any failure is an answer: "not ready, because …"
        # One line: libpq's messages span several, and probe logs are read line by line.
        message = " ".join(str(exc).split()) or "(no message)"
        detail, ok = f"{type(exc).__name__}: {message}", False
    return Check(name, ok, detail, round((time.perf_counter() - started) * 1000, 1))


def check_broker(redis_url: str | None, timeout_s: float = DEFAULT_CHECK_TIMEOUT_S) -> Check:
    if not redis_url:
        return Check("broker", False, "REDIS_URL is not set")

    def probe() -> str:
        import redis

        client = redis.Redis.from_url(redis_url, socket_connect_timeout=timeout_s,
                                      socket_timeout=timeout_s)
        try:
            client.ping()
            # An evicting Redis silently drops queued writes and sequence counters. Managed
            # services may forbid CONFIG; then the policy cannot be checked here.
            try:
                policy = client.config_get("maxmemory-policy").get("maxmemory-policy")
            except redis.ResponseError:
                policy = None
            if policy is not None and policy != "noeviction":
                raise NotReady(f"maxmemory-policy is {policy!r}; the broker must not evict "
                                   "(set maxmemory-policy noeviction)")
        finally:
            client.close()
        shown = policy if policy is not None else "policy not readable"
        return f"{redact(redis_url)} answered PING ({shown})"

    return _timed("broker", probe)


def check_rabbitmq(broker_url: str, timeout_s: float = DEFAULT_CHECK_TIMEOUT_S) -> Check:
    """RabbitMQ as the broker: it accepts a connection (and the login) within the timeout."""
    def probe() -> str:
        from kombu import Connection

        with Connection(broker_url, connect_timeout=timeout_s) as connection:
            connection.ensure_connection(max_retries=1, timeout=timeout_s)
            server = connection.connection.server_properties.get("version", "?")
        shown = server.decode() if isinstance(server, bytes) else server
        return f"{redact(broker_url)} accepted a connection (RabbitMQ {shown})"

    return _timed("broker", probe)


def is_amqp(url: str | None) -> bool:
    return bool(url) and str(url).split(":", 1)[0] in ("amqp", "amqps", "pyamqp")


def _with_connect_timeout(database_url: str, timeout_s: float) -> str:
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    if "connect_timeout" in url.query:
        return database_url
    # libpq counts whole seconds and treats anything below 2 as 2.
    seconds = str(max(2, round(timeout_s)))
    return url.update_query_dict({"connect_timeout": seconds}).render_as_string(
        hide_password=False)


def check_database(database_url: str | None,
                   timeout_s: float = DEFAULT_CHECK_TIMEOUT_S) -> Check:
    if not database_url:
        return Check("database", False, "DATABASE_URL is not set")

    def probe() -> str:
        import psycopg

        from db.connector import libpq_url

        url = _with_connect_timeout(database_url, timeout_s)
        with psycopg.connect(libpq_url(url), autocommit=True) as conn:
            row = conn.execute("SELECT 1").fetchone()
        if row != (1,):
            raise NotReady(f"SELECT 1 returned {row!r}")
        return f"{redact(database_url)} answered SELECT 1"

    return _timed("database", probe)


def check_migrations(database_url: str, timeout_s: float = DEFAULT_CHECK_TIMEOUT_S) -> Check:
    def probe() -> str:
        from db.migrate import pending

        waiting = pending(_with_connect_timeout(database_url, timeout_s))
        if waiting:
            names = ", ".join(f"{m.version}_{m.name}" for m in waiting)
            raise NotReady(f"{len(waiting)} pending: {names} (run `memory-worker migrate`)")
        return "schema is up to date"

    return _timed("migrations", probe)


def check_embedder(now: float | None = None) -> Check:
    """What the workers running here last recorded about their embedder. Reads files only:
    a probe never loads the model or calls the endpoint. No worker here (beat, an init
    container, an operator's shell) has nothing to check."""

    def probe() -> str:
        from worker.ops.embedder_state import describe, recorded_states

        at = time.time() if now is None else now
        states = recorded_states()
        if not states:
            return "no worker here has recorded its embedder (nothing to check)"
        described = [describe(path, state, at) for path, state in states]
        failing = [text for (_, state), text in zip(states, described, strict=True)
                   if not state.ok]
        if failing:
            raise NotReady("; ".join(failing))
        return "; ".join(described)

    return _timed("embedder", probe)


def check_readiness(database_url: str | None = None, redis_url: str | None = None, *,
                    timeout_s: float = DEFAULT_CHECK_TIMEOUT_S,
                    from_settings: bool = True, broker_url: str | None = None) -> Readiness:
    """Broker, database, migrations, embedder. The URLs default to the settings (the
    environment). With RabbitMQ as the broker, Redis (sequence numbers, write records,
    results) is checked as `redis`."""
    result = Readiness()
    if from_settings and broker_url is None:
        broker_url = _broker_url_from_settings()
    if from_settings and (database_url is None or redis_url is None):
        try:
            from worker.settings import Settings

            settings = Settings()
        except Exception as exc:  # a bad setting means "not ready", and says why
            result.checks.append(Check("settings", False, f"{type(exc).__name__}: {exc}"))
            return result
        database_url = database_url if database_url is not None else settings.database_url
        redis_url = redis_url if redis_url is not None else settings.redis_url
    if is_amqp(broker_url):
        assert broker_url is not None
        result.checks.append(check_rabbitmq(broker_url, timeout_s))
        redis_check = check_broker(redis_url, timeout_s)
        redis_check.name = "redis"
        result.checks.append(redis_check)
    else:
        result.checks.append(check_broker(redis_url, timeout_s))
    database = check_database(database_url, timeout_s)
    result.checks.append(database)
    if database.ok and database_url:
        result.checks.append(check_migrations(database_url, timeout_s))
    else:
        result.checks.append(Check("migrations", False, "not checked: database unreachable"))
    result.checks.append(check_embedder())
    return result


def _broker_url_from_settings() -> str | None:
    try:
        from worker.settings import Settings

        return Settings().broker_url
    except Exception:
        return None  # a bad setting is reported by the database/redis branch
