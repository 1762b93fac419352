"""A write's vector is computed on its process's embedding thread while its transaction begins
(worker/writes/apply.py): with the local model only, never holding the scope's lock, and
with a thread of its own in every forked process. Real Postgres, the real local model."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import psycopg

from tests.helpers import Writer, notes, run_context, wait_until
from tests.openai_stub import OpenAIStub
from worker.embeddings import CachedEmbedder, OpenAIEmbedder
from worker.writes.attempt import Embedding, EmbeddingInFlight
from worker.writes.vectors import _embedding_thread, start_embedding

# The advisory locks a backend holds, as the int8 keys the write path takes them by.
_HELD_KEYS = """
SELECT pid, (classid::bigint << 32) | objid::bigint AS key
FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
  AND pid <> pg_backend_pid()
"""


class GatedModel:
    """The real local model, each call held at a gate until the test opens it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.entered = threading.Event()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        return list(self.inner.embed(texts))


def _local_model(embedder: Any) -> Any:
    return embedder.inner if isinstance(embedder, CachedEmbedder) else embedder


def _held(database_url: str) -> dict[int, set[int]]:
    held: dict[int, set[int]] = {}
    with psycopg.connect(database_url) as conn:
        for pid, key in conn.execute(_HELD_KEYS).fetchall():
            held.setdefault(pid, set()).add(int(key))
    return held


def _key(database_url: str, name: str) -> int:
    with psycopg.connect(database_url) as conn:
        return int(conn.execute("SELECT hashtextextended(%s, 0)", (name,)).fetchone()[0])


def test_transaction_begins_while_the_vector_is_computed(runtime, services, embedder):
    # The agent and its principals exist already: a run's first write registering them makes
    # a second new run wait for that transaction, whatever the embedding does.
    assert Writer(runtime.write_deps())(run_context("r0"), "User likes tea.")["disposition"] \
        == "written"
    model = GatedModel(_local_model(embedder))
    write = Writer(replace(runtime.write_deps(), embedder=model))
    results: list[dict[str, Any]] = []
    writer = threading.Thread(target=lambda: results.append(
        write(run_context("r1"), "User prefers window seats on long flights.")))
    writer.start()
    try:
        assert model.entered.wait(30)
        run_key = _key(services.database_url, "memory.run:r1")
        # The run's lock is taken while the model still computes; the scope's is not.
        holder = wait_until(lambda: next((pid for pid, keys in _held(services.database_url)
                                          .items() if run_key in keys), None), timeout=10)
        fence_key = _key(services.database_url, "memory.erasure-fence")
        assert _held(services.database_url)[holder] == {run_key, fence_key}
        # Meanwhile another run writes to the same scope, and is not held up by this one
        # (its vector already cached: this process's one embedding thread is at the gate).
        other_text = "User's team meets on Mondays."
        warm = CachedEmbedder(_local_model(embedder), 16)
        warm.embed([other_text])
        other = Writer(replace(runtime.write_deps(), embedder=warm))(
            run_context("r2"), other_text, type="Context")
        assert other["disposition"] == "written"
        assert not results, "the first write finished before its vector was computed"
    finally:
        model.gate.set()
        writer.join(30)
    [result] = results
    assert result["disposition"] == "written"
    [stored] = notes(services.database_url, "source_agent_run_id = 'r1'")
    [expected] = _local_model(embedder).embed(["User prefers window seats on long flights."])
    assert np.allclose(np.asarray(stored["embedding"].to_numpy()), expected, atol=1e-6)


def test_a_remote_endpoint_answers_before_the_transaction(runtime, services):
    with OpenAIStub() as stub:
        stub.delay_s = 1.0
        remote = OpenAIEmbedder("stub-embed", base_url=stub.base_url, api_key="k", timeout_s=5)
        write = Writer(replace(runtime.write_deps(), embedder=remote))
        results: list[dict[str, Any]] = []
        writer = threading.Thread(target=lambda: results.append(
            write(run_context("r1"), "User prefers aisle seats.")))
        writer.start()
        wait_until(lambda: stub.requests, timeout=10)
        run_key = _key(services.database_url, "memory.run:r1")
        # While the endpoint is slow to answer, no lock is held for the write.
        for _ in range(5):
            assert not any(run_key in keys for keys in _held(services.database_url).values())
            threading.Event().wait(0.1)
        writer.join(30)
    [result] = results
    assert result["disposition"] == "written"
    [stored] = notes(services.database_url)
    assert stored["embedding_model"] == "stub-embed"


def test_a_cached_vector_is_used_at_once(runtime, embedder):
    deps = runtime.write_deps()
    cached = CachedEmbedder(_local_model(embedder), 16)
    text = "User's invoices go to the finance mailbox."
    first = start_embedding(replace(deps, embedder=cached), text)
    assert isinstance(first, EmbeddingInFlight)
    vector = first.vector
    again = start_embedding(replace(deps, embedder=cached), text)
    assert isinstance(again, Embedding) and again.vector is vector
    assert first.model == again.model == cached.model_name and first.error is None


def _child_submits(answer: Any) -> None:
    answer.put(_embedding_thread().submit(lambda: "from the child's thread").result(timeout=10))


def test_a_forked_process_makes_its_own_thread():
    assert _embedding_thread().submit(lambda: 1).result(timeout=10) == 1  # the parent's
    context = multiprocessing.get_context("fork")
    answer = context.Queue()
    child = context.Process(target=_child_submits, args=(answer,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert answer.get(timeout=5) == "from the child's thread"
