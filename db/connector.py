"""The one narrow door to Postgres: an engine per process, transactions, vector adaptation.

Engines are created lazily in the process that uses them and rebuilt after a fork (a pool
shared across fork hands one socket to two processes). Vectors travel in pgvector's binary
form: the psycopg dumpers are registered on every new DBAPI connection and numpy arrays are
passed straight through as parameters (SQLAlchemy's VECTOR type would turn them into text).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg._queries
from pgvector.psycopg import register_vector
from psycopg.types.datetime import TimestamptzBinaryLoader, TimestamptzLoader
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError

# A connection attempt fails after this long unless the URL says otherwise: a server that is
# down, a port nobody answers on, or one that accepts and never replies must give an error in
# seconds, not hang a CLI command or a worker's start.
DEFAULT_CONNECT_TIMEOUT_S = 5


def _with_timeout(parsed: URL, connect_timeout_s: int) -> URL:
    if "connect_timeout" in parsed.query:
        return parsed
    return parsed.update_query_dict({"connect_timeout": str(connect_timeout_s)})


def sqlalchemy_url(url: str, *, connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S) -> str:
    """Accept plain `postgresql://` URLs and select the psycopg 3 driver."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return _with_timeout(parsed, connect_timeout_s).render_as_string(hide_password=False)


def libpq_url(url: str, *, connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S) -> str:
    """The same URL without SQLAlchemy's driver suffix, for plain psycopg connections."""
    parsed = make_url(url)
    if parsed.drivername.startswith("postgresql+"):
        parsed = parsed.set(drivername="postgresql")
    return _with_timeout(parsed, connect_timeout_s).render_as_string(hide_password=False)


# psycopg converts a query's named placeholders once per text and caches the result only for
# texts up to 4 kB; the read path's ranking statement is ~10 kB (one index range per lattice
# level, each spelling out the partial index's predicate), and re-parsing it cost ~0.2 ms a
# context. The cache is keyed by text and bounded (LRU), so a larger limit is safe.
if getattr(psycopg._queries, "MAX_CACHED_STATEMENT_LENGTH", 0) < 32768:
    psycopg._queries.MAX_CACHED_STATEMENT_LENGTH = 32768


