"""Process-wide wiring: settings, the database and the embedder of this process.

Built from the environment on first use, in the process that uses it (so after a worker
fork). Tests and `memory-worker up` may install their own before starting workers.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from db.connector import Database, get_database
from worker.delivery.records import write_records
from worker.embeddings import Embedder, get_embedder
from worker.reads.context import ContextDeps
from worker.settings import Settings, get_settings
from worker.writes.apply import Clock, WriteDeps, utc_now

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    settings: Settings
    clock: Clock = utc_now
    embedder_override: Embedder | None = None

    @property
    def db(self) -> Database:
        return get_database(self.settings.require_database_url(),
                            pool_size=self.settings.db_pool_size,
                            connect_timeout_s=self.settings.database_connect_timeout_s)

    @property
    def embedder(self) -> Embedder:
        if self.embedder_override is not None:
            return self.embedder_override
        return get_embedder(self.settings)

    def embedder_or_none(self) -> Embedder | None:
        try:
            return self.embedder
        except Exception:
            # Fail open: writes are stored without vectors, reads fall back to Recent.
            log.exception("embedder unavailable; continuing without embeddings")
            return None

    def write_deps(self) -> WriteDeps:
        return WriteDeps(db=self.db, settings=self.settings, embedder=self.embedder_or_none(),
                         clock=self.clock, records=write_records(self.settings.redis_url))

    def context_deps(self) -> ContextDeps:
        return ContextDeps(db=self.db, settings=self.settings,
                           embedder=self.embedder_or_none(), clock=self.clock)


_runtime: Runtime | None = None
_lock = threading.Lock()


def get_runtime() -> Runtime:
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = Runtime(settings=get_settings())
        return _runtime


def set_runtime(runtime: Runtime | None) -> None:
    global _runtime
    with _lock:
        _runtime = runtime
