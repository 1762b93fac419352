"""Two stacks or test sessions starting their embedded Redis at the same moment, on the same
preferred port: each ends up with a server of its own, never a shared one and never a
failed start (a shared broker lets one session's worker take the other's tasks)."""

from __future__ import annotations

import multiprocessing
import socket
from pathlib import Path
from typing import Any

ROUNDS = 6


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_at(data_dir: Path, port: int, barrier: Any, answers: Any, done: Any) -> None:
    """In a process of its own, as a second session would: start, report who answers."""
    import redis

    from worker.local.embedded import EmbeddedRedis

    server = EmbeddedRedis(data_dir, preferred_port=port)
    barrier.wait()
    try:
        url = server.start()
        answering = int(redis.Redis.from_url(url).info("server")["process_id"])
        assert server._process is not None
        answers.put((url, answering, server._process.pid))
    except Exception as exc:
        answers.put(("failed", repr(exc), None))
    done.wait(30)
    server.stop()


def test_two_servers_started_at_once_on_one_port_each_get_their_own(tmp_path):
    context = multiprocessing.get_context("spawn")
    outcomes = []
    for number in range(ROUNDS):
        port = _free_port()
        barrier, answers, done = context.Barrier(2), context.Queue(), context.Event()
        starters = [context.Process(target=_start_at, args=(
            tmp_path / f"redis-{number}-{side}", port, barrier, answers, done))
            for side in (1, 2)]
        for starter in starters:
            starter.start()
        try:
            outcomes.append(sorted([answers.get(timeout=60), answers.get(timeout=60)]))
        finally:
            done.set()
            for starter in starters:
                starter.join(30)
    for first, second in outcomes:
        assert "failed" not in (first[0], second[0]), outcomes
        assert first[0] != second[0], outcomes  # two URLs, two servers
        assert first[1] == first[2] and second[1] == second[2], outcomes  # each its own