def make_engine(url: str, *, pool_size: int = 4, application_name: str = "memory-worker",
                generic_plans: bool = False,
                connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S) -> Engine:
    connect_args: dict[str, Any] = {"application_name": application_name,
                                    "prepare_threshold": 1}
    if generic_plans:
        # Skip the five custom plans Postgres makes per prepared statement before it compares
        # costs — and its later choices of custom plans, each re-planned (~2 ms for the
        # ranking statement). The read path's statements are exact under generic plans by
        # design (db/queries/retrieval.py; tested).
        connect_args["options"] = "-c plan_cache_mode=force_generic_plan"
    engine = create_engine(
        sqlalchemy_url(url, connect_timeout_s=connect_timeout_s),
        pool_size=pool_size,
        max_overflow=pool_size,
        # No pre-ping: it costs a round trip per checkout on the read path. A connection found
        # dead is invalidated by SQLAlchemy; the write path retries transient errors and the
        # read path retries once on an invalidated connection.
        pool_pre_ping=False,
        pool_recycle=1800,
        # Prepare every statement on first use: the read path's plans are then reused instead
        # of re-planned per call (they are exact under generic plans; see db/queries/retrieval.py).
        connect_args=connect_args,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        register_vector(dbapi_connection)
        for loader in (InfinityTimestamptzLoader, InfinityTimestamptzBinaryLoader):
            dbapi_connection.adapters.register_loader("timestamptz", loader)

    return engine


# `'infinity'` is a valid timestamptz that Python's datetime cannot hold; psycopg refuses to
# load it, which would make one odd row break every read that returns it. Read as the
# largest datetime instead (SQL still sees infinity, e.g. the injection filter's isfinite()).
_FAR_FUTURE = datetime.max.replace(tzinfo=UTC)
_FAR_PAST = datetime.min.replace(tzinfo=UTC)


class InfinityTimestamptzLoader(TimestamptzLoader):
    def load(self, data: Any) -> datetime:
        raw = bytes(data)
        if raw == b"infinity":
            return _FAR_FUTURE
        if raw == b"-infinity":
            return _FAR_PAST
        return super().load(data)  # type: ignore[no-any-return]


class InfinityTimestamptzBinaryLoader(TimestamptzBinaryLoader):
    _INFINITY = (2**63 - 1).to_bytes(8, "big", signed=True)
    _MINUS_INFINITY = (-(2**63)).to_bytes(8, "big", signed=True)

    def load(self, data: Any) -> datetime:
        raw = bytes(data)
        if raw == self._INFINITY:
            return _FAR_FUTURE
        if raw == self._MINUS_INFINITY:
            return _FAR_PAST
        return super().load(data)  # type: ignore[no-any-return]


class Database:
    """An engine bound to the process that created it."""

    def __init__(self, url: str, *, pool_size: int = 4,
                 connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S) -> None:
        self.url = url
        self.pool_size = pool_size
        self.connect_timeout_s = connect_timeout_s
        self._engines: dict[bool, Engine] = {}  # generic_plans -> engine
        self._pid = 0
        self._lock = threading.Lock()

    def _engine(self, generic_plans: bool) -> Engine:
        """This process's engine of the kind; after a fork, the parent's are dropped (their
        sockets not closed: they belong to the parent) and new ones made on first use."""
        pid = os.getpid()
        engine = self._engines.get(generic_plans) if self._pid == pid else None
        if engine is None:
            with self._lock:
                if self._pid != pid:
                    for inherited in self._engines.values():
                        inherited.dispose(close=False)
                    self._engines, self._pid = {}, pid
                engine = self._engines.get(generic_plans)
                if engine is None:
                    engine = self._engines[generic_plans] = make_engine(
                        self.url, pool_size=self.pool_size, generic_plans=generic_plans,
                        connect_timeout_s=self.connect_timeout_s)
        return engine

    @property
    def engine(self) -> Engine:
        return self._engine(False)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """READ COMMITTED transaction; commits on success, rolls back on any exception."""
        with self.engine.begin() as conn:
            yield conn

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            yield conn

    @contextmanager
    def read(self, *, generic_plans: bool = False) -> Iterator[Connection]:
        """Autocommit, for read-only work: no BEGIN/ROLLBACK round trips around the reads.
        generic_plans: a connection that never re-plans (the memory context's reads)."""
        with self._engine(generic_plans).connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    def dispose(self) -> None:
        """Drop the pools; the next use makes new ones. A pool this process made is closed; one
        inherited through fork is only forgotten (its sockets belong to the parent)."""
        made_here = self._pid == os.getpid()
        for engine in self._engines.values():
            engine.dispose(close=made_here)
        self._engines = {}


T = TypeVar("T")


def once_more_if_invalidated(call: Callable[[], T]) -> T:
    """`call()`, and once more if it met a pooled connection that had died (a database
    restart): SQLAlchemy has then invalidated the pool, so the second call connects anew.
    Only for a step that may run twice: a read, or a first statement that changed nothing."""
    try:
        return call()
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        return call()


_databases: dict[str, Database] = {}
_registry_lock = threading.Lock()


def get_database(url: str, *, pool_size: int = 4,
                 connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S) -> Database:
    with _registry_lock:
        db = _databases.get(url)
        if db is None:
            db = _databases[url] = Database(url, pool_size=pool_size,
                                            connect_timeout_s=connect_timeout_s)
        return db


def dispose_all() -> None:
    """Drop every pool of this process. The Database objects stay registered: a holder of one
    (a fixture, a runtime) and a later get_database() keep sharing it, so a later dispose_all
    still reaches its pools (a solo worker sends worker_process_init in its own process)."""
    with _registry_lock:
        for db in _databases.values():
            db.dispose()
